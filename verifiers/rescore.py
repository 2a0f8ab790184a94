"""Re-scoring a saved run without the model: ``vf.rescore_run`` / ``vf eval rescore RUN_DIR``.

Each saved rollout is **replayed** (:mod:`verifiers.replay`): the environment runs it again,
its model calls answered with the recorded assistant messages, so that the state fields and
sandbox artefacts its rubric reads are recomputed, not taken from the record; then the current
rubric scores it. The results go to a new run directory whose metadata links the original
(``rescored_from``) and counts the outcome (``rescore``: ``exact``, ``not_rescorable`` with
the reasons). A record whose replay is not exact keeps its reward as it was, marked
``rescore: {"status": "not_rescorable", "reason": ...}``: a reward is never written that was not
computed from a complete replay.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifiers.errors import ConfigError
from verifiers.replay import replay_records
from verifiers.results import METADATA_FILE, RESULTS_FILE, read_records, state_to_record, summarize

if TYPE_CHECKING:
    from verifiers.envs.environment import Environment
    from verifiers.evaluation import EvalResult

__all__ = ["rescore_run", "rescore_run_async"]

_RECORD_KEYS = {
    "example_id",
    "rollout_index",
    "task",
    "prompt",
    "completion",
    "answer",
    "info",
    "reward",
    "metrics",
    "reward_errors",
    "error",
    "stop_condition",
    "is_completed",
    "is_truncated",
    "num_turns",
    "usage",
    "timing",
}


def _read_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    import orjson

    meta_path = run_dir / METADATA_FILE
    if not meta_path.is_file() or not (run_dir / RESULTS_FILE).is_file():
        raise ConfigError(
            f"{run_dir} is not a run directory (it needs {METADATA_FILE} and {RESULTS_FILE}); "
            "pass the directory `vf eval ENV -s` printed"
        )
    try:
        metadata = orjson.loads(meta_path.read_bytes())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{meta_path} is unreadable ({e})") from None
    if not isinstance(metadata, dict) or not metadata.get("env_id"):
        raise ConfigError(f"{meta_path} names no env_id: cannot tell which rubric to use")
    records = read_records(run_dir / RESULTS_FILE)
    if not records:
        raise ConfigError(f"{run_dir / RESULTS_FILE} holds no finished rollouts to re-score")
    return metadata, records


def _resolved(path: Path) -> Path:
    return path.resolve()


async def rescore_run_async(
    run_dir: str | Path,
    env: Environment | None = None,
    *,
    output_dir: str | Path | None = None,
    env_args: dict[str, Any] | None = None,
    max_concurrent: int = 32,
) -> EvalResult:
    """Replay and score of the run in ``run_dir`` again with ``env``'s rubric (default:
    the environment the run names, loaded now) and save them as a new run (``output_dir``,
    default a fresh directory beside the original). Returns the new run's
    :class:`~verifiers.EvalResult`; ``metadata["rescored_from"]`` names the original."""
    from verifiers.evaluation import EvalResult
    from verifiers.loading import load_environment
    from verifiers.results import config_hash
    from verifiers.rundir import RunDir

    source = _resolved(Path(run_dir))
    metadata, records = _read_run(source)
    if env is None:
        args = metadata.get("env_args") or {} if env_args is None else env_args
        env = load_environment(str(metadata["env_id"]), **args)
    started = time.perf_counter()
    model = str(metadata.get("model") or "")
    sampling = metadata.get("sampling_args")
    outcomes = await replay_records(
        env,
        records,
        model=model,
        sampling_args=sampling if isinstance(sampling, dict) else None,
        max_concurrent=max_concurrent,
    )
    columns = [k for k in records[0] if k not in _RECORD_KEYS and k != "trajectory"]
    new_records: list[dict[str, Any]] = []
    reasons: dict[str, int] = {}
    for rec, outcome in zip(records, outcomes, strict=True):
        if outcome.state is not None:
            new = state_to_record(outcome.state, columns)
            new["rescore"] = {"status": "exact"}
            if outcome.note:
                new["rescore"]["note"] = outcome.note
        else:
            new = {**rec, "rescore": {"status": "not_rescorable", "reason": outcome.reason}}
            reasons[str(outcome.reason)] = reasons.get(str(outcome.reason), 0) + 1
        new_records.append(new)
    not_rescorable = sum(reasons.values())
    n = int(metadata.get("rollouts_per_example") or 1)
    summary = summarize(new_records, n, env.pass_threshold)
    new_meta = {
        **metadata,
        "run_id": uuid.uuid4().hex,
        "status": "completed",
        "started_at": datetime.now(UTC).isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "wall_time_s": round(time.perf_counter() - started, 3),
        "env_version": env.env_version,
        "rescored_from": {
            "path": str(source),
            "run_id": metadata.get("run_id"),
            "avg_reward": (metadata.get("summary") or {}).get("avg_reward"),
            "env_version": metadata.get("env_version"),
        },
        "summary": summary,
        "rescore": {
            "records": len(new_records),
            "exact": len(new_records) - not_rescorable,
            "not_rescorable": not_rescorable,
            "reasons": reasons,
        },
    }
    new_meta.pop("cache", None)
    digest = config_hash({"rescored_from": str(source), "at": new_meta["started_at"]})
    new_meta["config_hash"] = digest  # not the original's: `--resume` never picks this run
    if output_dir is not None:
        rd = RunDir.open(Path(output_dir))
        if (rd.path / RESULTS_FILE).exists():
            rd.close()
            raise ConfigError(f"{rd.path} already holds a run; pass an empty --output-dir")
    else:
        rd = RunDir.create(source.parent, digest)
    try:
        writer = rd.results_writer([])
        for rec in new_records:
            writer.write(rec)
        writer.close()
        rd.write_metadata(new_meta)
    finally:
        rd.close()
    return EvalResult(new_records, new_meta, rd.path)


def rescore_run(
    run_dir: str | Path,
    env: Environment | None = None,
    *,
    output_dir: str | Path | None = None,
    env_args: dict[str, Any] | None = None,
    max_concurrent: int = 32,
) -> EvalResult:
    """Blocking :func:`rescore_run_async`."""
    from verifiers.utils.async_utils import run_sync

    return run_sync(
        rescore_run_async(
            run_dir, env, output_dir=output_dir, env_args=env_args, max_concurrent=max_concurrent
        ),
        "rescore_run()",
        "await vf.rescore_run_async(...)",
    )
