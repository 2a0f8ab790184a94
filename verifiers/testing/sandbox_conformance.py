"""Conformance tests every sandbox backend must pass.

Subclass :class:`SandboxConformance` in a pytest module and say how to make a sandbox::

    from verifiers.testing.sandbox_conformance import SandboxConformance

    class TestMyBackend(SandboxConformance):
        def make_sandbox(self, limits):
            return create_sandbox("mine", limits=limits)

Or run the same checks without pytest's collection (a report back)::

    report = await run_sandbox_conformance(lambda limits: create_sandbox("mine", limits=limits))
    assert report.ok, report.failed

The tests cover the protocol (exec, exit codes, stdin, env, cwd, timeouts, output caps, files,
persistent processes, concurrency, stop) for every backend, and the containment guarantees
(network, host files, writes, processes) for backends that declare ``isolated = True``.
Needs ``pytest`` and ``pytest-asyncio`` (``asyncio_mode = "auto"`` or the marks below).
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import traceback
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from verifiers.errors import SandboxError
from verifiers.sandbox.base import Sandbox, SandboxLimits

__all__ = ["ConformanceReport", "SandboxConformance", "run_sandbox_conformance"]

SandboxFactory = Callable[[SandboxLimits], Sandbox]


class SandboxConformance:
    """Backend-independent sandbox tests. Override :meth:`make_sandbox`."""

    limits = SandboxLimits(timeout=20.0, memory_mb=512, processes=128, max_output_bytes=4096)

    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        raise NotImplementedError("override make_sandbox(limits) to return a new sandbox")

    @pytest.fixture
    async def sb(self) -> AsyncIterator[Sandbox]:
        sandbox = self.make_sandbox(self.limits)
        await sandbox.start()
        try:
            yield sandbox
        finally:
            await sandbox.stop()

    # commands ------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_exec_stdout_stderr_exit_code(self, sb: Sandbox) -> None:
        r = await sb.exec("echo out; echo err >&2; exit 3")
        assert (r.exit_code, r.stdout, r.stderr) == (3, "out\n", "err\n")
        assert not r.timed_out and not r.truncated and not r.ok
        assert r.duration_s >= 0

    @pytest.mark.asyncio
    async def test_exec_argv_is_not_shell_parsed(self, sb: Sandbox) -> None:
        r = await sb.exec(["printf", "%s|", "a b", "$HOME", "'q'"])
        assert r.stdout == "a b|$HOME|'q'|"

    @pytest.mark.asyncio
    async def test_stdin_env_cwd(self, sb: Sandbox) -> None:
        r = await sb.exec(["cat"], stdin=b"line1\nline2")
        assert r.stdout == "line1\nline2"
        r = await sb.exec("echo $GREETING", env={"GREETING": "hi there"})
        assert r.stdout == "hi there\n"
        await sb.exec("mkdir -p sub/dir")
        r = await sb.exec("pwd", cwd="sub/dir")
        assert r.exit_code == 0 and r.stdout.strip().endswith("/sub/dir")

    @pytest.mark.asyncio
    async def test_environment_is_cleared(self, sb: Sandbox) -> None:
        r = await sb.exec("env")
        names = {line.split("=", 1)[0] for line in r.stdout.splitlines()}
        assert "PATH" in names and "HOME" in names
        leaked = names & {"VIRTUAL_ENV", "PYTEST_CURRENT_TEST", "SSH_AUTH_SOCK", "OPENAI_API_KEY"}
        assert not leaked

    @pytest.mark.asyncio
    async def test_missing_command_is_an_observation(self, sb: Sandbox) -> None:
        r = await sb.exec(["no-such-command-xyz"])
        assert r.exit_code == 127 and "no-such-command-xyz" in r.stderr

    @pytest.mark.asyncio
    async def test_large_stdin_and_output_within_cap(self, sb: Sandbox) -> None:
        data = bytes(range(256)) * 4096  # 1 MiB through stdin, 1 MiB back
        r = await sb.exec_raw(["cat"], stdin=data, max_output_bytes=len(data))
        assert r.stdout == data and not r.truncated

    @pytest.mark.asyncio
    async def test_output_cap_truncates(self, sb: Sandbox) -> None:
        r = await sb.exec("head -c 100000 /dev/zero | tr '\\0' a")
        assert r.truncated and r.exit_code == 0
        assert r.stdout == "a" * self.limits.max_output_bytes

    @pytest.mark.asyncio
    async def test_timeout_kills_and_reports(self, sb: Sandbox) -> None:
        r = await sb.exec("echo started; sleep 30", timeout=0.5)
        assert r.timed_out and r.exit_code < 0 and r.shell_exit_code == 124
        assert r.stdout == "started\n"
        assert r.duration_s < 10
        again = await sb.exec("echo alive")  # the sandbox outlives a timed-out command
        assert again.stdout == "alive\n"

    @pytest.mark.asyncio
    async def test_background_child_does_not_hold_exec(self, sb: Sandbox) -> None:
        r = await sb.exec("sleep 30 & echo done", timeout=10)
        assert r.stdout == "done\n" and not r.timed_out and r.duration_s < 10

    @pytest.mark.asyncio
    async def test_concurrent_execs(self, sb: Sandbox) -> None:
        results = await asyncio.gather(*(sb.exec(f"sleep 0.2; echo {i}") for i in range(8)))
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(8)]

    @pytest.mark.asyncio
    async def test_cancelled_exec_kills_the_command(self, sb: Sandbox) -> None:
        task = asyncio.ensure_future(sb.exec("echo $$ > pid; exec sleep 60", timeout=120))
        while (await sb.exec("test -s pid")).exit_code != 0:
            pass
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(500):  # the kill is asynchronous: poll (bounded) until it landed
            if (await sb.exec('kill -0 "$(cat pid)"')).exit_code != 0:
                break
        else:
            pytest.fail("the cancelled command is still running")

    # files ---------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_write_and_read_files(self, sb: Sandbox) -> None:
        payload = bytes(range(256)) * 100
        await sb.write_file("nested/dir/blob.bin", payload)
        assert await sb.read_file("nested/dir/blob.bin") == payload
        await sb.write_file("script.sh", "echo from-script", mode=0o755)
        assert (await sb.exec("./script.sh")).stdout == "from-script\n"
        await sb.write_file("empty.txt", b"")
        assert await sb.read_file("empty.txt") == b""

    @pytest.mark.asyncio
    async def test_read_missing_file(self, sb: Sandbox) -> None:
        with pytest.raises(FileNotFoundError):
            await sb.read_file("does/not/exist")

    # persistent processes ------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_spawned_process_round_trips(self, sb: Sandbox) -> None:
        code = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)"
        proc = await sb.spawn(["python3", "-u", "-c", code])
        for word in ("alpha", "beta", "gamma"):
            await proc.write(word.encode() + b"\n")
            assert await proc.readline() == word.upper().encode() + b"\n"
        await proc.close_stdin()
        assert await proc.wait() == 0

    @pytest.mark.asyncio
    async def test_spawned_process_kill(self, sb: Sandbox) -> None:
        proc = await sb.spawn(["sleep", "60"])
        await proc.kill()
        assert proc.returncode is not None and proc.returncode < 0

    # lifecycle -----------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_stop_is_idempotent_and_final(self) -> None:
        sandbox = self.make_sandbox(self.limits)
        with pytest.raises(SandboxError):
            await sandbox.exec("true")  # not started
        async with sandbox:
            assert sandbox.running
            assert (await sandbox.exec("true")).ok
        await sandbox.stop()
        await asyncio.gather(sandbox.stop(), sandbox.stop())
        assert not sandbox.running
        with pytest.raises(SandboxError):
            await sandbox.exec("true")
        with pytest.raises(SandboxError):
            await sandbox.start()

    @pytest.mark.asyncio
    async def test_stop_during_exec_raises_sandbox_error(self) -> None:
        sandbox = self.make_sandbox(self.limits)
        await sandbox.start()
        task = asyncio.ensure_future(sandbox.exec("sleep 30"))
        await asyncio.sleep(0)  # let the exec be sent
        await sandbox.stop()
        with pytest.raises(SandboxError):
            await task

    @pytest.mark.asyncio
    async def test_stop_survives_cancellation(self) -> None:
        sandbox = self.make_sandbox(self.limits)
        await sandbox.start()
        stopper = asyncio.ensure_future(sandbox.stop())
        await asyncio.sleep(0)
        stopper.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stopper
        await sandbox.stop()  # completes the shielded stop
        assert not sandbox.running

    # containment (isolated backends) -------------------------------------------------------

    def _require_isolation(self, sb: Sandbox) -> None:
        if not sb.isolated:
            pytest.skip(f"the {sb.backend} backend does not isolate")

    @pytest.mark.asyncio
    async def test_no_network(self, sb: Sandbox) -> None:
        self._require_isolation(sb)
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            port = listener.getsockname()[1]
            probe = (
                "import socket\n"
                f"for addr in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n"
                "    try:\n"
                "        socket.create_connection(addr, timeout=2).close(); print('open', addr)\n"
                "    except OSError as e:\n"
                "        print('blocked', addr)\n"
            )
            r = await sb.exec(["python3", "-c", probe])
        assert r.exit_code == 0, r.stderr
        assert "open" not in r.stdout and r.stdout.count("blocked") == 2

    @pytest.mark.asyncio
    async def test_root_is_read_only(self, sb: Sandbox) -> None:
        self._require_isolation(sb)
        r = await sb.exec("touch /usr/vf-x || touch /vf-x || echo blocked")
        assert r.stdout.strip() == "blocked"

    @pytest.mark.asyncio
    async def test_runs_unprivileged(self, sb: Sandbox) -> None:
        self._require_isolation(sb)
        r = await sb.exec("id -u")
        assert r.stdout.strip() != "0"

    @pytest.mark.asyncio
    async def test_the_agent_cannot_be_tampered_with(self, sb: Sandbox) -> None:
        """Programs run as the same uid as whatever runs them in the sandbox; they must not be
        able to read or write its memory (that would let them forge their results)."""
        self._require_isolation(sb)
        probe = (
            "import os\n"
            "for path in (f'/proc/{os.getppid()}/mem', '/proc/self/mem'):\n"
            "    try:\n"
            "        open(path, 'rb').close(); print('open', path)\n"
            "    except OSError:\n"
            "        print('denied', path)\n"
        )
        r = await sb.exec(["python3", "-c", probe])
        lines = r.stdout.splitlines()
        assert lines[0].startswith("denied") and lines[1] == "open /proc/self/mem", r

    @pytest.mark.asyncio
    async def test_processes_are_limited(self) -> None:
        limits = self.limits.replace(processes=32)
        sandbox = self.make_sandbox(limits)
        if not sandbox.isolated:
            pytest.skip(f"the {sandbox.backend} backend does not isolate")
        code = (
            "import os, time\n"
            "n = 0\n"
            "try:\n"
            "    for _ in range(200):\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(30); os._exit(0)\n"
            "        n += 1\n"
            "except OSError:\n"
            "    pass\n"
            "print(n)\n"
        )
        async with sandbox:
            r = await sandbox.exec(["python3", "-c", code], timeout=15)
        assert r.exit_code == 0, r.stderr
        assert int(r.stdout) < 32


@dataclass
class ConformanceReport:
    """Outcome of :func:`run_sandbox_conformance`: test names, and tracebacks of failures."""

    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


async def run_sandbox_conformance(
    factory: SandboxFactory, *, only: list[str] | None = None
) -> ConformanceReport:
    """Run :class:`SandboxConformance` against ``factory(limits) -> Sandbox`` (not started)."""

    class _Suite(SandboxConformance):
        def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
            return factory(limits)

    suite = _Suite()
    report = ConformanceReport()
    names = sorted(n for n in dir(suite) if n.startswith("test_"))
    for name in names:
        if only is not None and name not in only:
            continue
        method = getattr(suite, name)
        sandbox: Sandbox | None = None
        try:
            if "sb" in inspect.signature(method).parameters:
                sandbox = suite.make_sandbox(suite.limits)
                await sandbox.start()
                await method(sandbox)
            else:
                await method()
            report.passed.append(name)
        except pytest.skip.Exception as e:
            report.skipped[name] = str(e)
        except Exception:
            report.failed[name] = traceback.format_exc()
        finally:
            if sandbox is not None:
                await sandbox.stop()
    return report
