"""Every command's --help: plain usage lines and a help text on every option and argument."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cli._common import plural
from cli.main import app


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, [*path, name])
    else:
        yield path, cmd


COMMANDS = list(_commands(typer.main.get_command(app), []))


def test_the_walk_finds_the_commands() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"eval", "env push", "env install", "hub serve", "token list"} <= names


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p))
def test_every_option_and_argument_has_help_and_usage_has_no_braces(path: list[str]) -> None:
    cmd = dict((tuple(p), c) for p, c in COMMANDS)[tuple(path)]
    missing = [p.name for p in cmd.params if p.name != "help" and not getattr(p, "help", None)]
    assert not missing, f"vf {' '.join(path)}: no help for {missing}"
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    usage = result.output.splitlines()[0]
    assert usage.startswith(f"Usage: vf {' '.join(path)} ")
    assert "{" not in usage and "}" not in usage, usage


def test_eval_usage_is_the_unix_form() -> None:
    result = CliRunner().invoke(app, ["eval", "--help"])
    assert result.output.splitlines()[0] == "Usage: vf eval [OPTIONS] ENV_ID"


def test_plural() -> None:
    assert plural(1, "row") == "1 row"
    assert plural(0, "row") == "0 rows"
    assert plural(2, "entry", "entries") == "2 entries"
