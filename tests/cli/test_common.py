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
