"""Evaluate an environment against a model: ``vf.evaluate`` / ``vf.evaluate_async``.

A run drives ``num_examples x rollouts_per_example`` rollouts with at most ``max_concurrent``
rollouts in flight (concurrency counts rollouts, not groups). Every rollout's record is
appended to ``results.jsonl`` as it finishes; ``metadata.json`` holds the configuration and the
summary (counts, averages, standard error, pass@k, usage, timing, versions). Errors are
recorded per rollout and the run goes on. ``resume=True`` reuses the run directory of the same
configuration and runs only what is missing or errored.

:func:`evaluate_async` reads as four steps:

1. validate: :func:`~verifiers.eval_plan.resolve_settings` (the caller's arguments over the
   environment's ``[tool.verifiers.eval]`` over the library's defaults) and
   :func:`~verifiers.eval_plan.resolve_clients`;
2. plan: :func:`~verifiers.eval_plan.plan_run` (rows, configuration, the locked
   :class:`~verifiers.rundir.RunDir`, what is left to run);
3. run: :func:`~verifiers.eval_run.start_run` (results file open, metadata ``running``),
   then :func:`~verifiers.eval_run.run_plan`;
4. finish: :func:`~verifiers.eval_run.finish_run` (final metadata, files and lock closed),
   whatever happened during the run.

``vf-eval`` passes only what the user gave, so both apply the same defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifiers.clients.base import Client
from verifiers.errors import ConfigError
from verifiers.eval_plan import (
    DEFAULT_NUM_EXAMPLES,
    DEFAULT_ROLLOUTS_PER_EXAMPLE,
    Clients,
    EvalSettings,
    RunPlan,
    plan_run,
    resolve_clients,
    resolve_settings,
    validated_env,
)
from verifiers.eval_run import (
    Executor,
    ProgressCallback,
    Run,
    finish_run,
    run_plan,
    start_run,
)
from verifiers.types import SamplingArgs, State
from verifiers.utils.gc_utils import batch_gc

if TYPE_CHECKING:
    from verifiers.envs.environment import Environment
    from verifiers.response_cache import ResponseCache

__all__ = [
    "DEFAULT_NUM_EXAMPLES",
    "DEFAULT_ROLLOUTS_PER_EXAMPLE",
    "EvalResult",
    "EvalSettings",
    "evaluate",
    "evaluate_async",
    "resolve_settings",
]


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


async def evaluate_async(
    env: Environment | str,
    client: Client | Any = None,
    model: str = "oracle",
    *,
    num_examples: int | None = None,
    rollouts_per_example: int | None = None,
    max_concurrent: int | str = 32,
    sampling_args: SamplingArgs | None = None,
    env_args: dict[str, Any] | None = None,
    save_results: bool = False,
    output_dir: str | Path | None = None,
    results_root: str | Path = "outputs/evals",
    resume: bool = False,
    overwrite: bool = False,
    state_columns: Sequence[str] = (),
    on_progress: ProgressCallback | None = None,
    endpoint: str | None = None,
    keep_states: bool = False,
    inputs: Any = None,
    on_start: Callable[[Path | None], None] | None = None,
    on_total: Callable[[int, int], None] | None = None,
    on_concurrency: Callable[[int], None] | None = None,
    executor: Executor | None = None,
    cache: bool | str | float | ResponseCache | None = None,
    cache_dir: str | Path | None = None,
    retry_on_error: int = 0,
    max_retries: int = 0,
) -> EvalResult:
    """Evaluate ``env`` (an Environment or an environment id) with ``model``.

    Args:
        env: an :class:`Environment`, or an id for :func:`verifiers.load_environment`.
        client: a :class:`verifiers.Client`, an ``openai.AsyncOpenAI``, a base URL, or an object
            with ``for_group()`` returning a client per example (replica round-robin). ``None``
            with ``model="oracle"`` uses the built-in oracle.
        model: the model name sent to the endpoint (``"oracle"``: the gold-answer model).
        num_examples: first N rows of the eval dataset (``-1``: all; default: the
            environment's ``[tool.verifiers.eval]`` value, else 5).
        rollouts_per_example: rollouts per row (pass@k is reported for k = 1..this; default:
            the environment's value, else 3).
        max_concurrent: rollouts in flight at once (``-1``: no limit; ``"auto"`` or
            ``"auto:N"``: adapts to the endpoint, up to N (default 256), backing off on
            429/5xx and rising latency; the levels are in ``metadata["concurrency"]``).
        sampling_args: merged over the environment's declared ``max_tokens``/``temperature``
            and its ``sampling_args``.
        save_results: write ``results.jsonl`` and ``metadata.json``.
        output_dir: the run directory (default ``results_root/ENV--MODEL/TIMESTAMP-HASH``).
        resume: continue the newest run with the same configuration (or ``output_dir``):
            finished rollouts are kept, missing and errored ones run again.
        overwrite: replace a run already in ``output_dir`` (without it, and without
            ``resume``, an ``output_dir`` holding a run is refused with what to do).
        state_columns: extra state keys copied into each record.
        on_progress: called as ``on_progress(done, total, record)`` after each rollout.
        on_start: called once the run has started, with its run directory (``None`` when
            results are not saved): where an interrupted run's partial results are.
        on_total: called once before the first rollout runs, as ``on_total(done, total)``:
            the rollouts a resumed run already has and the rollouts the run will have (a
            progress display knows its total from the start).
        on_concurrency: with ``max_concurrent="auto"``, called with the level chosen at the
            start and each time it changes (a progress display shows it).
        endpoint: the base URL recorded in metadata (default: the client's, when it has one).
        keep_states: also return the raw states (for trainers and tests).
        inputs: rows to run instead of the eval dataset (``Environment.generate``; all of
            them, once each, unless told otherwise).
        executor: where the rollouts run instead of this process, e.g.
            :class:`verifiers.distributed.RayExecutor` (its workers load the environment
            themselves; this process keeps the run directory, resume and progress). Its
            summary (workers, re-runs, groups per node) is saved as ``metadata["executor"]``.
        cache: answer model calls from the on-disk response cache and store new answers
            (:mod:`verifiers.response_cache`): ``True`` (entries never expire), a duration
            (``"7d"``, ``"12h"``, or seconds: older entries are misses), or a
            :class:`~verifiers.response_cache.ResponseCache`. Hits and misses are in
            ``summary["cache"]``. Not with an ``executor``.
        retry_on_error: run a rollout that ended in an error (of the model, the endpoint or
            the infrastructure (:class:`~verifiers.InfraError`), or an invalid model response;
            not a reward function's) again, up to this many times. The
            re-runs are counted in ``summary["retries"]``; the summary (and so an error-rate
            check) counts only each rollout's final attempt.
        cache_dir: where the cache lives (default ``$VF_CACHE_DIR`` or
            ``~/.cache/verifiers/responses``).
        max_retries: 0.3.x's name for ``retry_on_error`` (the larger of the two applies).
    """
    controls = _run_controls(
        max_concurrent, executor, keep_states, cache, cache_dir, retry_on_error, max_retries
    )
    env = validated_env(env, env_args, controls.max_concurrent)
    settings = resolve_settings(
        env, num_examples, rollouts_per_example, sampling_args, inputs_given=inputs is not None
    )
    clients = resolve_clients(client, model, endpoint)
    clients.cache = controls.response_cache
    try:
        plan = plan_run(
            env,
            settings,
            model,
            clients.endpoint,
            inputs=inputs,
            save=save_results,
            output_dir=output_dir,
            results_root=results_root,
            resume=resume,
            overwrite=overwrite,
        )
        recording = {
            "state_columns": state_columns,
            "keep_states": keep_states,
            "on_progress": on_progress,
        }
        run = start_run(env, plan, model, clients.endpoint, controls.max_concurrent, recording)
        if on_start is not None:
            on_start(plan.run_dir.path if plan.run_dir is not None else None)
        if on_total is not None:
            on_total(len(plan.kept), plan.total)
        with batch_gc():
            await _execute(env, plan, run, clients, model, controls, on_concurrency)
    finally:
        await clients.close()
    return _result(plan, run)


@dataclass(slots=True)
class RunControls:
    """How a run's rollouts execute: the concurrency (a fixed limit, or the upper bound of an
    adaptive one), where they run, the response cache and the retries of errored rollouts."""

    max_concurrent: int
    adaptive_upper: int | None = None
    executor: Executor | None = None
    response_cache: ResponseCache | None = None
    retry_on_error: int = 0


def _run_controls(
    max_concurrent: int | str,
    executor: Executor | None,
    keep_states: bool,
    cache: bool | str | float | ResponseCache | None,
    cache_dir: str | Path | None,
    retry_on_error: int,
    max_retries: int,
) -> RunControls:
    """The run's controls, refusing the combinations that cannot work (what needs the
    rollouts in this process, with an executor)."""
    from verifiers.adaptive import parse_concurrency

    fixed, upper = parse_concurrency(max_concurrent)
    if upper is not None and executor is not None:
        raise ConfigError("max_concurrent='auto' works for rollouts run in this process")
    if executor is not None and keep_states:
        raise ConfigError(
            "keep_states needs the rollouts to run in this process; drop the executor "
            "or read the records instead"
        )
    response_cache = _response_cache(cache, cache_dir)
    if response_cache is not None and executor is not None:
        raise ConfigError(
            "the response cache works for rollouts run in this process; drop the executor "
            "or the cache"
        )
    if not isinstance(retry_on_error, int) or retry_on_error < 0:
        raise ConfigError(f"retry_on_error must be 0 or more, not {retry_on_error!r}")
    retry_on_error = max(retry_on_error, int(max_retries or 0))
    if retry_on_error and executor is not None:
        raise ConfigError("retry_on_error works for rollouts run in this process, not an executor")
    return RunControls(
        max_concurrent=fixed if upper is None else upper,
        adaptive_upper=upper,
        executor=executor,
        response_cache=response_cache,
        retry_on_error=retry_on_error,
    )


async def _execute(
    env: Environment,
    plan: RunPlan,
    run: Run,
    clients: Clients,
    model: str,
    controls: RunControls,
    on_concurrency: Callable[[int], None] | None,
) -> None:
    """Run the plan's rollouts; the run is finished (final metadata, files and lock closed)
    whatever happens, ``completed`` or ``interrupted``."""
    status = "interrupted"
    try:
        if controls.retry_on_error:
            run.metadata["retry_on_error"] = controls.retry_on_error
        adaptive = None
        if controls.adaptive_upper is not None:
            from verifiers.adaptive import AdaptiveLimit

            adaptive = AdaptiveLimit(
                controls.adaptive_upper,
                lambda: sum(clients.failure_stats().values()),
                on_change=on_concurrency,
            )
            if on_concurrency is not None:
                on_concurrency(adaptive.limit)
            run.metadata["max_concurrent"] = "auto"
            run.adaptive = adaptive
        await run_plan(
            env,
            plan,
            clients,
            model,
            controls.max_concurrent,
            run.recorder,
            controls.executor,
            controls.retry_on_error,
            adaptive,
        )
        status = "completed"
    finally:
        if controls.executor is not None:
            run.metadata["executor"] = controls.executor.summary()
        if controls.response_cache is not None:
            run.metadata["cache"] = controls.response_cache.stats()
        finish_run(env, plan, run, clients, status)


def _response_cache(
    cache: bool | str | float | ResponseCache | None, cache_dir: str | Path | None
) -> ResponseCache | None:
    """What ``cache=`` means: off, forever, a maximum age, or a cache object."""
    from verifiers.response_cache import ResponseCache, parse_duration

    if cache is None or cache is False:
        return None
    if isinstance(cache, ResponseCache):
        return cache
    if cache is True:
        return ResponseCache(cache_dir)
    if isinstance(cache, str):
        return ResponseCache(cache_dir, max_age=parse_duration(cache))
    if isinstance(cache, int | float) and cache > 0:
        return ResponseCache(cache_dir, max_age=float(cache))
    raise ConfigError(
        f"cache must be True, a duration such as '7d' or a number of seconds, or a "
        f"ResponseCache, not {cache!r}"
    )


def _result(plan: RunPlan, run: Run) -> EvalResult:
    records = sorted(run.recorder.records, key=lambda r: (str(r["example_id"]), r["rollout_index"]))
    path = plan.run_dir.path if plan.run_dir is not None else None
    return EvalResult(records, run.metadata, path, run.recorder.states)


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
