"""The CLI's shared error handling: one line, the next step, no traceback, right exit code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cli._common import CLIError, handle_errors


def test_cli_error_is_one_line_with_the_next_step(capsys: pytest.CaptureFixture[str]) -> None:
    @handle_errors
    def command() -> None:
        raise CLIError("the hub at X is unreachable", hint="check --url", exit_code=3)

    with pytest.raises(SystemExit) as info:
        command()
    assert info.value.code == 3
    err = capsys.readouterr().err
    assert err.splitlines() == ["error: the hub at X is unreachable (check --url)"]


def test_unexpected_exception_has_no_traceback_without_debug(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @handle_errors
    def command() -> None:
        raise RuntimeError("kaboom")

    with pytest.raises(SystemExit) as info:
        command()
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RuntimeError: kaboom" in err


def test_closed_pipe_exits_quietly(capsys: pytest.CaptureFixture[str]) -> None:
    @handle_errors
    def command() -> None:  # `vf env list | head -1`: the reader went away
        raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(SystemExit) as info:
        command()
    assert info.value.code == 141
    assert capsys.readouterr().err == ""


def test_usage_errors_are_plain_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import eval_main

    monkeypatch.setattr(sys, "argv", [str(Path(sys.executable).parent / "vf-eval")])
    with pytest.raises(SystemExit) as info:
        eval_main()
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Missing argument" in err and "╭" not in err
    assert err.startswith("Usage: vf-eval ")


RUN_ASYNC_SCRIPT = """
import asyncio, signal, threading

from cli._common import run_async  # asyncio.run, which the CLI used before, hangs here


async def main():
    # a loop with nothing scheduled: no timer will wake select() (every request held)
    loop = asyncio.get_running_loop()
    def ctrl_c_to_this_thread():
        # once the main thread sleeps in epoll_wait (its state, polled; not a timed wait)
        wchan = f"/proc/self/task/{threading.main_thread().native_id}/wchan"
        while open(wchan).read() not in ("do_epoll_wait", "ep_poll"):
            pass
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    threading.Thread(target=ctrl_c_to_this_thread).start()
    await loop.create_future()

try:
    run_async(main())
except KeyboardInterrupt:
    print("interrupted")
"""


def _kernel_names_waits() -> bool:
    """Whether /proc/PID/wchan names where a sleeping process waits (hardened kernels say 0)."""
    import subprocess

    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        for _ in range(100_000):  # a bounded poll of the process's state
            stat = Path(f"/proc/{sleeper.pid}/stat").read_text()
            where = Path(f"/proc/{sleeper.pid}/wchan").read_text()
            if stat.rsplit(") ", 1)[1].startswith("S") and where[:1].isalpha():
                return True
        return False
    finally:
        sleeper.kill()
        sleeper.wait()


def test_run_async_acts_on_a_ctrl_c_that_another_thread_receives(tmp_path: Path) -> None:
    """The kernel may hand a process's SIGINT to any thread; asyncio.run's loop, waiting in
    select() with no timer due, never notices it (vf-eval hung after Ctrl-C under load)."""
    import subprocess

    if not _kernel_names_waits():
        pytest.skip("/proc/PID/wchan names no kernel function on this machine")
    script = tmp_path / "ctrl_c.py"
    script.write_text(RUN_ASYNC_SCRIPT)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: the interrupt is acted on as soon as the loop wakes
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "interrupted"
