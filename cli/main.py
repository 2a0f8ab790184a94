"""Entry points: ``vf`` (all commands) and ``vf-eval`` (same as ``vf eval``).

One registration style: each ``*_cmd`` module owns a ``typer.Typer`` named ``app`` and declares
its commands on it with ``@app.command(...)``; this module mounts those apps, with a name for a
command group (``vf env ...``) and without one for top-level commands (``vf eval``).
"""

from __future__ import annotations

import typer

from cli import (
    auth_cmd,
    cache_cmd,
    env_cmd,
    eval_cmd,
    hub_cmd,
    sandbox_cmd,
    serve_cmd,
    train_cmd,
    validate_cmd,
    view_cmd,
)
from cli._common import plain_usage_lines
from cli.eval_flags import cache_flag_argv

plain_usage_lines()

app = typer.Typer(
    name="vf",
    help="Environments for LLM RL and evaluation: evaluate, train, share through a hub.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

env_cmd.app.add_typer(validate_cmd.app)
app.add_typer(eval_cmd.app)
app.add_typer(view_cmd.app)
app.add_typer(env_cmd.app, name="env", help="Build, push, install and inspect environments.")
app.add_typer(hub_cmd.app, name="hub", help="Run and administer a hub server.")
app.add_typer(sandbox_cmd.app, name="sandbox", help="Run commands in isolated sandboxes.")
app.add_typer(auth_cmd.app)
app.add_typer(cache_cmd.app, name="cache", help=cache_cmd.HELP)
app.add_typer(train_cmd.app)
app.add_typer(serve_cmd.app, name="serve", help=serve_cmd.HELP)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
) -> None:
    """vf: the verifiers command line."""


def main() -> None:
    import sys

    if sys.argv[1:3] == ["eval", "push"]:  # `vf eval push RUN_DIR`, beside `vf eval ENV`
        from cli.eval_push import push_main

        push_main(sys.argv[3:])
        return
    if sys.argv[1:3] == ["eval", "rescore"]:  # `vf eval rescore RUN_DIR`
        from cli.eval_rescore import rescore_main

        rescore_main(sys.argv[3:])
        return
    if sys.argv[1:3] == ["eval", "runs"]:  # `vf eval runs list|hide|unhide|delete ...`
        from cli.eval_runs import runs_main

        runs_main(sys.argv[3:])
        return
    if sys.argv[1:2] == ["eval"]:
        sys.argv[2:] = cache_flag_argv(sys.argv[2:])
    app()


def eval_main() -> None:
    """``vf-eval ...`` is ``vf eval ...``: the eval app alone (one command, so no subcommand)."""
    import sys

    sys.argv[1:] = cache_flag_argv(sys.argv[1:])
    eval_cmd.app(prog_name="vf-eval")


if __name__ == "__main__":
    main()
