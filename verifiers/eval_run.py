"""Running an evaluation plan and finishing it.

- :class:`Recorder`: takes each finished rollout (record, results file, progress);
- :func:`run_plan`: independent rollouts, or whole groups when the rubric scores groups, with
  at most ``max_concurrent`` rollouts in flight; or, given an :class:`Executor` (e.g.
  :class:`verifiers.distributed.RayExecutor`), the same jobs run elsewhere and their records
  come back to the same recorder;
- :func:`start_run` / :func:`finish_run`: the run's metadata before and after, the results
  file opened and closed, the run directory released.
"""

from __future__ import annotations

import asyncio
import platform
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from verifiers.clients.base import Client
from verifiers.errors import InfraError, InvalidModelResponseError
from verifiers.eval_plan import Clients, Job, RunPlan
from verifiers.results import ResultsWriter, state_to_record, summarize
from verifiers.types import SamplingArgs, State

if TYPE_CHECKING:
    from verifiers.adaptive import AdaptiveLimit
    from verifiers.envs.environment import Environment

__all__ = [
    "Executor",
    "ProgressCallback",
    "Recorder",
    "Run",
    "finish_run",
    "run_plan",
    "start_metadata",
    "start_run",
]

ProgressCallback = Callable[[int, int, dict[str, Any]], None]


class Recorder:
    """Takes each finished rollout: its record (kept in order of finishing, appended to the
    results file), its state when asked for, and the progress callback."""

    def __init__(
        self,
        plan: RunPlan,
        state_columns: Sequence[str] = (),
        keep_states: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        self.records: list[dict[str, Any]] = list(plan.kept)
        self.states: list[State] = []
        self.retries = 0  # rollouts re-run after an error (--retry-on-error)
        self.recovered = 0  # of the rollouts re-run, those that finished without an error
        self.total = plan.total
        self._columns = state_columns
        self._keep_states = keep_states
        self._on_progress = on_progress
        self.writer: ResultsWriter | None = (
            plan.run_dir.results_writer(plan.kept) if plan.run_dir is not None else None
        )

    @property
    def state_columns(self) -> Sequence[str]:
        return self._columns

    def __call__(self, state: State) -> None:
        record = state_to_record(state, self._columns)
        if self._keep_states:
            self.states.append(state)
        self.add_record(record)

    def add_record(self, record: dict[str, Any]) -> None:
        """Take a finished rollout's record (made where it ran, e.g. on a Ray worker)."""
        self.records.append(record)
        if self.writer is not None:
            self.writer.write(record)
        if self._on_progress is not None:
            self._on_progress(len(self.records), self.total, record)


class Executor(Protocol):
    """Runs a plan's jobs somewhere else (another process, a cluster) and hands each
    finished rollout's record to ``add_record``; the caller keeps the run directory."""

    backend: str

    async def run(
        self,
        plan: RunPlan,
        model: str,
        max_concurrent: int,
        add_record: Callable[[dict[str, Any]], None],
        state_columns: Sequence[str] = (),
    ) -> None: ...

    def summary(self) -> dict[str, Any]: ...


def retryable(state: State) -> bool:
    """Whether the rollout ended with an error worth another attempt: an
    :class:`~verifiers.InfraError` (endpoint, sandbox) or an invalid model response (a reward
    function's error is in ``reward_errors`` and is never retried)."""
    error = state.get("error")
    if not isinstance(error, Mapping):
        return False
    name = str(error.get("type") or "")
    return any(_has_subclass_named(base, name) for base in (InfraError, InvalidModelResponseError))


def _has_subclass_named(base: type, name: str) -> bool:
    """Whether ``base`` or a class derived from it (those defined so far: an error recorded
    by name was raised, so its class is loaded) is called ``name``."""
    subclasses: list[type] = base.__subclasses__()
    return base.__name__ == name or any(_has_subclass_named(c, name) for c in subclasses)


def _scores_by_itself(rubric: object) -> bool:
    """Whether the rubric's class (an environment's own) overrides ``score_group`` or
    ``score_rollout``: its groups are then scored with ``score_group``, as 0.3.x's evaluation
    always does, so an override gets the calls it got there."""
    for name in ("score_group", "score_rollout"):
        method = getattr(type(rubric), name, None)
        module = getattr(method, "__module__", None) or ""
        if method is not None and not module.startswith("verifiers."):
            return True
    return False


async def run_plan(
    env: Environment,
    plan: RunPlan,
    clients: Clients,
    model: str,
    max_concurrent: int,
    finish: Recorder,
    executor: Executor | None = None,
    retry_on_error: int = 0,
    adaptive: AdaptiveLimit | None = None,
) -> None:
    """Run every job: independent rollouts, or whole groups when the rubric scores groups;
    on ``executor`` when one is given. A rollout that ended in an error runs again up to
    ``retry_on_error`` times."""
    if executor is not None:
        await executor.run(plan, model, max_concurrent, finish.add_record, finish.state_columns)
        return
    limit = max_concurrent if max_concurrent > 0 else max(plan.total, 1)
    grouped = env.has_group_rewards or _scores_by_itself(env.rubric)
    runner = _run_groups if grouped else _run_rollouts
    await runner(
        env,
        plan.jobs,
        clients.for_group,
        model,
        plan.settings.sampling_args,
        limit,
        finish,
        retry_on_error,
        adaptive,
    )


async def _run_rollouts(
    env: Environment,
    jobs: list[Job],
    client_for_group: Callable[[], Client],
    model: str,
    sampling: SamplingArgs,
    limit: int,
    finish: Recorder,
    retry_on_error: int = 0,
    adaptive: AdaptiveLimit | None = None,
) -> None:
    """Independent rollouts: ``limit`` workers pull (row, index) pairs; each record is written
    as soon as its rollout is scored (after its re-runs, when it errored)."""
    work: list[tuple[dict[str, Any], int, Client]] = []
    for row, indices in jobs:
        client = client_for_group()
        work.extend((row, i, client) for i in indices)
    it = iter(work)

    async def worker() -> None:
        for row, index, client in it:
            if adaptive is not None:
                async with adaptive:
                    state = await env.run_rollout(row, client, model, sampling, rollout_index=index)
            else:
                state = await env.run_rollout(row, client, model, sampling, rollout_index=index)
            tries = 0
            while tries < retry_on_error and retryable(state):
                tries += 1
                finish.retries += 1
                state = await env.run_rollout(row, client, model, sampling, rollout_index=index)
            if tries and not retryable(state):
                finish.recovered += 1
            finish(state)

    workers = adaptive.upper if adaptive is not None else limit
    await _gather_or_cancel([worker() for _ in range(min(workers, len(work)))])


async def _run_groups(
    env: Environment,
    jobs: list[Job],
    client_for_group: Callable[[], Client],
    model: str,
    sampling: SamplingArgs,
    limit: int,
    finish: Recorder,
    retry_on_error: int = 0,
    adaptive: AdaptiveLimit | None = None,
) -> None:
    """Groups scored together; at most ``limit`` rollouts in flight across groups. Errored
    rollouts of a group run again (unscored), then the group is scored again as a whole."""
    if adaptive is not None:
        limit = adaptive.upper
    rollout_sem: Any = adaptive if adaptive is not None else asyncio.Semaphore(limit)
    it = iter(jobs)

    async def rerun(row: dict[str, Any], client: Client, index: int) -> State:
        async with rollout_sem:
            return await env.run_rollout(
                row, client, model, sampling, rollout_index=index, score=False
            )

    async def worker() -> None:
        for row, indices in it:
            client = client_for_group()
            states = await env.run_group(
                row,
                client,
                model,
                len(indices),
                sampling,
                semaphore=rollout_sem,
                first_index=0,
            )
            retried: set[int] = set()
            for _ in range(retry_on_error):
                failed = [i for i, s in enumerate(states) if retryable(s)]
                if not failed:
                    break
                finish.retries += len(failed)
                retried.update(failed)
                again = await asyncio.gather(
                    *(rerun(row, client, states[i]["rollout_index"]) for i in failed)
                )
                for i, state in zip(failed, again, strict=True):
                    states[i] = state
            if retried:
                for s in states:  # scored again together, as the group it is
                    s["reward"], s["metrics"], s["reward_errors"] = None, {}, []
                await env._score(states, group=True)
                finish.recovered += sum(1 for i in retried if not retryable(states[i]))
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


# ---------------------------------------------------------------------- starting, finishing


@dataclass(slots=True)
class Run:
    """A started run: its metadata (rewritten when it finishes), its recorder, its clock."""

    metadata: dict[str, Any]
    recorder: Recorder
    started: float = field(default_factory=lambda: time.perf_counter())
    adaptive: AdaptiveLimit | None = None


def start_run(
    env: Environment,
    plan: RunPlan,
    model: str,
    endpoint: str | None,
    max_concurrent: int,
    recorder_args: Mapping[str, Any],
) -> Run:
    """Open the results file and write the metadata of a run that has begun (status
    ``running``); on failure the run directory is released."""
    try:
        recorder = Recorder(plan, **recorder_args)
        metadata = start_metadata(env, plan, model, endpoint, max_concurrent)
        if plan.run_dir is not None:
            n = plan.settings.rollouts_per_example
            summary = summarize(recorder.records, n, env.pass_threshold)
            plan.run_dir.write_metadata({**metadata, "summary": summary})
    except BaseException:
        if plan.run_dir is not None:
            plan.run_dir.close()
        raise
    return Run(metadata, recorder)


def start_metadata(
    env: Environment, plan: RunPlan, model: str, endpoint: str | None, max_concurrent: int
) -> dict[str, Any]:
    """The metadata of a run that has just started (status ``running``)."""
    resumed = plan.run_dir.previous_run_id() if plan.run_dir is not None and plan.kept else None
    return {
        "run_id": resumed or uuid.uuid4().hex,
        "config_hash": plan.digest,
        "config": plan.config,
        "env_id": env.env_id,
        "env_args": env.env_args,
        "env_version": env.env_version,
        "env_distribution": env.env_distribution,
        "env_wheel_sha256": env.env_wheel_sha256,
        "model": model,
        "endpoint": endpoint,
        "sampling_args": plan.settings.sampling_args,
        "num_examples": len(plan.rows),
        "rollouts_per_example": plan.settings.rollouts_per_example,
        "max_concurrent": max_concurrent,
        "started_at": datetime.now(UTC).isoformat(),
        "status": "running",
        "versions": _versions(),
        "git_revision": _git_revision(),
        "resumed_records": len(plan.kept),
    }


def finish_run(env: Environment, plan: RunPlan, run: Run, clients: Clients, status: str) -> None:
    """Close the results file, write the final metadata (status, timing, summary) and
    release the run directory."""
    metadata, recorder = run.metadata, run.recorder
    try:
        if recorder.writer is not None:
            recorder.writer.close()
        metadata["status"] = status
        metadata["finished_at"] = datetime.now(UTC).isoformat()
        # microseconds: a run shorter than a millisecond does not read as taking no time
        metadata["wall_time_s"] = round(time.perf_counter() - run.started, 6)
        metadata["summary"] = summarize(
            recorder.records, plan.settings.rollouts_per_example, env.pass_threshold
        )
        metadata["summary"]["request_failures"] = clients.failure_stats()
        if run.adaptive is not None:
            metadata["concurrency"] = run.adaptive.summary()
        if recorder.retries:
            metadata["summary"]["retries"] = recorder.retries
            metadata["summary"]["recovered_after_retry"] = recorder.recovered
        if clients.cache is not None:
            metadata["summary"]["cache"] = {
                "hits": clients.cache.hits,
                "misses": clients.cache.misses,
            }
        if plan.run_dir is not None:
            plan.run_dir.write_metadata(metadata)
    finally:
        if plan.run_dir is not None:
            plan.run_dir.close()


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

    from verifiers._version import __version__

    def ver(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "python": platform.python_version(),
        "verifiers": __version__,
        "openai": ver("openai"),
        "datasets": ver("datasets"),
    }
