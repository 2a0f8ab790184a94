"""Run the ``vf`` / ``vf-eval`` commands in this process (typer's CliRunner) with their output
captured, for the CLI tests that do not need a process of their own (one to kill, or another
interpreter)."""

from __future__ import annotations

from dataclasses import dataclass

from typer.testing import CliRunner


@dataclass(frozen=True)
class CliResult:
    """What a command did, named like :class:`subprocess.CompletedProcess`."""

    returncode: int
    stdout: str
    stderr: str
    stdout_bytes: bytes
    stderr_bytes: bytes


def run_cli(
    *args: str,
    prog: str = "vf",
    env: dict[str, str] | None = None,
    input: bytes | str | None = None,
) -> CliResult:
    """``prog ARGS`` (``vf`` or ``vf-eval``) in process; exceptions the CLI lets escape fail
    the test with their traceback."""
    from cli import eval_cmd
    from cli.main import app

    runner = CliRunner()
    result = runner.invoke(
        eval_cmd.app if prog == "vf-eval" else app,
        list(args),
        env=env,
        input=input,
        prog_name=prog,
        catch_exceptions=False,
    )
    return CliResult(
        returncode=result.exit_code,
        stdout=result.stdout,
        stderr=result.stderr,
        stdout_bytes=result.stdout_bytes,
        stderr_bytes=result.stderr_bytes,
    )
