"""Host side of the local backends: a sandbox is one process tree running the agent
(``_agent.py``), driven over a ``SOCK_SEQPACKET`` socket. Command stdio is passed to the agent
as file descriptors, so output flows from the program straight to the host (no copy through
the agent) and a persistent worker's round trip is one pipe write and one pipe read.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import itertools
import marshal
import os
import signal
import socket
import subprocess
import sys
from abc import abstractmethod
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

from verifiers.errors import ConfigError, SandboxError
from verifiers.sandbox import _native
from verifiers.sandbox.base import RawExecResult, Sandbox, SandboxLimits, SandboxProcess

AGENT_SOURCE = (Path(__file__).with_name("_agent.py")).read_text()
#: the largest message the agents accept (both read into a buffer of this size)
MAX_MESSAGE = 1 << 22
_LOADER = "import marshal,sys;exec(marshal.loads(bytes.fromhex(sys.argv.pop(1))))"
_COMPILED: dict[str, str | None] = {}


def agent_settings(config: dict[str, Any]) -> list[str]:
    """The agent's settings as ``KEY=VALUE`` arguments (see ``_agent.py``)."""
    args = [f"workdir={config['workdir']}"]
    if config.get("subreaper"):
        args.append("subreaper=1")
    args += [f"{name}={int(value)}" for name, value in config.get("rlimits", {}).items()]
    return args


def agent_argv(python: str, agent_fd: int, config: dict[str, Any]) -> list[str]:
    """The command that runs the Python agent with ``python``: its code compiled ahead of time
    (by that interpreter, once per process; compiling at every start costs milliseconds), or
    the source when that is not possible."""
    if python not in _COMPILED:
        _COMPILED[python] = _compile_with(python)
    code = _COMPILED[python]
    head = [python, "-I", "-S", "-c", *((_LOADER, code) if code else (AGENT_SOURCE,))]
    return [*head, str(agent_fd), *agent_settings(config)]


def _compile_with(python: str) -> str | None:
    script = (
        "import marshal,sys;"
        "sys.stdout.write(marshal.dumps(compile(sys.stdin.read(),'<vf-agent>','exec')).hex())"
    )
    if python == sys.executable:
        return marshal.dumps(compile(AGENT_SOURCE, "<vf-agent>", "exec")).hex()
    try:
        r = subprocess.run(
            [python, "-I", "-S", "-c", script],
            input=AGENT_SOURCE.encode(),
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = r.stdout.decode("ascii", "replace").strip()
    return out if r.returncode == 0 and out else None


# pids to SIGKILL if the interpreter exits with sandboxes still live (the SIGKILL case is
# covered by --die-with-parent / the agent's socket closing)
_LIVE: dict[int, tuple[int, ...]] = {}


@atexit.register
def _kill_live_sandboxes() -> None:
    for pids in list(_LIVE.values()):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    _LIVE.clear()
    from verifiers.sandbox import _cgroup

    _cgroup.remove_own_groups()


class _Collector:
    """Reads a non-blocking pipe into memory up to a cap, discarding the rest."""

    __slots__ = ("buf", "cap", "closed", "fd", "loop", "total")

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, cap: int) -> None:
        self.loop = loop
        self.fd = fd
        self.cap = cap
        self.buf = bytearray()
        self.total = 0
        self.closed = False
        os.set_blocking(fd, False)
        loop.add_reader(fd, self.read)

    def read(self, max_chunks: int = 4) -> None:
        # a bounded number of reads per call: a program that writes without pause must not
        # keep the event loop in this callback
        for _ in range(max_chunks):
            if self.closed:
                return
            try:
                chunk = os.read(self.fd, 1 << 18)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                return
            self.total += len(chunk)
            room = self.cap - len(self.buf)
            if room > 0:
                self.buf += chunk[:room]

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.loop.remove_reader(self.fd)
            os.close(self.fd)

    @property
    def truncated(self) -> bool:
        return self.total > len(self.buf)


class _Job:
    """One command started through the agent; resolved by its ``exit`` message."""

    __slots__ = ("exit", "id")

    def __init__(self, job_id: int, loop: asyncio.AbstractEventLoop) -> None:
        self.id = job_id
        self.exit: asyncio.Future[dict[str, Any]] = loop.create_future()


class LocalProcess(SandboxProcess):
    """A process started through the agent, with its stdin/stdout pipes held by the host."""

    def __init__(
        self,
        sandbox: AgentSandbox,
        job: _Job,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: _TailReader,
    ) -> None:
        self._sandbox = sandbox
        self._job = job
        self._stdin = stdin
        self._stdout = stdout
        self._stderr = stderr

    async def write(self, data: bytes) -> None:
        try:
            self._stdin.write(data)
            await self._stdin.drain()
        except (ConnectionError, RuntimeError) as e:
            raise BrokenPipeError(f"the process's stdin is closed: {e}") from e

    async def close_stdin(self) -> None:
        with contextlib.suppress(Exception):
            self._stdin.close()

    async def readline(self) -> bytes:
        return await self._guard(self._stdout.readline())

    async def readexactly(self, n: int) -> bytes:
        return await self._guard(self._stdout.readexactly(n))

    async def read(self, n: int = 1 << 16) -> bytes:
        return await self._stdout.read(n)

    async def _guard(self, aw: Any) -> bytes:
        try:
            data: bytes = await aw
        except asyncio.IncompleteReadError as e:
            return e.partial
        return data

    async def wait(self) -> int:
        info = await asyncio.shield(self._job.exit)
        self.returncode = int(info["status"])
        return self.returncode

    async def kill(self) -> None:
        if not self._job.exit.done():
            with contextlib.suppress(SandboxError):
                await self._sandbox._send(encode_kill(self._job.id))
            with contextlib.suppress(SandboxError):
                await self.wait()
        await self.close_stdin()

    def stderr_tail(self) -> bytes:
        return bytes(self._stderr.tail)


class _TailReader(asyncio.Protocol):
    """Keeps the last ``size`` bytes of a pipe (a worker's stderr), so it never blocks."""

    def __init__(self, size: int = 1 << 16) -> None:
        self.tail: deque[int] = deque(maxlen=size)

    def data_received(self, data: bytes) -> None:
        self.tail.extend(data)


class AgentSandbox(Sandbox):
    """Base of the backends whose sandbox is a local process tree running the agent."""

    #: close the agent's socket and let it end its commands before killing it
    _graceful_stop: ClassVar[bool] = False

    def __init__(
        self, limits: SandboxLimits | None = None, *, network: bool = False, agent: str = "auto"
    ) -> None:
        super().__init__(limits, network=network)
        self._agent_kind = _native.check_agent_kind(agent)
        #: the agent this sandbox runs: "native" or "python" (known once started)
        self.agent: str | None = None
        self._native: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._jobs: dict[int, _Job] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._dead: str | None = None
        self._extra_pids: list[int] = []
        # descriptors _launch opens for the launched process (closed once it has them)
        self._launch_fds: list[int] = []

    # backend hooks for subclasses ----------------------------------------------------------

    @abstractmethod
    def _launch(self, agent_fd: int, config: dict[str, Any]) -> list[str]:
        """The argv that runs the agent with ``agent_fd`` inherited."""

    @abstractmethod
    def _workdir(self) -> str:
        """The work dir as seen from inside the sandbox."""

    async def _while_starting(self) -> None:
        """Runs while the agent starts up, once it is launched; the sandbox is ready when both
        have finished (a backend puts the agent into its cgroups here)."""

    async def _after_ready(self) -> None:
        """Runs once the agent said it is ready (the launcher's set-up of the sandbox is
        finished) and before the first command (a backend gives it its network here)."""

    async def _cleanup(self) -> None:
        """Called after every process of the sandbox is gone."""
        self._cleanup_sync()

    def _cleanup_sync(self) -> None:
        """Release host resources without the event loop (also when a stop is cancelled)."""

    # lifecycle -----------------------------------------------------------------------------

    def _agent_command(
        self, python: str, agent_fd: int, config: dict[str, Any], native: str | None = None
    ) -> list[str]:
        """The agent's command line: the native build (at ``native``, default: its path on
        the host) when this sandbox uses it, else the Python agent run by ``python``."""
        if self._native is not None:
            return [native or self._native, str(agent_fd), *agent_settings(config)]
        return agent_argv(python, agent_fd, config)

    async def _choose_agent(self) -> None:
        choice = _native.effective_kind(self._agent_kind)
        if choice != "python":
            if not _native.resolved():  # the first sandbox on this machine builds it
                await asyncio.to_thread(_native.native_agent)
            self._native = _native.native_agent(required=choice == "native")
        self.agent = "native" if self._native is not None else "python"

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        await self._choose_agent()
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = host
        host.setblocking(False)
        # a message's size is bounded by the send buffer: room for large argv/env (the kernel
        # caps this at net.core.wmem_max)
        host.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, MAX_MESSAGE)
        config = {"workdir": self._workdir(), "rlimits": self.limits.rlimits()}
        self._launch_fds = []
        try:
            argv = self._launch(child.fileno(), config)
            # Popen (vfork) rather than asyncio's subprocess: no child-watcher thread per
            # sandbox; the exit is observed through the agent's socket and a pidfd
            self._proc = subprocess.Popen(  # noqa: ASYNC220
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(child.fileno(), *self._launch_fds),
                start_new_session=True,
            )
        except OSError as e:
            raise SandboxError(f"cannot launch the {self.backend} sandbox: {e}") from e
        finally:
            child.close()
            for fd in self._launch_fds:
                os.close(fd)
            self._launch_fds = []
        _LIVE[id(self)] = (self._proc.pid,)
        preparing = loop.create_task(self._while_starting())
        try:
            async with asyncio.timeout(self.limits.start_timeout):
                ready = await self._recv()
                if not ready or ready[0] != "ready":
                    raise SandboxError(
                        f"{self.backend} sandbox failed to start: {self._stderr_text()}"
                    )
                await preparing
                await self._after_ready()
        except TimeoutError:
            raise SandboxError(
                f"{self.backend} sandbox did not start within {self.limits.start_timeout}s"
            ) from None
        finally:
            preparing.cancel()  # a no-op once it has finished; the gather reaps its outcome
            await asyncio.gather(preparing, return_exceptions=True)
        self._reader = loop.create_task(self._read_loop())

    def _stderr_text(self) -> str:
        """Why the launch failed: the launcher's stderr (it is killed first)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        return self._death_note()

    async def _recv(self) -> list[str] | None:
        """The agent's next message as words (``None`` when the agent is gone)."""
        assert self._sock is not None
        data = await asyncio.get_running_loop().sock_recv(self._sock, 4096)
        if not data:
            return None
        return data.decode("ascii").split()

    async def _read_loop(self) -> None:
        try:
            while True:
                words = await self._recv()
                if words is None:
                    break
                if words[0] == "exit" and len(words) == 7:
                    job = self._jobs.pop(int(words[1]), None)
                    if job is not None and not job.exit.done():
                        job.exit.set_result(
                            {
                                "status": int(words[2]),
                                "timed_out": words[3] == "1",
                                "duration": float(words[4]),
                                "cpu": float(words[5]),
                                "maxrss_kb": int(words[6]),
                            }
                        )
        except (OSError, ValueError, UnicodeDecodeError) as e:
            self._fail(f"lost the sandbox agent: {e}")
            return
        if self._state.stopped:
            self._fail("the sandbox was stopped")
        else:
            self._fail(f"the sandbox died ({self._death_note()})")

    def _death_note(self) -> str:
        """What the sandbox printed before dying, and its exit status (never blocks)."""
        proc = self._proc
        if proc is None:
            return "not launched"
        note = ""
        if proc.stderr is not None:
            with contextlib.suppress(OSError):
                os.set_blocking(proc.stderr.fileno(), False)
                note = (proc.stderr.read(4096) or b"").decode("utf-8", "replace").strip()
        status = proc.poll()
        return f"exit status {status}: {note}" if status is not None else note or "no output"

    def _fail(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
        for job in self._jobs.values():
            if not job.exit.done():
                job.exit.set_exception(SandboxError(f"sandbox {self.id}: {reason}"))
                job.exit.exception()  # not an error if nobody waits for it (a killed worker)
        self._jobs.clear()

    async def _send(self, data: bytes, fds: list[int] | tuple[int, ...] = ()) -> None:
        if self._dead is not None or self._sock is None:
            raise SandboxError(f"sandbox {self.id}: {self._dead or 'not started'}")
        if len(data) >= MAX_MESSAGE:
            raise _too_large(len(data))
        loop = asyncio.get_running_loop()
        while True:
            try:
                socket.send_fds(self._sock, [data], list(fds))
                return
            except BlockingIOError:
                await _writable(loop, self._sock.fileno())
            except OSError as e:
                if e.errno == errno.EMSGSIZE:
                    raise _too_large(len(data)) from None
                self._fail(f"lost the sandbox agent: {e}")
                raise SandboxError(f"sandbox {self.id}: {self._dead}") from e

    async def _stop(self) -> None:
        proc = self._proc
        self._fail("the sandbox was stopped")
        pids = [p for p in (*self._extra_pids, proc.pid if proc else None) if p is not None]
        try:
            if self._reader is not None:
                # unregister the socket from the loop before closing it (fd numbers are reused)
                self._reader.cancel()
                await asyncio.gather(self._reader, return_exceptions=True)
            if self._sock is not None:
                self._sock.close()  # the agent kills what it started when its socket closes
            if self._graceful_stop and proc is not None:
                await _wait_pid_gone(proc.pid, 2.0)
            waits = [_wait_pid_gone(pid) for pid in pids]
            _kill_all(pids)
            await asyncio.gather(*waits)
            await self._cleanup()
        except BaseException:
            # cancelled, typically because the event loop is shutting down: finish without it
            _kill_all(pids)
            self._cleanup_sync()
            raise
        finally:
            if self._sock is not None:
                self._sock.close()
            if proc is not None:
                with contextlib.suppress(Exception):
                    proc.wait(timeout=5)
                if proc.stderr is not None:
                    proc.stderr.close()
            _LIVE.pop(id(self), None)

    # commands ------------------------------------------------------------------------------

    async def _run(
        self,
        argv: list[str],
        stdin: bytes | None,
        env: dict[str, str],
        cwd: str | None,
        timeout: float,  # noqa: ASYNC109
        max_output_bytes: int,
    ) -> RawExecResult:
        loop = asyncio.get_running_loop()
        job = _Job(next(self._ids), loop)
        msg = encode_run(job.id, argv, env, cwd, timeout, stdin is not None)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        send_fds = [out_w, err_w]
        in_w = -1
        if stdin is not None:
            in_r, in_w = os.pipe2(os.O_CLOEXEC)
            send_fds.insert(0, in_r)
        out = _Collector(loop, out_r, max_output_bytes)
        err = _Collector(loop, err_r, max_output_bytes)
        oom_before = self.oom_kills()
        writer: asyncio.Task[None] | None = None
        feeder: _StdinFeeder | None = None
        self._jobs[job.id] = job
        try:
            try:
                await self._send(msg, send_fds)
            finally:
                for fd in send_fds:
                    os.close(fd)
            if stdin is not None:
                feeder = _StdinFeeder(in_w, stdin)
                in_w = -1
                if not feeder.write_now():
                    writer = loop.create_task(feeder.write_rest(loop))
            # the agent enforces the timeout; this one only catches a hung sandbox
            try:
                info = await asyncio.wait_for(asyncio.shield(job.exit), timeout + 30.0)
            except TimeoutError:
                await self.stop()
                raise SandboxError(f"sandbox {self.id} did not answer; it was stopped") from None
        except BaseException:
            self._jobs.pop(job.id, None)
            if not job.exit.done() and self._dead is None:
                with contextlib.suppress(BaseException):
                    await asyncio.shield(self._send(encode_kill(job.id)))
            raise
        finally:
            # what the command wrote before it exited is in the pipes (at most a pipe buffer
            # each); a background process that keeps writing is not waited for
            out.read(max_chunks=64)
            err.read(max_chunks=64)
            out.close()
            err.close()
            if in_w >= 0:
                os.close(in_w)
            if writer is not None:
                writer.cancel()
                with contextlib.suppress(BaseException):
                    await writer
            if feeder is not None:
                feeder.close()
        oom_after = self.oom_kills()
        return RawExecResult(
            exit_code=int(info["status"]),
            stdout=bytes(out.buf),
            stderr=bytes(err.buf),
            timed_out=bool(info["timed_out"]),
            truncated=out.truncated or err.truncated,
            duration_s=float(info["duration"]),
            oom=oom_before is not None and oom_after is not None and oom_after > oom_before,
            cpu_s=float(info["cpu"]),
            max_rss_mb=float(info["maxrss_kb"]) / 1024.0,
        )

    async def listen_loopback(self) -> socket.socket:
        """A TCP socket listening on the sandbox's own ``127.0.0.1`` (its network namespace;
        the host's loopback without one), opened by the sandbox's agent: the caller accepts
        the sandbox's connections itself, with no process in between. Ask before running
        untrusted code in the sandbox (the descriptor is checked, not trusted)."""
        from verifiers.sandbox._listen import receive_listener

        host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with host:
            try:
                await self._send(b"listen\0", [theirs.fileno()])
            finally:
                theirs.close()
            return await receive_listener(host, self.id, self.limits.start_timeout)

    async def _spawn(self, argv: list[str], env: dict[str, str], cwd: str | None) -> SandboxProcess:
        loop = asyncio.get_running_loop()
        job = _Job(next(self._ids), loop)
        msg = encode_run(job.id, argv, env, cwd, None, True)
        in_r, in_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        self._jobs[job.id] = job
        try:
            await self._send(msg, [in_r, out_w, err_w])
        except BaseException:
            self._jobs.pop(job.id, None)
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        stdout = asyncio.StreamReader(limit=1 << 24, loop=loop)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stdout, loop=loop), os.fdopen(out_r, "rb", 0)
        )
        tail = _TailReader()
        await loop.connect_read_pipe(lambda: tail, os.fdopen(err_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(in_w, "wb", 0)
        )
        stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        return LocalProcess(self, job, stdin, stdout, tail)


class _StdinFeeder:
    """Writes a command's stdin into its pipe without blocking the loop, then closes the
    pipe. A reader that goes away (the program exits without reading) is not an error."""

    def __init__(self, fd: int, data: bytes) -> None:
        self.fd = fd
        self.view = memoryview(data)
        os.set_blocking(fd, False)

    def write_now(self) -> bool:
        """Write what the pipe takes now; True when everything is written (pipe closed)."""
        try:
            while self.view:
                n = os.write(self.fd, self.view[: 1 << 16])
                self.view = self.view[n:]
        except BlockingIOError:
            return False
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close()
        return True

    async def write_rest(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self.write_now():
            await _writable(loop, self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _writable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    ready: asyncio.Future[None] = loop.create_future()
    loop.add_writer(fd, lambda: _resolve(ready))
    try:
        await ready
    finally:
        loop.remove_writer(fd)


async def _wait_pid_gone(pid: int, timeout: float = 30.0) -> None:  # noqa: ASYNC109
    """Wait until process ``pid`` has exited (not necessarily our child), via a pidfd."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return  # already gone
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    loop.add_reader(pidfd, lambda: _resolve(done))
    try:
        await asyncio.wait_for(done, timeout)
    except TimeoutError:
        pass
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


def encode_run(
    job_id: int,
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    timeout: float | None,
    stdin: bool,
) -> bytes:
    """A ``run`` message for the agent (NUL-terminated fields; see ``_agent.py``). The
    strings hold no NUL (``Sandbox.exec`` checks)."""
    fields = [
        b"run",
        str(job_id).encode(),
        repr(float(timeout)).encode() if timeout is not None else b"",
        b"1" if stdin else b"0",
        os.fsencode(cwd or ""),
        str(len(argv)).encode(),
        *(os.fsencode(a) for a in argv),
        *(os.fsencode(f"{k}={v}") for k, v in env.items()),
    ]
    return b"\0".join(fields) + b"\0"


def _too_large(size: int) -> ConfigError:
    return ConfigError(
        f"the command is too large to send into the sandbox ({size} bytes of arguments and "
        f"environment): pass large inputs through stdin or write_file instead"
    )


def encode_kill(job_id: int) -> bytes:
    return b"kill\0%d\0" % job_id


def child_pids(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux ``/proc/PID/task/*/children``)."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.extend(int(p) for p in f.read().split())
    return out
