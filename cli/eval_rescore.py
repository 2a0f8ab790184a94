"""``vf eval rescore RUN_DIR``: score a saved run's completions again with the environment's
current rubric, without the model, into a new run directory linked to the original."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from cli._common import CLIError, handle_errors

HELP = (
    "Re-score a saved run with the environment's current rubric (no model calls): each rollout "
    "is replayed with its recorded model answers, so the state and sandbox results its rubric "
    "reads are recomputed; the result is a new run directory whose metadata names the original "
    "(rescored_from). Exits 1 when a record could not be replayed exactly (its reward is left "
    "as it was), unless --partial."
)


@handle_errors
def rescore_command(
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="The saved run's directory."),
    env: str | None = typer.Option(
        None,
        "--env",
        metavar="ENV_ID",
        help="Environment id or package directory (default: the run's env_id).",
    ),
    env_args: str | None = typer.Option(
        None, "--env-args", "-a", help="load_environment arguments as JSON (default: the run's)."
    ),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", "-o", help="Where to write the new run (default: beside RUN_DIR)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the new run's metadata as JSON."),
    partial: bool = typer.Option(
        False,
        "--partial",
        help="Exit 0 even when some records could not be replayed exactly (they keep their "
        "reward, marked not_rescorable).",
    ),
) -> None:
    import verifiers as vf
    from cli.eval_flags import json_arg
    from cli.eval_inputs import load_env

    if not run_dir.is_dir():
        raise CLIError(
            f"{run_dir} is not a directory", hint="pass a run directory from `vf eval ENV -s`"
        )
    kwargs = json_arg(env_args, "--env-args") if env_args is not None else None
    environment = None
    if env is not None:
        environment = load_env(env, kwargs or {}, install=False)
    result = vf.rescore_run(run_dir, environment, output_dir=output_dir, env_args=kwargs)
    meta = result.metadata
    outcome = meta.get("rescore") or {}
    skipped = int(outcome.get("not_rescorable") or 0)
    if as_json:
        sys.stdout.write(json.dumps({**meta, "path": str(result.path)}, default=str) + "\n")
        _refuse_partial(skipped, partial, outcome, result.path)
        return
    before = meta["rescored_from"]["avg_reward"]
    after = meta["summary"]["avg_reward"]
    old = {(str(r["example_id"]), r["rollout_index"]): r.get("reward") for r in _old(run_dir)}
    changed = sum(
        1
        for r in result.records
        if old.get((str(r["example_id"]), r["rollout_index"])) != r["reward"]
    )
    typer.echo(
        f"re-scored {len(result.records)} rollouts of {run_dir}: avg reward {before} -> {after} "
        f"({changed} rewards changed)"
    )
    typer.echo(f"new run: {result.path}")
    _refuse_partial(skipped, partial, outcome, result.path)


def _refuse_partial(skipped: int, partial: bool, outcome: dict[str, Any], path: object) -> None:
    if not skipped:
        return
    reasons = "; ".join(f"{n} x {why}" for why, n in (outcome.get("reasons") or {}).items())
    message = (
        f"{skipped} of {outcome.get('records')} records could not be replayed exactly and keep "
        f"their old reward (marked not_rescorable in {path}): {reasons}"
    )
    if partial:
        typer.echo(f"note: {message}", err=True)
        return
    raise CLIError(message, "pass --partial to accept a partly re-scored run")


def _old(run_dir: Path) -> list[dict[str, object]]:
    from verifiers.results import RESULTS_FILE, read_records

    return read_records(run_dir / RESULTS_FILE)


def rescore_main(args: list[str]) -> None:
    """``vf eval rescore ...`` (dispatched before ``vf eval ENV``)."""
    single = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    single.command(help=HELP)(rescore_command)
    single(args=args, prog_name="vf eval rescore")
