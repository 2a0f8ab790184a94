"""Entry points: ``vf`` (all commands) and ``vf-eval`` (same as ``vf eval``)."""

from __future__ import annotations

import typer

from cli import auth_cmd, env_cmd, eval_cmd, hub_cmd, sandbox_cmd, train_cmd, validate_cmd
from cli._common import plain_usage_lines

plain_usage_lines()

app = typer.Typer(
    name="vf",
    help="Environments for LLM RL and evaluation: evaluate, train, share through a hub.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

app.command("eval", help=eval_cmd.HELP)(eval_cmd.eval_command)
env_cmd.app.command(
    "validate", help="Model-free checks of an environment: loads, columns, gold answers, rollouts."
)(validate_cmd.validate_command)
app.add_typer(env_cmd.app, name="env", help="Build, push, install and inspect environments.")
app.add_typer(hub_cmd.app, name="hub", help="Run and administer a hub server.")
app.add_typer(sandbox_cmd.app, name="sandbox", help="Run commands in isolated sandboxes.")
auth_cmd.register(app)
train_cmd.register(app)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
) -> None:
    """vf: the verifiers command line."""


def main() -> None:
    app()


def eval_main() -> None:
    """``vf-eval ...`` is ``vf eval ...``."""
    single = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    single.command(help=eval_cmd.HELP)(eval_cmd.eval_command)
    single(prog_name="vf-eval")
