"""Evaluate an environment against a model: ``vf.evaluate`` / ``vf.evaluate_async``.

A run drives ``num_examples x rollouts_per_example`` rollouts with at most ``max_concurrent``
rollouts in flight (concurrency counts rollouts, not groups). Every rollout's record is
appended to ``results.jsonl`` as it finishes; ``metadata.json`` holds the configuration and the
summary (counts, averages, standard error, pass@k, usage, timing, versions). Errors are
recorded per rollout and the run goes on. ``resume=True`` reuses the run directory of the same
configuration and runs only what is missing or errored.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import platform
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from verifiers.clients.base import Client, as_client
from verifiers.errors import ConfigError
from verifiers.results import (
    METADATA_FILE,
    RESULTS_FILE,
    ResultsWriter,
    config_hash,
    read_records,
    state_to_record,
    summarize,
    write_json_atomic,
)
from verifiers.types import SamplingArgs, State

if TYPE_CHECKING:
    from verifiers.envs.environment import Environment

__all__ = ["EvalResult", "evaluate", "evaluate_async"]

ProgressCallback = Callable[[int, int, dict[str, Any]], None]


@dataclass(slots=True)
class EvalResult:
    """What a run produced: one record per rollout, the metadata, and the run directory."""

    records: list[dict[str, Any]]
    metadata: dict[str, Any]
    path: Path | None = None
    states: list[State] = field(default_factory=list)

    @property
    def avg_reward(self) -> float | None:
        value = self.metadata["summary"]["avg_reward"]
        return None if value is None else float(value)

    @property
    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = self.metadata["summary"]
        return summary

    def __getitem__(self, key: str) -> Any:
        """Classic ``GenerateOutputs`` access: ``result["outputs"]`` (the records) and
        ``result["metadata"]`` (the metadata plus the classic summary keys ``avg_reward``,
        ``avg_metrics``, ``avg_error``, ``pass_at_k``, ``pass_threshold``, ``time``,
        ``base_url``, ``usage`` and ``path_to_save``)."""
        if key == "outputs":
            return self.records
        if key == "metadata":
            return self._classic_metadata()
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in ("outputs", "metadata")

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def _classic_metadata(self) -> dict[str, Any]:
        summary = self.summary
        rollouts = summary["num_rollouts"]
        return {
            **self.metadata,
            "avg_reward": summary["avg_reward"],
            "avg_metrics": summary["metrics"],
            "avg_error": summary["num_errors"] / rollouts if rollouts else 0.0,
            "pass_at_k": summary["pass_at_k"],
            "pass_threshold": summary["pass_threshold"],
            "time": self.metadata.get("wall_time_s"),
            "base_url": self.metadata.get("endpoint"),
            "usage": summary["usage"],
            "path_to_save": self.path,
        }


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text).strip("_") or "run"


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=2, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _versions() -> dict[str, str | None]:
    from importlib import metadata

    import verifiers

    def ver(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "python": platform.python_version(),
        "verifiers": verifiers.__version__,
        "openai": ver("openai"),
        "datasets": ver("datasets"),
    }


def _base_url_of(client: Client) -> str | None:
    """The base URL a client talks to, when it has one (recorded in the metadata)."""
    url = getattr(client, "base_url", None)
    if url is None:
        url = getattr(getattr(client, "client", None), "base_url", None)  # OpenAIClient
    return str(url).rstrip("/") if url is not None else None


def _check_writable(run_dir: Path) -> None:
    """Create the run directory, or say clearly why it cannot hold the results."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise ConfigError(
            f"cannot create the run directory {run_dir}: {reason}; choose another output "
            "directory (-o DIR)"
        ) from None
    if not os.access(run_dir, os.W_OK | os.X_OK):
        raise ConfigError(
            f"cannot write to the run directory {run_dir}: permission denied; choose another "
            "output directory (-o DIR)"
        )


def _new_run_dir(base: Path, digest: str) -> Path:
    """A fresh ``base/TIMESTAMP-HASH`` directory; runs started in the same second get a
    numbered suffix instead of sharing one."""
    _check_writable(base)
    name = f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{digest[:8]}"
    for i in itertools.count():
        run_dir = base / (f"{name}-{i}" if i else name)
        try:
            run_dir.mkdir()
        except FileExistsError:
            continue
        return run_dir
    raise AssertionError("unreachable")  # pragma: no cover


def _lock_run_dir(run_dir: Path) -> IO[bytes]:
    """Hold an exclusive lock on the run directory for the run (released when the file is
    closed or the process dies), so that two runs never write into one directory."""
    import fcntl

    lock = (run_dir / ".lock").open("wb")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise ConfigError(
            f"another run is writing to {run_dir}; wait for it to finish or choose another "
            "output directory (-o DIR)"
        ) from None
    return lock


def _check_same_config(run_dir: Path, config: dict[str, Any], digest: str) -> None:
    """Refuse to resume a run directory made with another configuration, naming what
    differs."""
    import orjson

    meta_path = run_dir / METADATA_FILE
    if not meta_path.is_file():
        return
    try:
        old = orjson.loads(meta_path.read_bytes())
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"cannot resume {run_dir}: its {METADATA_FILE} is unreadable ({e}); delete it to "
            f"resume from {RESULTS_FILE} alone, or use a new output directory"
        ) from None
    if not isinstance(old, dict) or old.get("config_hash") in (None, digest):
        return
    recorded = old.get("config")
    before: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    changes = [
        f"{key} {before.get(key)!r} -> {value!r}"
        for key, value in config.items()
        if orjson.dumps(before.get(key), option=orjson.OPT_SORT_KEYS)
        != orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    ]
    raise ConfigError(
        f"cannot resume {run_dir}: it was run with another configuration "
        f"({'; '.join(changes) or 'settings differ'}); use the same flags or a new output "
        "directory"
    )


def _run_id(run_dir: Path | None) -> str:
    """The id of the run being resumed (kept, so a pushed run stays one run), else a new one."""
    import orjson

    try:
        old = orjson.loads((run_dir / METADATA_FILE).read_bytes()) if run_dir else None
    except (OSError, ValueError):
        old = None
    rid = old.get("run_id") if isinstance(old, dict) else None
    return rid if isinstance(rid, str) and rid else uuid.uuid4().hex


def _find_resumable(base: Path, digest: str) -> Path | None:
    if not base.is_dir():
        return None
    candidates = sorted((p for p in base.iterdir() if p.is_dir()), reverse=True)
    for run_dir in candidates:
        meta = run_dir / METADATA_FILE
        if not meta.is_file():
            continue
        try:
            import orjson

            data = orjson.loads(meta.read_bytes())
        except (OSError, ValueError):
            continue
        if data.get("config_hash") == digest:
            return run_dir
    return None


async def evaluate_async(
    env: Environment | str,
    client: Client | Any = None,
    model: str = "oracle",
    *,
    num_examples: int = -1,
    rollouts_per_example: int = 1,
    max_concurrent: int = 32,
    sampling_args: SamplingArgs | None = None,
    env_args: dict[str, Any] | None = None,
    save_results: bool = False,
    output_dir: str | Path | None = None,
    results_root: str | Path = "outputs/evals",
    resume: bool = False,
    state_columns: Sequence[str] = (),
    on_progress: ProgressCallback | None = None,
    endpoint: str | None = None,
    keep_states: bool = False,
    inputs: Any = None,
) -> EvalResult:
    """Evaluate ``env`` (an Environment or an environment id) with ``model``.

    Args:
        env: an :class:`Environment`, or an id for :func:`verifiers.load_environment`.
        client: a :class:`verifiers.Client`, an ``openai.AsyncOpenAI``, a base URL, or an object
            with ``for_group()`` returning a client per example (replica round-robin). ``None``
            with ``model="oracle"`` uses the built-in oracle.
        model: the model name sent to the endpoint (``"oracle"``: the gold-answer model).
        num_examples: first N rows of the eval dataset (``-1``: all).
        rollouts_per_example: rollouts per row (pass@k is reported for k = 1..this).
        max_concurrent: rollouts in flight at once (``-1``: no limit).
        sampling_args: merged over the environment's defaults.
        save_results: write ``results.jsonl`` and ``metadata.json``.
        output_dir: the run directory (default ``results_root/ENV--MODEL/TIMESTAMP-HASH``).
        resume: continue the newest run with the same configuration (or ``output_dir``):
            finished rollouts are kept, missing and errored ones run again.
        state_columns: extra state keys copied into each record.
        on_progress: called as ``on_progress(done, total, record)`` after each rollout.
        endpoint: the base URL recorded in metadata (default: the client's, when it has one).
        keep_states: also return the raw states (for trainers and tests).
        inputs: rows to run instead of the eval dataset (``Environment.generate``).
    """
    from verifiers.clients.oracle import OracleClient
    from verifiers.envs.environment import Environment
    from verifiers.loading import load_environment

    if isinstance(env, str):
        env = load_environment(env, **(env_args or {}))
    elif env_args:
        raise ConfigError("env_args only apply when env is an environment id")
    if not isinstance(env, Environment):
        raise ConfigError(f"env must be an Environment or an id, not {type(env).__name__}")
    if rollouts_per_example < 1:
        raise ConfigError(f"rollouts_per_example must be >= 1, got {rollouts_per_example}")
    if max_concurrent == 0 or max_concurrent < -1:
        raise ConfigError(f"max_concurrent must be >= 1 or -1 (no limit), got {max_concurrent}")
    if client is None:
        if model != "oracle":
            raise ConfigError(f"no client given for model {model!r}; pass a client or a base URL")
        client = OracleClient()
    pool = client if hasattr(client, "for_group") and not isinstance(client, Client) else None
    base_client = None if pool is not None else as_client(client)
    if model == "oracle" and base_client is not None and not isinstance(base_client, OracleClient):
        base_client = OracleClient()
    if endpoint is None and base_client is not None:
        endpoint = _base_url_of(base_client)

    rows = env.format_inputs(inputs) if inputs is not None else env.get_rows("eval", num_examples)
    if inputs is not None and num_examples >= 0:
        rows = rows[:num_examples]
    if not rows:
        raise ConfigError(f"environment {env.env_id!r} has no rows to evaluate")
    sampling = {**env.sampling_args, **(sampling_args or {})}
    n = rollouts_per_example
    config = {
        "env_id": env.env_id,
        "env_args": env.env_args,
        "model": model,
        "endpoint": endpoint,
        "sampling_args": sampling,
        "num_examples": len(rows),
        "rollouts_per_example": n,
    }
    digest = config_hash(config)
    run_dir: Path | None = None
    lock: IO[bytes] | None = None
    kept: list[dict[str, Any]] = []
    if save_results or resume or output_dir is not None:
        base = Path(results_root) / f"{_slug(env.env_id)}--{_slug(model)}"
        if output_dir is not None:
            run_dir = Path(output_dir)
        elif resume:
            run_dir = _find_resumable(base, digest)
        if run_dir is not None and resume:
            _check_same_config(run_dir, config, digest)
            kept = _resumable_records(
                read_records(run_dir / RESULTS_FILE), env.has_group_rewards, n
            )
        if run_dir is None:
            run_dir = _new_run_dir(base, digest)
        else:
            _check_writable(run_dir)
        lock = _lock_run_dir(run_dir)
    done_keys = {(r["example_id"], r["rollout_index"]) for r in kept}

    jobs: list[tuple[dict[str, Any], list[int]]] = []
    for row in rows:
        missing = [i for i in range(n) if (row["example_id"], i) not in done_keys]
        if missing:
            jobs.append((row, missing))
    total = len(rows) * n
    records: list[dict[str, Any]] = list(kept)
    states: list[State] = []
    writer = ResultsWriter(run_dir / RESULTS_FILE, keep=kept) if run_dir is not None else None
    started_at = datetime.now(UTC).isoformat()
    t0 = time.perf_counter()
    metadata: dict[str, Any] = {
        "run_id": _run_id(run_dir) if resume else uuid.uuid4().hex,
        "config_hash": digest,
        "config": config,
        "env_id": env.env_id,
        "env_args": env.env_args,
        "env_version": env.env_version,
        "env_distribution": env.env_distribution,
        "env_wheel_sha256": env.env_wheel_sha256,
        "model": model,
        "endpoint": endpoint,
        "sampling_args": sampling,
        "num_examples": len(rows),
        "rollouts_per_example": n,
        "max_concurrent": max_concurrent,
        "started_at": started_at,
        "status": "running",
        "versions": _versions(),
        "git_revision": _git_revision(),
        "resumed_records": len(kept),
    }
    if run_dir is not None:
        write_json_atomic(
            run_dir / METADATA_FILE,
            {**metadata, "summary": summarize(records, n, env.pass_threshold)},
        )

    done = len(kept)

    def finish(state: State) -> None:
        nonlocal done
        record = state_to_record(state, state_columns)
        records.append(record)
        if keep_states:
            states.append(state)
        if writer is not None:
            writer.write(record)
        done += 1
        if on_progress is not None:
            on_progress(done, total, record)

    def client_for_group() -> Client:
        if pool is not None:
            return as_client(pool.for_group())
        assert base_client is not None
        return base_client

    limit = max_concurrent if max_concurrent > 0 else max(total, 1)
    status = "completed"
    try:
        if env.has_group_rewards:
            await _run_groups(env, jobs, client_for_group, model, sampling, limit, finish)
        else:
            await _run_rollouts(env, jobs, client_for_group, model, sampling, limit, finish)
    except BaseException:
        status = "interrupted"
        raise
    finally:
        if writer is not None:
            writer.close()
        metadata["status"] = status
        metadata["finished_at"] = datetime.now(UTC).isoformat()
        metadata["wall_time_s"] = round(time.perf_counter() - t0, 3)
        metadata["summary"] = summarize(records, n, env.pass_threshold)
        metadata["summary"]["request_failures"] = _client_stats(pool, base_client)
        if run_dir is not None:
            write_json_atomic(run_dir / METADATA_FILE, metadata)
        if lock is not None:
            lock.close()
        if pool is None and base_client is not None and base_client is not client:
            await base_client.close()
    records.sort(key=lambda r: (str(r["example_id"]), r["rollout_index"]))
    return EvalResult(records=records, metadata=metadata, path=run_dir, states=states)


def _client_stats(pool: Any, client: Client | None) -> dict[str, int]:
    """Transient request failures the clients retried (or gave up on), by kind."""
    clients = list(getattr(pool, "clients", [])) if pool is not None else [client]
    total: dict[str, int] = {}
    for c in clients:
        for kind, count in (getattr(c, "stats", None) or {}).items():
            total[kind] = total.get(kind, 0) + int(count)
    return total


def _resumable_records(
    records: list[dict[str, Any]], by_group: bool, n: int
) -> list[dict[str, Any]]:
    """Records worth keeping on resume: finished without error, each key once; with group
    rewards only complete groups (a group is scored together)."""
    seen: dict[tuple[Any, int], dict[str, Any]] = {}
    for r in records:
        if r.get("error"):
            continue
        seen[(r["example_id"], r["rollout_index"])] = r
    kept = list(seen.values())
    if by_group:
        counts: dict[Any, int] = {}
        for r in kept:
            counts[r["example_id"]] = counts.get(r["example_id"], 0) + 1
        kept = [r for r in kept if counts[r["example_id"]] >= n]
    return kept


async def _run_rollouts(
    env: Environment,
    jobs: list[tuple[dict[str, Any], list[int]]],
    client_for_group: Callable[[], Client],
    model: str,
    sampling: SamplingArgs,
    limit: int,
    finish: Callable[[State], None],
) -> None:
    """Independent rollouts: ``limit`` workers pull (row, index) pairs; each record is written
    as soon as its rollout is scored."""
    work: list[tuple[dict[str, Any], int, Client]] = []
    for row, indices in jobs:
        client = client_for_group()
        work.extend((row, i, client) for i in indices)
    it = iter(work)

    async def worker() -> None:
        for row, index, client in it:
            state = await env.run_rollout(row, client, model, sampling, rollout_index=index)
            finish(state)

    await _gather_or_cancel([worker() for _ in range(min(limit, len(work)))])


async def _run_groups(
    env: Environment,
    jobs: list[tuple[dict[str, Any], list[int]]],
    client_for_group: Callable[[], Client],
    model: str,
    sampling: SamplingArgs,
    limit: int,
    finish: Callable[[State], None],
) -> None:
    """Groups scored together; at most ``limit`` rollouts in flight across groups."""
    rollout_sem = asyncio.Semaphore(limit)
    it = iter(jobs)

    async def worker() -> None:
        for row, indices in it:
            states = await env.run_group(
                row,
                client_for_group(),
                model,
                len(indices),
                sampling,
                semaphore=rollout_sem,
                first_index=0,
            )
            for state, index in zip(states, indices, strict=True):
                state["rollout_index"] = index
                finish(state)

    size = max(len(idx) for _, idx in jobs) if jobs else 1
    workers = min(len(jobs), max(1, -(-limit // size)) + 1)
    await _gather_or_cancel([worker() for _ in range(workers)])


async def _gather_or_cancel(coros: list[Any]) -> None:
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def evaluate(
    env: Environment | str, client: Client | Any = None, model: str = "oracle", **kwargs: Any
) -> EvalResult:
    """Blocking :func:`evaluate_async`. Refuses to run inside a running event loop (use
    ``await evaluate_async(...)`` there). Successive calls share one event loop per thread, so
    the same ``AsyncOpenAI`` client can be passed to each."""
    from verifiers.utils.async_utils import run_sync

    return run_sync(
        evaluate_async(env, client, model, **kwargs),
        "evaluate()",
        "await vf.evaluate_async(...)",
    )
