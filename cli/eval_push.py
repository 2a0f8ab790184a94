"""``vf eval push RUN_DIR``: share an evaluation run on the hub's leaderboard.

The run goes up as one gzip stream (``metadata.json`` on the first line, then
``results.jsonl``) to ``PUT /api/v1/runs/RUN_ID``; pushing the same run again is a no-op.
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import typer

from cli._common import CLIError, handle_errors

HELP = "Share an evaluation run (a vf-eval run directory) on the hub's leaderboard."


def read_run(run_dir: Path) -> tuple[dict[str, Any], Path]:
    """The run's metadata and results file, or a clear error."""
    from verifiers.results import METADATA_FILE, RESULTS_FILE, config_hash

    meta_path, results = run_dir / METADATA_FILE, run_dir / RESULTS_FILE
    if not run_dir.is_dir() or not meta_path.is_file() or not results.is_file():
        raise CLIError(
            f"{run_dir} is not a run directory (it needs {METADATA_FILE} and {RESULTS_FILE})",
            "pass the directory vf-eval printed after `results:`; list runs with `vf view`",
            exit_code=2,
        )
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as e:
        raise CLIError(f"cannot read {meta_path}: {e}", exit_code=2) from None
    if not isinstance(meta, dict):
        raise CLIError(f"{meta_path} is not a JSON object", exit_code=2)
    if meta.get("status") == "running":
        raise CLIError(
            f"the run in {run_dir} has not finished (status: running)",
            "wait for it to finish, or resume it with `vf eval ... --resume`",
        )
    if not meta.get("run_id"):  # runs from before run ids: one derived from what identifies it
        seed = {"config": meta.get("config_hash"), "started_at": meta.get("started_at")}
        meta["run_id"] = config_hash(seed)[:32]
    return meta, results


def pack_run(meta: dict[str, Any], results: Path, dest: Path) -> None:
    """gzip(metadata line + results.jsonl), deterministic (no timestamp in the header)."""
    with dest.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(json.dumps(meta, separators=(",", ":"), default=str).encode() + b"\n")
        with results.open("rb") as src:
            while chunk := src.read(1024 * 1024):
                gz.write(chunk)


def push_run(run_dir: Path, *, env: str | None, allow_unverified: bool) -> dict[str, Any]:
    from verifiers.hub.client import HubClient

    meta, results = read_run(run_dir)
    client = HubClient()
    params: dict[str, str] = {}
    if env:
        params["project"] = env
    if allow_unverified:
        params["allow_unverified"] = "true"
    with tempfile.TemporaryDirectory(prefix="vf-push-") as tmp:
        packed = Path(tmp) / "run.jsonl.gz"
        pack_run(meta, results, packed)
        with packed.open("rb") as body:
            data = client.request(
                "PUT",
                f"/api/v1/runs/{meta['run_id']}",
                auth=True,
                params=params,
                content=body,
                headers={"Content-Type": "application/gzip"},
            )
    out: dict[str, Any] = data
    out["page"] = f"{client.url}{out.get('url', '')}"
    return out


def report(out: dict[str, Any]) -> None:
    verb = "pushed" if out.get("created") else "already on the hub:"
    pinned = out.get("pinned", out.get("verified"))  # `verified`: a hub before 0.4's rename
    badge = "" if pinned else " (unpinned)"
    if out.get("provenance") and pinned:
        badge = f" ({out['provenance']})"
    reward = out.get("avg_reward")
    shown = f"{reward:.4f}" if isinstance(reward, float) else "-"
    print(
        f"{verb} {out['owner']}/{out['name']} {out['version']} · {out['model']} · "
        f"{out['num_rollouts']} rollouts · mean reward {shown}{badge}\n{out['page']}"
    )


@handle_errors
def push_command(
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="The run directory."),
    env: str | None = typer.Option(
        None,
        "--env",
        help="OWNER/NAME on the hub, when the run's metadata does not name it.",
    ),
    allow_unverified: bool = typer.Option(
        False,
        "--allow-unverified",
        help="Push a run whose environment is not the hub's published wheel (listed as "
        "unverified).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the hub's answer as JSON."),
) -> None:
    out = push_run(run_dir, env=env, allow_unverified=allow_unverified)
    if as_json:
        sys.stdout.write(json.dumps(out) + "\n")
    else:
        report(out)


def push_main(args: list[str]) -> None:
    """``vf eval push ...`` (dispatched before ``vf eval ENV``)."""
    single = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    single.command(help=HELP)(push_command)
    single(args=args, prog_name="vf eval push")
