"""The ``vf`` command tree: every ``cli/*_cmd.py`` module declares its commands on its own
``app`` and ``cli/main.py`` mounts it (one registration style)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import typer

from tests.clirun import run_cli

CMD_MODULES = sorted(p.stem for p in (Path(__file__).parents[2] / "cli").glob("*_cmd.py"))


def _commands(help_text: str) -> set[str]:
    return set(re.findall(r"^\s{2}([a-z][a-z-]*)\s", help_text.split("Commands:", 1)[1], re.M))


def test_every_command_module_has_an_app_that_main_mounts() -> None:
    from cli import main

    mounted = {group.typer_instance for group in main.app.registered_groups}
    mounted |= {group.typer_instance for group in main.env_cmd.app.registered_groups}
    for name in CMD_MODULES:
        app = importlib.import_module(f"cli.{name}").app
        assert isinstance(app, typer.Typer), name
        assert app in mounted, f"cli/{name}.py's app is not mounted by cli/main.py"


def test_vf_lists_every_command_and_group() -> None:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    assert _commands(result.stdout) == {
        "eval", "view", "env", "hub", "sandbox", "serve", "login", "logout", "whoami", "token", "train",
        "cache",
    }  # fmt: skip
    env = run_cli("env", "--help")
    assert {"init", "build", "push", "install", "uninstall", "info", "list", "search", "yank",
            "unyank", "delete", "validate", "pull", "inspect", "fork"} == _commands(env.stdout)  # fmt: skip


def test_vf_eval_is_the_eval_command() -> None:
    for result in (run_cli("--help", prog="vf-eval"), run_cli("eval", "--help")):
        assert result.returncode == 0, result.stderr
        assert (
            "Evaluate an environment" in result.stdout and "--rollouts-per-example" in result.stdout
        )
