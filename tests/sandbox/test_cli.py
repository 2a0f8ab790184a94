"""`vf sandbox exec`: output, exit codes, options, and errors."""

from __future__ import annotations

import subprocess

from tests.sandbox.conftest import VF, needs_bwrap, vf_exec

pytestmark = needs_bwrap


def test_prints_output_and_exits_with_the_commands_code() -> None:
    p = vf_exec("--", "sh", "-c", "echo out; echo err >&2; exit 7")
    assert (p.returncode, p.stdout, p.stderr) == (7, b"out\n", b"err\n")


def test_env_and_stdin_are_passed() -> None:
    p = subprocess.run(
        [
            VF,
            "sandbox",
            "exec",
            "--env",
            "NAME=vf",
            "--stdin",
            "--",
            "sh",
            "-c",
            'echo "$NAME $(cat)"',
        ],
        input=b"piped",
        capture_output=True,
        timeout=60,
    )
    assert (p.returncode, p.stdout) == (0, b"vf piped\n"), p.stderr


def test_signal_and_missing_command_exit_codes() -> None:
    assert vf_exec("--", "sh", "-c", "kill -9 $$").returncode == 137
    missing = vf_exec("--", "no-such-command-xyz")
    assert missing.returncode == 127 and b"command not found" in missing.stderr


def test_unknown_backend_is_a_clear_error() -> None:
    p = vf_exec("--backend", "nope", "--", "true")
    assert p.returncode == 2 and b"unknown sandbox backend 'nope'" in p.stderr
    assert b"Traceback" not in p.stderr
