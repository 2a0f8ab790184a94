"""`vf sandbox exec`: output, exit codes, options, and errors (the command runs in this
process; the sandboxed programs in their own)."""

from __future__ import annotations

from tests.clirun import CliResult, run_cli
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap


def vf_exec(*args: str, input: bytes | None = None) -> CliResult:
    return run_cli("sandbox", "exec", *args, input=input)


def test_prints_output_and_exits_with_the_commands_code() -> None:
    p = vf_exec("--", "sh", "-c", "echo out; echo err >&2; exit 7")
    assert (p.returncode, p.stdout_bytes, p.stderr_bytes) == (7, b"out\n", b"err\n")


def test_env_and_stdin_are_passed() -> None:
    p = vf_exec(
        "--env", "NAME=vf", "--stdin", "--", "sh", "-c", 'echo "$NAME $(cat)"', input=b"piped"
    )
    assert (p.returncode, p.stdout_bytes) == (0, b"vf piped\n"), p.stderr


def test_signal_and_missing_command_exit_codes() -> None:
    assert vf_exec("--", "sh", "-c", "kill -9 $$").returncode == 137
    missing = vf_exec("--", "no-such-command-xyz")
    assert missing.returncode == 127 and "command not found" in missing.stderr


def test_unknown_backend_is_a_clear_error() -> None:
    p = vf_exec("--backend", "nope", "--", "true")
    assert p.returncode == 2 and "unknown sandbox backend 'nope'" in p.stderr
    assert "Traceback" not in p.stderr
