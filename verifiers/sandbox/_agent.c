/* The sandbox agent, native build: the same program and protocol as _agent.py (see that file
 * for the protocol). A C program starts in well under a millisecond where the Python agent
 * needs an interpreter start-up, which is most of a cold sandbox start.
 *
 * Compiled on first use by verifiers/sandbox/_native.py with the system C compiler and cached
 * per user; where no compiler is available the Python agent is used instead.
 *
 *   vf-agent FD [workdir=PATH] [subreaper=1] [as=N] [cpu=N] [fsize=N] [nofile=N] [nproc=N]
 *            [core=N]
 *
 * The same binary also launches local sandboxes (in place of a shell and setpriv, which cost
 * milliseconds more per start):
 *
 *   vf-agent --launch [--join FILE]... [--as-user UID GID] -- PROGRAM [ARG...]
 *
 * writes "0" to each FILE (a cgroup v1 "tasks" file: the launcher moves itself into that
 * group, which unlike moving another process does not wait for an RCU grace period), then
 * drops every group and sets the gid and uid when asked, then execs PROGRAM. Any failure
 * exits 126 saying why; bad usage exits 2.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 64
#define MAX_MSG (1 << 22)

struct job {
    pid_t pid;
    long id;
    double start;
    double deadline; /* < 0: none */
    int timed_out;
};

static struct job *jobs;
static size_t njobs, capjobs;
static int sock = -1;
static const char *workdir = ".";
static int subreaper;
static struct {
    int resource;
    rlim_t value;
} limits[8];
static int nlimits;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void shutdown_agent(void);

static void send_words(const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf) return;
    if (send(sock, buf, (size_t)n, MSG_NOSIGNAL) < 0) shutdown_agent();
}

/* Every descendant of process root (Linux /proc/PID/task/TID/children), appended to *out. */
static size_t descendants(pid_t root, pid_t **out) {
    size_t n = 0, cap = 64, next = 0;
    pid_t *found = malloc(cap * sizeof *found);
    pid_t current = root;
    if (found == NULL) return 0;
    for (;;) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", (int)current);
        DIR *dir = opendir(path);
        if (dir != NULL) {
            struct dirent *task;
            while ((task = readdir(dir)) != NULL) {
                if (task->d_name[0] == '.') continue;
                char children[320];
                snprintf(children, sizeof children, "/proc/%d/task/%s/children", (int)current,
                         task->d_name);
                FILE *f = fopen(children, "re");
                if (f == NULL) continue;
                int child;
                while (fscanf(f, "%d", &child) == 1) {
                    if (n == cap) {
                        pid_t *grown = realloc(found, (cap *= 2) * sizeof *found);
                        if (grown == NULL) break;
                        found = grown;
                    }
                    found[n++] = child;
                }
                fclose(f);
            }
            closedir(dir);
        }
        if (next == n) break;
        current = found[next++];
    }
    *out = found;
    return n;
}

/* Kill a command and everything it started. Its first process is a child subreaper (set
 * before its exec), so descendants that detach (double fork, setsid) are re-parented to it and
 * stay in its tree while it lives: stop it, kill its tree until nothing is left (a process
 * forking meanwhile is found on the next round), then kill it and its process group. */
static int is_zombie(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1; /* gone */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = '\0';
    char *end = strrchr(buf, ')'); /* the state follows the command name's ")" */
    return end == NULL || end[1] == '\0' || end[2] == 'Z' || end[2] == 'X';
}

static void kill_job(pid_t pid) {
    kill(pid, SIGSTOP);
    /* until every descendant is dead: a SIGKILLed process dies only once it is scheduled,
     * which on a loaded machine can take longer than any fixed number of rounds, so the
     * rounds are bounded by time and pause between them to let the killed processes run */
    double deadline = now() + 10.0;
    /* a round that finds nothing alive is confirmed by a second one: /proc is read one
     * process at a time, so a child dying while its own child moves to pid can hide it */
    int quiet = 0;
    for (;;) {
        pid_t *left = NULL;
        size_t n = descendants(pid, &left), alive = 0;
        for (size_t i = 0; i < n; i++) {
            if (is_zombie(left[i])) continue; /* dead, reaped when the command is */
            kill(left[i], SIGKILL);
            alive++;
        }
        free(left);
        quiet = alive == 0 ? quiet + 1 : 0;
        if (quiet >= 2 || now() > deadline) break;
        struct timespec pause = {0, 500000}; /* 0.5 ms */
        nanosleep(&pause, NULL);
    }
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

static void shutdown_agent(void) {
    for (size_t i = 0; i < njobs; i++) kill_job(jobs[i].pid);
    if (subreaper) { /* kill every descendant and wait until they are gone (bounded) */
        double deadline = now() + 5.0;
        while (now() < deadline) {
            pid_t *left = NULL;
            size_t n = descendants(getpid(), &left);
            for (size_t i = 0; i < n; i++) kill(left[i], SIGKILL);
            free(left);
            if (n == 0 || wait(NULL) < 0) break;
        }
    }
    _exit(0);
}

static void report(int fd, const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) {
        ssize_t ignored = write(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
        (void)ignored;
    }
}

struct command {
    char **argv, **envp;
    const char *cwd, *path_var;
    int *fds, nfds, has_stdin;
};

static void child(char **argv, char **envp, const char *cwd, const char *path_var, int *fds,
                  int nfds, int has_stdin);

/* The entry point of a command's process: it runs on its own stack while sharing the agent's
 * memory (see start_command), so it only reads the command and touches its own stack and
 * descriptors; child() ends in execve or _exit. */
static int command_main(void *arg) {
    struct command *c = arg;
    child(c->argv, c->envp, c->cwd, c->path_var, c->fds, c->nfds, c->has_stdin);
    return 127;
}

/* Start a command's process like posix_spawn does: clone(CLONE_VM | CLONE_VFORK) on a
 * separate stack, so there is no copy of the agent's page tables and no copy-on-write faults
 * before the exec (a fork costs about half a millisecond more per command). The agent waits
 * until the child has exec'd or exited, then the stack is free for the next command. */
static pid_t start_command(struct command *c) {
    static char *stack;
    const size_t size = 256 * 1024;
    if (stack == NULL) {
        stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                     -1, 0);
        if (stack == MAP_FAILED) {
            stack = NULL;
            return -1;
        }
    }
    return clone(command_main, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
}

/* In the command's process: stdio, limits, cwd, then exec. Never returns. */
static void child(char **argv, char **envp, const char *cwd, const char *path_var, int *fds,
                  int nfds, int has_stdin) {
    int stdio[3], k = 0;
    setsid();
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); /* kept across the exec: see kill_job */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (!has_stdin) stdio[k++] = open("/dev/null", O_RDONLY);
    for (int i = 0; i < nfds && k < 3; i++) stdio[k++] = fds[i];
    if (k != 3) _exit(127);
    for (int t = 0; t < 3; t++)
        if (stdio[t] < 3) stdio[t] = fcntl(stdio[t], F_DUPFD, 3);
    for (int t = 0; t < 3; t++) dup2(stdio[t], t);
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
        for (int fd = 3; fd < 65536; fd++) close(fd);
    for (int i = 0; i < nlimits; i++) {
        struct rlimit rl = {limits[i].value, limits[i].value};
        setrlimit(limits[i].resource, &rl);
    }
    char dir[8192];
    if (cwd == NULL || cwd[0] == '\0') cwd = ".";
    if (cwd[0] == '/')
        snprintf(dir, sizeof dir, "%s", cwd);
    else
        snprintf(dir, sizeof dir, "%s/%s", workdir, cwd);
    if (chdir(dir) != 0) {
        report(2, "sandbox: cannot change directory to %s: %s\n", dir, strerror(errno));
        _exit(1);
    }
    const char *name = argv[0];
    if (strchr(name, '/') != NULL) {
        execve(name, argv, envp);
        if (errno != ENOENT && errno != ENOTDIR) {
            report(2, "sandbox: %s: %s\n", name, errno == EACCES ? "permission denied"
                                                                  : strerror(errno));
            _exit(errno == EACCES ? 126 : 127);
        }
        report(2, "sandbox: %s: command not found\n", name);
        _exit(127);
    }
    /* the PATH search by hand, over the command's own PATH */
    const char *p = path_var != NULL ? path_var : "/usr/bin:/bin";
    int denied = 0;
    for (;;) {
        const char *end = strchr(p, ':');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        char full[8192];
        if (len == 0)
            snprintf(full, sizeof full, "%s", name);
        else
            snprintf(full, sizeof full, "%.*s/%s", (int)len, p, name);
        execve(full, argv, envp);
        if (errno == EACCES)
            denied = 1;
        else if (errno != ENOENT && errno != ENOTDIR) {
            report(2, "sandbox: %s: %s\n", name, strerror(errno));
            _exit(127);
        }
        if (end == NULL) break;
        p = end + 1;
    }
    if (denied) {
        report(2, "sandbox: %s: permission denied\n", name);
        _exit(126);
    }
    report(2, "sandbox: %s: command not found\n", name);
    _exit(127);
}

static void close_all(int *fds, int nfds) {
    for (int i = 0; i < nfds; i++) close(fds[i]);
}

/* One NUL-terminated field of the message at *pos, or NULL when the message ends. */
static char *field(char *buf, size_t len, size_t *pos) {
    if (*pos >= len) return NULL;
    char *start = buf + *pos;
    char *end = memchr(start, '\0', len - *pos);
    if (end == NULL) return NULL;
    *pos = (size_t)(end - buf) + 1;
    return start;
}

static void handle_run(char *buf, size_t len, size_t pos, int *fds, int nfds) {
    char *id_s = field(buf, len, &pos), *timeout_s = field(buf, len, &pos);
    char *stdin_s = field(buf, len, &pos), *cwd = field(buf, len, &pos);
    char *argc_s = field(buf, len, &pos);
    if (argc_s == NULL) {
        close_all(fds, nfds);
        return;
    }
    long id = strtol(id_s, NULL, 10);
    long argc = strtol(argc_s, NULL, 10);
    int has_stdin = stdin_s[0] == '1';
    if (argc < 1 || nfds != (has_stdin ? 3 : 2)) {
        if (nfds > 0) report(fds[nfds - 1], "sandbox: malformed command\n");
        close_all(fds, nfds);
        send_words("exit %ld 126 0 0.0 0.0 0", id);
        return;
    }
    /* argv, then the environment (KEY=VALUE) up to the end of the message */
    size_t count = 0, cap = (size_t)argc + 16;
    char **vec = malloc(cap * sizeof *vec);
    char *item, *path_var = NULL;
    if (vec == NULL) {
        close_all(fds, nfds);
        send_words("exit %ld 126 0 0.0 0.0 0", id);
        return;
    }
    while ((item = field(buf, len, &pos)) != NULL) {
        if (count + 3 > cap) { /* room for this item, argv's terminator and the last NULL */
            char **grown = realloc(vec, (cap *= 2) * sizeof *vec);
            if (grown == NULL) break;
            vec = grown;
        }
        if ((long)count >= argc && strncmp(item, "PATH=", 5) == 0) path_var = item + 5;
        vec[count++] = item;
        if ((long)count == argc) vec[count++] = NULL; /* argv's terminator */
    }
    vec[count] = NULL;
    if ((long)count <= argc) { /* the message ended inside argv */
        report(fds[nfds - 1], "sandbox: malformed command\n");
        close_all(fds, nfds);
        free(vec);
        send_words("exit %ld 126 0 0.0 0.0 0", id);
        return;
    }
    double start = now();
    struct command command = {vec, vec + argc + 1, cwd, path_var, fds, nfds, has_stdin};
    pid_t pid = start_command(&command);
    if (pid < 0) { /* the process limit is full (a fork bomb): the command fails */
        report(fds[nfds - 1], "sandbox: cannot start the command (fork failed: %s)\n",
               strerror(errno));
        close_all(fds, nfds);
        free(vec);
        send_words("exit %ld 126 0 0.0 0.0 0", id);
        return;
    }
    close_all(fds, nfds);
    free(vec);
    if (njobs == capjobs) {
        size_t grown_cap = capjobs ? capjobs * 2 : 16;
        struct job *grown = realloc(jobs, grown_cap * sizeof *jobs);
        if (grown == NULL) {
            kill_job(pid);
            return;
        }
        jobs = grown;
        capjobs = grown_cap;
    }
    double deadline = timeout_s[0] != '\0' ? start + strtod(timeout_s, NULL) : -1.0;
    jobs[njobs++] = (struct job){pid, id, start, deadline, 0};
}

/* "listen" with one socket attached: open a TCP socket listening on the sandbox's own
 * 127.0.0.1 (a port the kernel picks) and send it back over that socket, so that the host
 * accepts the sandbox's connections itself (no relay process); "error ERRNO" if it cannot. */
static void handle_listen(int reply) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 64) != 0) {
        char words[32];
        int n = snprintf(words, sizeof words, "error %d", errno);
        if (lfd >= 0) close(lfd);
        send(reply, words, (size_t)n, MSG_NOSIGNAL);
        return;
    }
    union {
        char space[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    char ok[] = "ok";
    struct iovec iov = {ok, 2};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &lfd, sizeof(int));
    sendmsg(reply, &msg, MSG_NOSIGNAL);
    close(lfd);
}

static void handle(char *buf, size_t len, int *fds, int nfds) {
    size_t pos = 0;
    char *op = field(buf, len, &pos);
    if (op != NULL && strcmp(op, "run") == 0) {
        handle_run(buf, len, pos, fds, nfds);
        return;
    }
    if (op != NULL && strcmp(op, "listen") == 0 && nfds == 1) handle_listen(fds[0]);
    close_all(fds, nfds);
    if (op != NULL && strcmp(op, "kill") == 0) {
        char *id_s = field(buf, len, &pos);
        long id = id_s != NULL ? strtol(id_s, NULL, 10) : -1;
        for (size_t i = 0; i < njobs; i++)
            if (jobs[i].id == id) kill_job(jobs[i].pid);
    }
}

static void reap(void) {
    /* background processes a command left behind keep running until the sandbox stops */
    for (;;) {
        int status;
        struct rusage ru;
        pid_t pid = wait4(-1, &status, WNOHANG, &ru);
        if (pid <= 0) return;
        for (size_t i = 0; i < njobs; i++) {
            if (jobs[i].pid != pid) continue; /* else: an orphan adopted as subreaper */
            struct job job = jobs[i];
            jobs[i] = jobs[--njobs];
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
            double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
            send_words("exit %ld %d %d %.6f %.6f %ld", job.id, code, job.timed_out,
                       now() - job.start, cpu, ru.ru_maxrss);
            break;
        }
    }
}

static int rlimit_named(const char *name) {
    static const struct {
        const char *name;
        int resource;
    } table[] = {{"as", RLIMIT_AS},         {"cpu", RLIMIT_CPU},     {"fsize", RLIMIT_FSIZE},
                 {"nofile", RLIMIT_NOFILE}, {"nproc", RLIMIT_NPROC}, {"core", RLIMIT_CORE}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0) return table[i].resource;
    return -1;
}

/* vf-agent --launch ...: see the top of this file. Returns (an exit status) only on failure. */
static int launch(int argc, char **argv) {
    int i = 2;
    for (; i < argc && strcmp(argv[i], "--join") == 0; i += 2) {
        if (i + 1 >= argc) break;
        int fd = open(argv[i + 1], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1) {
            fprintf(stderr, "vf-agent: cannot join the cgroup %s: %s\n", argv[i + 1],
                    strerror(errno));
            return 126;
        }
        close(fd);
    }
    if (i + 2 < argc && strcmp(argv[i], "--as-user") == 0) {
        char *end_uid, *end_gid;
        unsigned long uid = strtoul(argv[i + 1], &end_uid, 10);
        unsigned long gid = strtoul(argv[i + 2], &end_gid, 10);
        if (*end_uid != '\0' || *end_gid != '\0' || !argv[i + 1][0] || !argv[i + 2][0]) {
            fprintf(stderr, "vf-agent: --as-user takes a numeric uid and gid\n");
            return 2;
        }
        if (setgroups(0, NULL) != 0 || setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0 ||
            setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) {
            fprintf(stderr, "vf-agent: cannot switch to uid %lu gid %lu: %s\n", uid, gid,
                    strerror(errno));
            return 126;
        }
        i += 3;
    }
    if (i + 1 >= argc || strcmp(argv[i], "--") != 0) {
        fprintf(stderr, "usage: vf-agent --launch [--join FILE]... [--as-user UID GID] -- "
                        "PROGRAM [ARG...]\n");
        return 2;
    }
    execv(argv[i + 1], argv + i + 1);
    fprintf(stderr, "vf-agent: cannot run %s: %s\n", argv[i + 1], strerror(errno));
    return 126;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "--launch") == 0) return launch(argc, argv);
    if (argc < 2) {
        fprintf(stderr, "usage: vf-agent FD [KEY=VALUE...]\n");
        return 2;
    }
    sock = atoi(argv[1]);
    for (int i = 2; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq == NULL) continue;
        *eq = '\0';
        const char *key = argv[i], *value = eq + 1;
        if (strcmp(key, "workdir") == 0)
            workdir = value;
        else if (strcmp(key, "subreaper") == 0)
            subreaper = strcmp(value, "1") == 0;
        else if (rlimit_named(key) >= 0 && nlimits < 8) {
            limits[nlimits].resource = rlimit_named(key);
            limits[nlimits++].value = (rlim_t)strtoull(value, NULL, 10);
        }
    }
    /* without a pid namespace (the subprocess backend), adopt the orphans of commands
     * (children that detach with setsid) so that they can be found and killed at shutdown */
    if (subreaper) subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
    /* commands run as the same uid: make the agent impossible to ptrace or to read/write
     * through /proc/PID/mem, so that a program cannot forge the results the agent reports */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN);
    char *buf = malloc(MAX_MSG);
    if (buf == NULL || sfd < 0) return 1;
    send_words("ready %d", (int)getpid());
    for (;;) {
        double t = now(), next = -1.0;
        for (size_t i = 0; i < njobs; i++)
            if (jobs[i].deadline >= 0 && !jobs[i].timed_out &&
                (next < 0 || jobs[i].deadline < next))
                next = jobs[i].deadline;
        int wait_ms = next < 0 ? -1 : (int)((next > t ? next - t : 0.0) * 1000) + 1;
        struct pollfd pfd[2] = {{sock, POLLIN, 0}, {sfd, POLLIN, 0}};
        int ready = poll(pfd, 2, wait_ms);
        if (ready < 0 && errno != EINTR) shutdown_agent();
        if (ready > 0 && pfd[1].revents) {
            struct signalfd_siginfo info;
            while (read(sfd, &info, sizeof info) == (ssize_t)sizeof info) {
            }
        }
        if (ready > 0 && pfd[0].revents) {
            union {
                char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
                struct cmsghdr align;
            } control;
            struct iovec iov = {buf, MAX_MSG - 1};
            struct msghdr msg = {0};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.space;
            msg.msg_controllen = sizeof control.space;
            ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
            if (n <= 0) shutdown_agent();
            int fds[MAX_FDS], nfds = 0;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
                size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count && nfds < MAX_FDS; i++)
                    memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            }
            buf[n] = '\0';
            if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
                close_all(fds, nfds);
            else
                handle(buf, (size_t)n, fds, nfds);
        }
        t = now();
        for (size_t i = 0; i < njobs; i++)
            if (jobs[i].deadline >= 0 && !jobs[i].timed_out && t >= jobs[i].deadline) {
                jobs[i].timed_out = 1;
                kill_job(jobs[i].pid);
            }
        reap();
    }
}
