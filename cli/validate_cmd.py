"""``vf env validate ENV [-a ARGS_JSON] [-n N]``: model-free conformance checks.

Mounted under ``vf env`` by ``cli/main.py``. ``ENV`` is
an installed environment id, or the directory of an environment package (its
``pyproject.toml`` names the entry point), so authors can check a package before installing it.
Runs :func:`verifiers.testing.check_environment`, prints one table row per check and exits 1
when a check failed (2 for bad arguments or an environment that cannot be found).
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import TYPE_CHECKING

import typer

from cli._common import CLIError, handle_errors, plural

if TYPE_CHECKING:
    from pathlib import Path

    from verifiers.envs.environment import Environment
    from verifiers.testing.check import CheckReport

HELP = (
    "Check an environment without a model: it loads, its dataset has the expected columns, "
    "gold answers get full reward, a no-op answer gets none, and scripted rollouts complete."
)

app = typer.Typer()

_STYLE = {"pass": "green", "fail": "bold red", "skip": "yellow"}


@app.command("validate", help=HELP)
@handle_errors
def validate_command(
    env: str = typer.Argument(
        ..., help="Environment id (NAME or OWNER/NAME[@VERSION]) or a package directory"
    ),
    env_args: str = typer.Option(
        None, "--env-args", "-a", help="""Arguments for load_environment, as JSON: '{"k": 1}'"""
    ),
    num_examples: int = typer.Option(
        3, "--num-examples", "-n", min=1, help="Examples the rollout checks use"
    ),
    min_gold_reward: float = typer.Option(
        1.0, "--min-gold-reward", help="Reward every gold (oracle) rollout must reach"
    ),
    max_no_op_reward: float = typer.Option(
        0.0, "--max-no-op-reward", help="The most a do-nothing answer may score"
    ),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds allowed per check"),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Validate an environment: an installed id or a package directory (exit 1 on failure)."""
    from pathlib import Path

    from cli.eval_flags import json_arg
    from verifiers.testing.check import check_environment

    args = json_arg(env_args, "-a/--env-args")
    quiet = contextlib.ExitStack()
    if as_json:  # stdout carries only the JSON: what the environment prints goes to stderr
        quiet.enter_context(contextlib.redirect_stdout(sys.stderr))
    with quiet:
        target: str | Environment = env
        if Path(env).is_dir():
            target = _load_from_directory(Path(env), args)
            args = {}
        try:
            report = check_environment(
                target,
                env_args=args,
                num_examples=num_examples,
                min_gold_reward=min_gold_reward,
                max_no_op_reward=max_no_op_reward,
                timeout_s=timeout,
            )
        finally:
            if not isinstance(target, str):  # built here: run its teardown handlers
                import asyncio

                asyncio.run(target.close())
    load = report["load"]
    if load.error_type in ("EnvironmentNotFoundError", "ConfigError"):
        raise CLIError(load.message, exit_code=2)
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    else:
        _print_table(report)
    if not report.ok:
        failed = ", ".join(r.name for r in report.failures)
        print(
            f"{report.env_id}: {plural(len(report.failures), 'check')} failed: {failed}",
            file=sys.stderr,
        )
        raise SystemExit(1)


def _load_from_directory(path: Path, env_args: dict[str, object]) -> Environment:
    """Build the environment of the package in ``path`` (not installed) from the entry point
    its ``pyproject.toml`` declares."""
    import importlib
    import tomllib

    from verifiers.envs.environment import Environment
    from verifiers.errors import ConfigError
    from verifiers.loading import _check_args, _v1_module_loader, declared_entry_point

    pyproject = path / "pyproject.toml"
    if not pyproject.is_file():
        raise CLIError(
            f"{path} has no pyproject.toml", hint="scaffold one with `vf env init`", exit_code=2
        )
    try:
        meta = tomllib.loads(pyproject.read_text("utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise CLIError(f"{pyproject} is not valid TOML: {e}", exit_code=2) from None
    try:
        name, value = declared_entry_point(meta, pyproject)
    except ConfigError as e:
        raise CLIError(str(e), exit_code=2) from None
    module_name, _, attr = value.partition(":")
    sys.path.insert(0, str(path.resolve()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise CLIError(f"cannot import {module_name!r} from {path}: {e}", exit_code=2) from None
    loader = getattr(module, attr or "load_environment", None)
    if loader is None and not attr:  # `name = "module"`: a verifiers.v1 environment module
        try:
            loader = _v1_module_loader(module, value)
        except ConfigError as e:
            raise CLIError(str(e), exit_code=2) from None
    if not callable(loader):
        raise CLIError(f"{module_name} has no callable {attr or 'load_environment'!r}", exit_code=2)
    _check_args(name, loader, dict(env_args))
    env = loader(**env_args)
    if not isinstance(env, Environment):
        raise CLIError(
            f"{value} returned {type(env).__name__}, not a verifiers Environment", exit_code=2
        )
    env.env_id = name
    env.env_args = dict(env_args)
    return env


def _print_table(report: CheckReport) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"vf env validate {report.env_id}", title_justify="left")
    table.add_column("check", style="bold")
    table.add_column("result")
    table.add_column("time", justify="right")
    table.add_column("details", overflow="fold")
    for r in report.results:
        table.add_row(
            r.name,
            f"[{_STYLE[r.status]}]{r.status}[/]",
            f"{r.duration_s:.2f}s" if r.status != "skip" or r.duration_s else "",
            r.message,
        )
    console = Console()
    console.print(table)
    verdict = "[green]ok[/]" if report.ok else "[bold red]FAILED[/]"
    console.print(f"{report.env_id}: {verdict}")
