"""The agent that runs inside a local sandbox (bwrap, subprocess).

It is started as ``python3 -I -S -c <loader> [CODE] FD [KEY=VALUE...]`` (see ``agent_argv``:
the code is compiled ahead of time by the same interpreter where possible) and uses the standard
library only, so any Python 3.8+ interpreter inside the sandbox can run it. FD is one end of an
``AF_UNIX``/``SOCK_SEQPACKET`` socket pair; the host holds the other end. The settings are
``workdir=PATH``, ``subreaper=1`` and the rlimits of commands (``as``, ``cpu``, ``fsize``,
``nofile``, ``nproc``, ``core``, each ``=N``). ``_agent.c`` is the same program in C, used where
a C compiler is available: it starts in well under a millisecond.

It imports only built-in and C modules (``posix``, not ``os``), so that it starts in a few
milliseconds.

Protocol: one message per packet.

host -> agent: NUL-terminated fields (the agent trusts the host)
    ``run ID TIMEOUT STDIN CWD ARGC ARGV... KEY=VALUE...`` with 2 or 3 file descriptors
    attached (stdin when STDIN is ``1``, stdout, stderr): fork, exec in a new session with the
    sandbox's rlimits and the given environment. TIMEOUT (seconds; empty for none) kills the
    command's process group at the deadline; CWD is relative to the work dir (empty: the work
    dir).
    ``kill ID``: kill the command's process group now.
    ``listen`` with one socket attached: open a TCP socket listening on the sandbox's own
    ``127.0.0.1`` (port chosen by the kernel) and send it back over that socket as ``ok`` with
    the descriptor, or ``error ERRNO``: the host then accepts the sandbox's loopback
    connections itself, with no relay process in between.
agent -> host (ASCII words: the host does not trust the sandbox, and parses numbers only)
    ``ready PID`` once, at start.
    ``exit ID STATUS TIMED_OUT DURATION CPU MAXRSS_KB``: the command ended; ``STATUS`` is the
    exit code, or ``-signal``; ``TIMED_OUT`` is 0 or 1.

The agent exits, killing every command it started, when the host end of the socket closes.
In a bwrap sandbox the agent is the pid namespace's init: it reaps orphans (children that
detach with ``setsid``), programs cannot signal it, and when it dies the kernel kills every
process of the namespace. Without a pid namespace (the subprocess backend) it becomes a child
subreaper and kills its descendants itself at exit.
"""

import _signal as signal
import _socket
import posix as os
import resource
import select
import sys
import time

_LIMITS: list[tuple[int, int]] = []  # (resource, value): the commands' rlimits
_RLIMITS = {
    "as": resource.RLIMIT_AS,
    "cpu": resource.RLIMIT_CPU,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}


class _Job:
    __slots__ = ("deadline", "id", "pid", "start", "timed_out")

    def __init__(self, job_id: int, pid: int, start: float, deadline: float | None) -> None:
        self.id = job_id
        self.pid = pid
        self.start = start
        self.deadline = deadline
        self.timed_out = False


def _child(run: list, fds: list, workdir: str) -> None:  # type: ignore[type-arg]
    """In the forked child: set up stdio, limits and cwd, then exec. Never returns.
    ``run`` is the message's fields after the op: ID TIMEOUT STDIN CWD ARGC ARGV... ENV..."""
    code = 127
    try:
        os.setsid()
        _prctl(PR_SET_CHILD_SUBREAPER, 1)  # kept across the exec: see _kill
        for sig in (signal.SIGPIPE, signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        stdio = list(fds)
        if run[2] != b"1":
            stdio.insert(0, os.open("/dev/null", os.O_RDONLY))
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)
        for name, value in _LIMITS:
            # never above what this process may have (a sandbox inside a sandbox): the
            # tighter limit stands, as in the C agent
            hard = resource.getrlimit(name)[1]
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(name, (value, value))
        cwd = run[3].decode("utf-8", "surrogateescape") or "."
        if not cwd.startswith("/"):
            cwd = workdir + "/" + cwd
        try:
            os.chdir(cwd)
        except OSError as e:
            code = 1
            raise OSError(f"cannot change directory to {cwd}: {e.strerror}") from None
        argc = int(run[4])
        argv = run[5 : 5 + argc]
        env = dict(item.partition(b"=")[::2] for item in run[5 + argc :])
        # the PATH search by hand: os.execvpe imports `warnings`, a millisecond per command
        name = argv[0]
        if b"/" in name:
            dirs = [b""]
        else:
            dirs = env.get(b"PATH", b"/usr/bin:/bin").split(b":")
        denied = False
        for directory in dirs:
            try:
                os.execve(directory + b"/" + name if directory else name, argv, env)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except PermissionError:
                denied = True
            except OSError as e:  # E2BIG, ENOEXEC, ...: say so and stop searching
                raise OSError(f"{name.decode('utf-8', 'replace')}: {e.strerror}") from None
        name_text = name.decode("utf-8", "replace")
        if denied:
            code = 126
            raise OSError(f"{name_text}: permission denied")
        raise OSError(f"{name_text}: command not found")
    except BaseException as e:  # report anything, then exit
        try:
            os.write(2, f"sandbox: {e}\n".encode())
        finally:
            os._exit(code)


def _kill(pid: int) -> None:
    """Kill a command and everything it started. Its first process is a child subreaper (set
    before its exec), so descendants that detach (double fork, setsid) stay in its tree while
    it lives: stop it, kill its tree until nothing is left, then it and its process group."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass
    # until every descendant is dead: a killed process dies only once it is scheduled, which
    # on a loaded machine can take longer than any fixed number of rounds (bounded by time)
    # A round that finds nothing alive is confirmed by a second one: /proc is read one process
    # at a time, so a child that dies while its own child is re-parented to ``pid`` can hide
    # that grandchild from one round (read under its dying parent after it moved)
    deadline = time.monotonic() + 10.0
    quiet = 0
    while True:
        left = [p for p in _descendants(pid) if not _is_zombie(p)]
        for child in left:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
        quiet = 0 if left else quiet + 1
        if quiet >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.0005)
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _is_zombie(pid: int) -> bool:
    """Dead (or gone) already: a zombie is reaped by its parent, not killed."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state in (b"Z", b"X", b"")


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` through ``_ctypes`` (``import ctypes`` costs milliseconds)."""
    try:
        import _ctypes

        function = _ctypes.dlsym(_ctypes.dlopen(None, 2), "prctl")  # type: ignore[arg-type]
        result: int = _ctypes.call_function(function, (option, value, 0, 0, 0))
    except (ImportError, OSError, AttributeError):
        return False
    return result == 0


PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def _descendants(pid: int) -> list[int]:
    """Every descendant of ``pid`` (Linux ``/proc/PID/task/*/children``), parents first."""
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def _recv(sock: _socket.socket) -> tuple[bytes, list[int]]:
    """One packet and the file descriptors that came with it."""
    data, ancillary, _flags, _addr = sock.recvmsg(1 << 22, _socket.CMSG_SPACE(64 * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds += [int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, usable, 4)]
    return data, fds


def _listen(reply_fd: int) -> None:
    """The ``listen`` message: a listening socket on the sandbox's loopback, sent back."""
    reply = _socket.socket(fileno=reply_fd)
    try:
        try:
            lsock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        except OSError as e:
            reply.send(b"error %d" % (e.errno or 0))
            return
        try:
            lsock.bind(("127.0.0.1", 0))
            lsock.listen(64)
            fd = lsock.fileno().to_bytes(4, sys.byteorder)
            reply.sendmsg([b"ok"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fd)])
        except OSError as e:
            reply.send(b"error %d" % (e.errno or 0))
        finally:
            lsock.close()
    except OSError:
        pass
    finally:
        reply.detach()  # closed by the caller


def _handle(
    data: bytes,
    fds: "list[int]",
    workdir: str,
    jobs: "dict[int, _Job]",
    by_id: "dict[int, _Job]",
) -> "tuple[object, ...] | None":
    """One message of the host: ``run`` a command (its fds passed along) or ``kill`` one. The
    words to send back at once, if any (a command that could not be started)."""
    fields = data.split(b"\0")[:-1]
    op = fields[0] if fields else b""
    if op == b"run" and len(fields) >= 7:
        run = fields[1:]
        job_id = int(run[0])
        start = time.monotonic()
        try:
            pid = os.fork()
        except OSError as e:  # the process limit is full (a fork bomb): the command fails
            try:
                os.write(
                    fds[-1],
                    f"sandbox: cannot start the command (fork failed: {e.strerror})\n".encode(),
                )
            except OSError:
                pass
            for fd in fds:
                os.close(fd)
            return ("exit", job_id, 126, 0, 0.0, 0.0, 0)
        if pid == 0:
            _child(run, fds, workdir)
        for fd in fds:
            os.close(fd)
        timeout = float(run[1]) if run[1] else None
        job = _Job(job_id, pid, start, start + timeout if timeout is not None else None)
        jobs[pid] = job
        by_id[job.id] = job
    else:
        if op == b"listen" and len(fds) == 1:
            _listen(fds[0])
        for fd in fds:
            os.close(fd)
        target = by_id.get(int(fields[1])) if op == b"kill" and len(fields) > 1 else None
        if target is not None:
            _kill(target.pid)
    return None


def main() -> None:
    sock = _socket.socket(fileno=int(sys.argv[1]))
    settings = dict(arg.partition("=")[::2] for arg in sys.argv[2:])
    workdir = settings.get("workdir", ".")
    for name, value in settings.items():
        if name in _RLIMITS:
            _LIMITS.append((_RLIMITS[name], int(value)))
    # without a pid namespace (the subprocess backend), adopt the orphans of commands (children
    # that detach with setsid) so that they can be found and killed at shutdown
    subreaper = settings.get("subreaper") == "1" and _prctl(PR_SET_CHILD_SUBREAPER, 1)
    # commands run as the same uid: make the agent impossible to ptrace or to read/write
    # through /proc/PID/mem, so that a program cannot forge the results the agent reports
    _prctl(PR_SET_DUMPABLE, 0)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    jobs: dict[int, _Job] = {}  # by pid
    by_id: dict[int, _Job] = {}

    def send(*words: object) -> None:
        try:
            sock.send(" ".join(str(w) for w in words).encode())
        except OSError:
            shutdown()

    def shutdown() -> None:
        for job in jobs.values():
            _kill(job.pid)
        if subreaper:  # kill every descendant and wait until they are gone (bounded)
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                left = _descendants(os.getpid())
                if not left:
                    break
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    os.wait()
                except ChildProcessError:
                    break
        os._exit(0)

    def reap() -> None:
        # background processes a command left behind keep running until the sandbox stops
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            job = jobs.pop(pid, None)
            if job is None:
                continue  # an orphan adopted as subreaper
            by_id.pop(job.id, None)
            send(
                "exit",
                job.id,
                os.waitstatus_to_exitcode(status),
                int(job.timed_out),
                round(time.monotonic() - job.start, 6),
                round(usage.ru_utime + usage.ru_stime, 6),
                usage.ru_maxrss,
            )

    # poll, not select: the inherited socket's number can be above FD_SETSIZE
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    send("ready", os.getpid())
    while True:
        now = time.monotonic()
        deadlines = [
            j.deadline for j in jobs.values() if j.deadline is not None and not j.timed_out
        ]
        wait = int(max(0.0, min(deadlines) - now) * 1000) + 1 if deadlines else None
        try:
            readable = [fd for fd, _ in poller.poll(wait)]
        except InterruptedError:
            readable = []
        if wake_r in readable:
            try:
                while os.read(wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
        if sock.fileno() in readable:
            try:
                data, fds = _recv(sock)
            except OSError:
                data, fds = b"", []
            if not data:
                shutdown()
            failed = _handle(data, fds, workdir, jobs, by_id)
            if failed is not None:
                send(*failed)
        now = time.monotonic()
        for job in jobs.values():
            if job.deadline is not None and not job.timed_out and now >= job.deadline:
                job.timed_out = True
                _kill(job.pid)
        reap()


if __name__ == "__main__":
    main()
