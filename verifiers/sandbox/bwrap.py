"""The ``bwrap`` backend: bubblewrap namespaces, the default on Linux.

Each sandbox is one ``bwrap`` process tree: every namespace unshared (user, pid, net, ipc, uts,
mount, cgroup; the network is shared only when asked for), uid/gid 1000 inside, a read-only
``/usr`` (plus the ``/bin``, ``/lib``, ``/lib64`` links and the dynamic linker cache), a private
``/proc`` and ``/dev``, size-limited tmpfs for the work dir (``/home/user``) and ``/tmp``, a
cleared environment. Nothing of the host's home, project checkout or ``/etc`` is visible. The
work dir lives in the sandbox's own tmpfs, so it disappears with the sandbox: there is no host
directory to leak.

Commands get rlimits (address space, CPU time, file size, open files, processes); the sandbox
gets a pids and a memory cgroup where one is writable. When run as root the sandbox runs as
an unprivileged host uid (``nobody``), which also makes the process rlimit effective.

The agent runs as the pid namespace's init (``--as-pid-1``), so programs cannot kill it.
Teardown: ``stop`` SIGKILLs it, which makes the kernel kill every process in the pid namespace,
detached ones included; ``--die-with-parent`` does the same when this Python process dies, even
by SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verifiers.errors import SandboxError
from verifiers.sandbox._cgroup import SandboxCgroup
from verifiers.sandbox._local import _LIVE, AgentSandbox
from verifiers.sandbox.base import WORKDIR, SandboxLimits

__all__ = ["BwrapSandbox", "bwrap_available", "sandbox_host_uid"]

NOBODY = 65534
_AGENT_INSIDE = "/.vf-agent"
_NETWORK_FILES = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/gai.conf",
)
_SLIRP_RESOLV = "nameserver 10.0.2.3\n"  # slirp4netns's DNS forwarder
_BASE_FILES = ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime")
# who the sandbox's user is, for programs that look it up (whoami, git, pip --user)
_IDENTITY_FILES = {
    "/etc/passwd": f"root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:{WORKDIR}:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "/etc/group": "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n",
}


def sandbox_host_uid() -> int:
    """The host uid sandbox processes run as when this process is not root: its own. (As root,
    each live sandbox gets its own uid from :func:`sandbox_uid_range`: ``sandbox.host_uid``.)"""
    return NOBODY if os.geteuid() == 0 else os.geteuid()


_DEFAULT_UID_RANGE = "600000-665535"
_uids_in_use: dict[int, int] = {}  # uid -> the fd holding its lock
_UID_LOCK_DIR = "/run/verifiers/sandbox-uids"


def sandbox_uid_range() -> range:
    """The host uids (and gids) sandboxes of a root process run as, one per live sandbox, so
    that no per-user kernel quota (inotify instances, key rings, message queues, user
    namespaces, processes) is shared between sandboxes or with host users:
    ``$VF_SANDBOX_UID_RANGE`` (``FIRST-LAST``; default 600000-665535). Host paths bound into a
    sandbox must be readable by any of them."""
    text = os.environ.get("VF_SANDBOX_UID_RANGE", _DEFAULT_UID_RANGE)
    first, sep, last = text.partition("-")
    try:
        lo, hi = int(first), int(last)
    except ValueError:
        lo = hi = -1
    if not sep or not 0 < lo <= hi < 2**31 - 1:
        raise SandboxError(
            f"VF_SANDBOX_UID_RANGE={text!r}: give FIRST-LAST, unused host uids (e.g. "
            f"{_DEFAULT_UID_RANGE})"
        )
    return range(lo, hi + 1)


def _uid_lock_dir() -> str:
    """Where the uid locks live: a root-only directory (``$VF_SANDBOX_UID_LOCK_DIR``, default
    /run/verifiers/sandbox-uids), checked not to be a link or open to others."""
    path = os.environ.get("VF_SANDBOX_UID_LOCK_DIR", _UID_LOCK_DIR)
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise SandboxError(
            f"{path} (the sandbox uid locks) must be a directory owned by uid {os.geteuid()} "
            "with mode 0700; remove it or set VF_SANDBOX_UID_LOCK_DIR to another one"
        )
    return path


def _take_uid() -> int:
    """A uid of the range that no live sandbox uses, in this process or any other: each uid
    is held by an exclusive ``flock`` on its file in :func:`_uid_lock_dir` for as long as its
    sandbox lives (the kernel drops it when the process dies, however it dies)."""
    import fcntl

    uids = sandbox_uid_range()
    directory = _uid_lock_dir()
    start = secrets.randbelow(len(uids))
    for i in range(len(uids)):
        uid = uids[(start + i) % len(uids)]
        if uid in _uids_in_use:
            continue
        fd = os.open(f"{directory}/{uid}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process's sandbox has it
            os.close(fd)
            continue
        _uids_in_use[uid] = fd
        return uid
    raise SandboxError(
        f"every uid of VF_SANDBOX_UID_RANGE ({uids.start}-{uids.stop - 1}) is in use by a live "
        "sandbox; give a wider range or run fewer sandboxes at once"
    )


def _release_uid_lock(uid: int) -> None:
    fd = _uids_in_use.pop(uid, None)
    if fd is not None:
        os.close(fd)  # drops the flock


def bwrap_available() -> bool:
    return sys.platform.startswith("linux") and shutil.which("bwrap") is not None


def _sandbox_python() -> tuple[str, list[str]]:
    """A python3 for the agent, and the host paths to bind read-only for it.

    The system interpreter under ``/usr`` needs nothing extra; otherwise this interpreter's
    installation prefix (only that directory) is bound at the same path.
    """
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK) and candidate.startswith("/usr/"):
            return candidate, []
    prefix = os.path.realpath(sys.base_prefix)
    exe = os.path.join(prefix, "bin", "python3")
    if not os.access(exe, os.X_OK):
        raise SandboxError(
            "no python3 for the sandbox: install the system python3 (apt-get install python3)"
        )
    return exe, [prefix]


class BwrapSandbox(AgentSandbox):
    """A sandbox made with bubblewrap (Linux). ``ro_binds`` maps extra host paths (read-only)
    into the sandbox: ``{"/host/wheels": "/wheels"}``. ``nested=True``: programs inside may
    start bwrap sandboxes of their own (user namespaces are not disabled, and the seccomp
    filter lets bwrap's namespace and mount calls through; see ``_seccomp`` and
    docs/security.md); the sandbox's own limits are unchanged."""

    backend = "bwrap"
    isolated = True

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        network: bool = False,
        ro_binds: dict[str, str] | None = None,
        bwrap: str | None = None,
        agent: str = "auto",
        host_network: bool = False,
        nested: bool = False,
    ) -> None:
        super().__init__(limits, network=network, agent=agent)
        self.ro_binds = dict(ro_binds or {})
        self.nested = bool(nested)
        # network=True: the sandbox's own network namespace behind user-mode networking
        # (slirp4netns): the outside is reachable, the host's loopback services are not.
        # host_network=True shares the host's network instead (an explicit opt-in).
        self.host_network = bool(network and host_network)
        self._slirp: subprocess.Popen[bytes] | None = None
        if network and not host_network and shutil.which("slirp4netns") is None:
            raise SandboxError(
                "network=True needs slirp4netns for the sandbox's own network (apt-get install "
                "slirp4netns), or host_network=True to share the host's network, loopback "
                "services included"
            )
        self._bwrap = bwrap
        self._cgroup: SandboxCgroup | None = None
        self._cgroup_prime: asyncio.Future[None] | None = None
        self._cgroup_setup: asyncio.Future[None] | None = None
        self._info_fd: int | None = None
        self.host_uid: int | None = None if os.geteuid() == 0 else os.geteuid()

    def _workdir(self) -> str:
        return WORKDIR

    def _launch(self, agent_fd: int, config: dict[str, Any]) -> list[str]:
        bwrap = self._bwrap or _find_bwrap()
        python, python_binds = _sandbox_python()
        # bwrap reports the agent's pid on the info pipe as soon as it has cloned it
        self._info_fd, info_w = os.pipe2(os.O_CLOEXEC)
        self._launch_fds.append(info_w)
        args = ["--info-fd", str(info_w), *self._bwrap_args(python_binds)]
        args += ["--", *self._agent_command(python, agent_fd, config, _AGENT_INSIDE)]
        joins = self._make_cgroups()
        root = os.geteuid() == 0
        if root and self.host_uid is None:
            self.host_uid = _take_uid()
        uid = str(self.host_uid)
        if self._native is not None and (joins or root):
            # the native agent's launcher mode: join the cgroups, become nobody when root, exec
            # bwrap (a few milliseconds faster than setpriv, the fallback)
            launcher = [self._native, "--launch"]
            for path in joins:
                launcher += ["--join", path]
            if root:
                launcher += ["--as-user", uid, uid]
            return [*launcher, "--", bwrap, *args]
        if root:  # bwrap runs as the sandbox's own uid
            setpriv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
            return [*setpriv, "--", bwrap, *args]
        return [bwrap, *args]

    def _make_cgroups(self) -> list[str]:
        """Make the sandbox's cgroups; the files the launcher joins them through (with the
        native agent, cgroup v1). The agent is moved into the others once bwrap has cloned it
        (``_while_starting``); see ``SandboxCgroup`` for why."""
        lim = self.limits
        memory = (lim.memory_mb << 20) if lim.memory_mb is not None else None
        self._cgroup = cgroup = SandboxCgroup(self.id, memory, lim.processes, lim.cpus)
        launcher_joins = self._native is not None
        cgroup.create(launcher_joins)
        if not launcher_joins:
            return []
        if cgroup.host_moves(launcher_joins):  # cgroup v2: start the kernel's wait now
            loop = asyncio.get_running_loop()  # submitted now, not when the loop next runs
            self._cgroup_prime = loop.run_in_executor(None, cgroup.prime)
        return cgroup.self_join_files()

    def _bwrap_args(self, python_binds: Sequence[str]) -> list[str]:
        lim = self.limits
        args = ["--unshare-all", "--unshare-user"]
        if not self.nested:  # no user namespace can be made inside (so no mount, no unshare)
            args.append("--disable-userns")
        if self.host_network:
            args.append("--share-net")
        args += ["--uid", "1000", "--gid", "1000", "--hostname", "sandbox"]
        # the agent is the pid namespace's init: programs cannot signal it (not even SIGKILL),
        # and it reaps their orphans
        args += ["--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += _system_args()
        if self.network:
            for path in _NETWORK_FILES:
                if path == "/etc/resolv.conf" and not self.host_network:
                    args += ["--file", str(self._data_fd(_SLIRP_RESOLV)), path]
                else:
                    args += ["--ro-bind-try", path, path]
        for path in python_binds:
            args += ["--ro-bind", path, path]
        for host_path, inside in self.ro_binds.items():
            if not os.path.exists(host_path):
                raise SandboxError(f"ro_binds: {host_path} does not exist on the host")
            args += ["--ro-bind", host_path, inside]
        for path, content in _IDENTITY_FILES.items():
            args += ["--perms", "0644", "--file", str(self._data_fd(content)), path]
        if self._native is not None:
            # bwrap copies the native agent into the sandbox's (read-only) root
            binary = os.open(self._native, os.O_RDONLY | os.O_CLOEXEC)
            self._launch_fds.append(binary)
            args += ["--perms", "0555", "--file", str(binary), _AGENT_INSIDE]
        args += ["--seccomp", str(self._data_fd(_seccomp_filter(self.nested)))]
        args += ["--proc", "/proc", "--dev", "/dev"]
        # /dev is bwrap's tmpfs, unsized and writable: made read-only; /dev/shm, the one
        # place there programs need to write, gets its own tmpfs sized like the others
        for mount, perms in (("/tmp", "0755"), (WORKDIR, "0755"), ("/dev/shm", "1777")):
            if lim.disk_mb is not None:
                args += ["--size", str(lim.disk_mb << 20)]
            args += ["--perms", perms, "--tmpfs", mount]
        args += ["--remount-ro", "/dev"]  # (not its submounts: /dev/shm stays writable)
        # the root tmpfs bwrap builds is made read-only: only the work dir and /tmp are writable
        args += ["--remount-ro", "/", "--chdir", WORKDIR, "--clearenv"]
        return args

    def _data_fd(self, content: str | bytes) -> int:
        """A pipe holding ``content`` for bwrap to read (small: it fits the pipe buffer, so it
        is written at once)."""
        read_end, write_end = os.pipe()
        os.write(write_end, content.encode() if isinstance(content, str) else content)
        os.close(write_end)
        self._launch_fds.append(read_end)
        return read_end

    async def _while_starting(self) -> None:
        """Learn the agent's pid from bwrap, and move it into the cgroups the launcher did not
        join while it starts (see :class:`SandboxCgroup` for why the move is not done before
        bwrap). Nothing runs in the sandbox until this is done: the agent is the only process
        there and forks commands only when asked, so every command and its descendants start
        inside the cgroups (``tests/sandbox/test_agents.py`` checks)."""
        assert self._proc is not None and self._info_fd is not None
        fd, self._info_fd = self._info_fd, None
        info = await _read_json_object(fd)
        match = re.search(rb'"child-pid"\s*:\s*(\d+)', info)
        if match is None:
            raise SandboxError(f"bwrap did not start the sandbox: {self._stderr_text()}")
        agent = int(match.group(1))
        self._extra_pids = [agent]
        _LIVE[id(self)] = (self._proc.pid, agent)
        self._agent_pid = agent
        cgroup = self._cgroup
        moves = cgroup.host_moves(self._native is not None) if cgroup is not None else []
        if cgroup is not None and moves:
            # not cancelled with the start: cleanup waits for it, so nothing is moved into a
            # group after it was removed
            self._cgroup_setup = asyncio.ensure_future(
                asyncio.to_thread(cgroup.attach, agent, moves)
            )
            try:
                await asyncio.shield(self._cgroup_setup)
            except OSError as e:
                raise SandboxError(f"cannot put the sandbox into its cgroup: {e}") from e

    _agent_pid = 0

    async def _after_ready(self) -> None:
        """The network comes once bwrap has finished setting up the sandbox (the agent runs):
        started earlier, slirp4netns brought the loopback up while bwrap was adding its
        address, and bwrap failed with ``loopback: Failed RTM_NEWADDR`` (a loaded machine)."""
        if self.network and not self.host_network:
            await self._start_slirp(self._agent_pid)

    async def _start_slirp(self, agent: int) -> None:
        """Give the sandbox's network namespace a user-mode network (slirp4netns, outside the
        sandbox): NAT to the outside, the host's loopback refused, DNS at 10.0.2.3."""
        try:
            userns = _owning_userns(agent)
        except OSError as e:
            raise SandboxError(f"cannot find the sandbox's network namespace: {e}") from e
        ready_r, ready_w = os.pipe2(os.O_CLOEXEC)
        args = ["slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback"]
        args.append(f"--userns-path=/proc/self/fd/{userns}")
        args += [f"--ready-fd={ready_w}", str(agent), "tap0"]
        try:
            self._slirp = _popen(args, ready_w, userns)
            os.close(ready_w)
            ready_w = -1
            self._extra_pids.append(self._slirp.pid)
            ready = await asyncio.wait_for(asyncio.to_thread(os.read, ready_r, 1), 10.0)
        except (OSError, TimeoutError) as e:
            raise SandboxError(f"slirp4netns did not set up the sandbox's network: {e}") from e
        finally:
            os.close(ready_r)
            os.close(userns)
            if ready_w >= 0:
                os.close(ready_w)
        if ready != b"1":
            err = self._slirp.stderr.read(2000) if self._slirp.stderr else b""
            raise SandboxError(f"slirp4netns failed: {err.decode(errors='replace').strip()}")

    def _reap_slirp(self) -> None:
        slirp, self._slirp = self._slirp, None
        if slirp is not None:
            with contextlib.suppress(OSError):
                slirp.kill()
            with contextlib.suppress(Exception):
                slirp.wait(timeout=5)
            if slirp.stderr is not None:
                slirp.stderr.close()

    def oom_kills(self) -> int | None:
        return self._cgroup.oom_kills() if self._cgroup is not None else None

    async def _cleanup(self) -> None:
        self._close_info_fd()
        self._reap_slirp()
        started = (self._cgroup_prime, self._cgroup_setup)
        await asyncio.gather(*(f for f in started if f is not None), return_exceptions=True)
        if self._cgroup is not None:
            await self._cgroup.remove_async()
        self._release_uid()

    def _cleanup_sync(self) -> None:
        self._close_info_fd()
        self._reap_slirp()
        if self._cgroup is not None:
            self._cgroup.remove(wait_s=2.0)
        self._release_uid()

    def _release_uid(self) -> None:
        if os.geteuid() == 0 and self.host_uid is not None:
            _release_uid_lock(self.host_uid)
            self.host_uid = None

    def _close_info_fd(self) -> None:
        """The info pipe, when the start failed before bwrap's report was read."""
        if self._info_fd is not None:
            os.close(self._info_fd)
            self._info_fd = None


@functools.cache
def _system_args() -> tuple[str, ...]:
    """The read-only system part of every sandbox's file system (the same for the life of the
    process): ``/usr``, the top-level links or directories into it, the linker cache."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    for path in _BASE_FILES:
        target = os.readlink(path) if os.path.islink(path) else ""
        if target.startswith("/usr/"):  # /etc/localtime: a link is cheaper than a mount
            args += ["--symlink", target, path]
        else:
            args += ["--ro-bind-try", path, path]
    return tuple(args)


@functools.cache  # a failure is not cached: installing bubblewrap later is noticed
def _find_bwrap() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxError(
            "bubblewrap is not installed: `apt-get install bubblewrap` (Debian/Ubuntu), or "
            "pick another backend: create_sandbox(backend='docker'|'remote'|'subprocess')"
        )
    return found


async def _read_json_object(fd: int) -> bytes:
    """What is written to pipe ``fd`` up to the end of one JSON object (or end of file);
    closes ``fd``."""
    loop = asyncio.get_running_loop()
    chunks: list[bytes] = []
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            chunks.append(chunk)
        if (not chunk or b"}" in chunk) and not done.done():
            done.set_result(None)

    os.set_blocking(fd, False)
    loop.add_reader(fd, readable)
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)
    return b"".join(chunks)


@functools.cache
def _seccomp_filter(nested: bool = False) -> bytes:
    from verifiers.sandbox._seccomp import filter_program

    return filter_program(nested=nested)


_NS_GET_USERNS = 0xB701  # ioctl on a namespace fd: the user namespace that owns it


def _owning_userns(pid: int) -> int:
    """An fd of the user namespace that owns ``pid``'s network namespace. slirp4netns must join
    that one: by default it joins ``pid``'s own user namespace, which ``--disable-userns`` has
    replaced (once bwrap has finished setting up) by a nested one without rights over the
    network namespace, so that ``setns`` failed with EPERM whenever slirp4netns came late."""
    import fcntl

    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return fcntl.ioctl(net, _NS_GET_USERNS)  # (the kernel opens it close-on-exec)
    finally:
        os.close(net)


def _popen(args: list[str], *keep_fds: int) -> subprocess.Popen[bytes]:
    """Start a helper next to the sandbox (fork + exec: as quick as the agent's own launch)."""
    return subprocess.Popen(
        args,
        pass_fds=keep_fds,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
