"""0.3.x's ``Environment.generate`` run: the classic records, endpoint round robin, env
servers, resume from a results folder.

:meth:`~verifiers.Environment.generate` hands over to :func:`classic_generate` when the call
asks for what only the classic runner does (see :data:`CLASSIC_ONLY`): a
:class:`~verifiers.ClientConfig` as the client (one client per endpoint of its
``endpoint_configs``, each group of rollouts of one example sent to the next endpoint), an env
server (``env.env_client``), ``results_path=`` (``results.jsonl`` + ``metadata.json``, resumed
when the folder holds a run), ``independent_scoring=``, ``on_start``/``on_log`` callbacks or a
push to the Hugging Face Hub. Each rollout goes through the classic ``run_rollout`` /
``run_group`` (so through the env server when there is one) and is kept as its
``RolloutOutput`` record; the result is a ``GenerateOutputs`` dict (``outputs``,
``metadata``). Other calls run through :func:`verifiers.evaluate_async`.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from verifiers.classic.env_mixin import ClassicEnvironment as Environment

__all__ = ["CLASSIC_ONLY", "OutputsBuilder", "classic_generate", "wants_classic_generate"]

logger = logging.getLogger("verifiers.envs")

#: ``generate`` keywords only the classic runner takes
CLASSIC_ONLY = frozenset(
    {
        "results_path",
        "independent_scoring",
        "push_to_hf_hub",
        "hf_hub_dataset_name",
        "on_start",
        "on_log",
        "shuffle",
        "shuffle_seed",
    }
)


def wants_classic_generate(env: Any, client: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether a ``generate`` call is one only the classic runner serves."""
    from verifiers.classic.models import ClientConfig

    return (
        isinstance(client, ClientConfig)
        or getattr(env, "env_client", None) is not None
        or any(key in kwargs for key in CLASSIC_ONLY)
    )


class OutputsBuilder:
    """The outputs of a run, gathered as they finish, and the run's metadata in 0.3.x's
    shape: the means of :mod:`verifiers.utils.metric_utils` (reward, metrics, error rate,
    token usage), pass@k and pass^k."""

    def __init__(
        self,
        env: Environment,
        model: str,
        client: Any,
        num_examples: int,
        rollouts_per_example: int,
        sampling_args: Mapping[str, Any],
        state_columns: Sequence[str] | None,
        results_path: Path,
        shuffle: bool,
        shuffle_seed: int | None,
    ) -> None:
        from verifiers.utils import metric_utils as m

        self.env = env
        self.model = model
        self.num_examples = num_examples
        self.rollouts_per_example = rollouts_per_example
        self.sampling_args = dict(sampling_args)
        self.state_columns = list(state_columns or [])
        self.results_path = results_path
        self.shuffle = shuffle
        self.shuffle_seed = shuffle_seed
        self.pass_threshold = float(getattr(env, "pass_threshold", 0.5))
        self.base_url = _base_url(client)
        self.started = time.perf_counter()  # elapsed time: monotonic, fine-grained
        self.outputs: list[dict[str, Any]] = []
        self.reward = m.RewardMetric()
        self.error_rate = m.ErrorRateMetric()
        self.env_metrics = m.EnvMetrics()
        self.tokens = {
            "input_tokens": m.InputTokensMetric(),
            "output_tokens": m.OutputTokensMetric(),
            "final_input_tokens": m.FinalInputTokensMetric(),
            "final_output_tokens": m.FinalOutputTokensMetric(),
        }
        self.pass_at_k = m.PassAtKMetric(rollouts_per_example, threshold=self.pass_threshold)

    def add_outputs(self, outputs: Sequence[Mapping[str, Any]]) -> None:
        new = [dict(o) for o in outputs]
        self.outputs.extend(new)
        for metric in (self.reward, self.error_rate, self.env_metrics, self.pass_at_k):
            metric.add_outputs(new)
        for token_metric in self.tokens.values():
            token_metric.add_outputs(new)

    def _usage(self) -> dict[str, float] | None:
        if not self.tokens["input_tokens"].count:
            return None
        usage = {k: self.tokens[k].compute() for k in ("input_tokens", "output_tokens")}
        if self.tokens["final_input_tokens"].count:
            for key in ("final_input_tokens", "final_output_tokens"):
                usage[key] = self.tokens[key].compute()
        return usage

    def build_metadata(self) -> dict[str, Any]:
        at_k, all_k = self.pass_at_k.compute()
        return {
            "env_id": self.env.env_id,
            "env_args": self.env.env_args,
            "model": self.model,
            "base_url": self.base_url,
            "num_examples": self.num_examples,
            "rollouts_per_example": self.rollouts_per_example,
            "shuffle": self.shuffle,
            "shuffle_seed": self.shuffle_seed,
            "sampling_args": self.sampling_args,
            "date": datetime.now().isoformat(),
            "time": time.perf_counter() - self.started,
            "avg_reward": self.reward.compute(),
            "avg_metrics": self.env_metrics.compute(),
            "avg_error": self.error_rate.compute(),
            "pass_at_k": at_k,
            "pass_all_k": all_k,
            "pass_threshold": self.pass_threshold,
            "usage": self._usage(),
            "state_columns": self.state_columns,
            "path_to_save": self.results_path,
        }

    def build(self) -> dict[str, Any]:
        """``GenerateOutputs``: the outputs sorted by ``example_id``, and the metadata."""
        outputs = sorted(self.outputs, key=lambda o: _sort_key(o.get("example_id")))
        return {"outputs": outputs, "metadata": self.build_metadata()}


def _sort_key(example_id: Any) -> tuple[int, Any]:
    return (0, example_id) if isinstance(example_id, int | float) else (1, str(example_id))


def _base_url(client: Any) -> str:
    from verifiers.classic.models import ClientConfig

    if isinstance(client, ClientConfig):
        urls = [c.api_base_url for c in client.endpoint_configs]
        return ",".join(urls) if urls else client.api_base_url
    url = getattr(client, "base_url", None)
    return str(url) if url is not None else ""


def _rows(inputs: Any) -> list[dict[str, Any]]:
    if isinstance(inputs, list):
        return [dict(r) for r in inputs]
    to_list = getattr(inputs, "to_list", None)  # a datasets.Dataset
    if callable(to_list):
        return [dict(r) for r in to_list()]
    if isinstance(inputs, Mapping):  # a dict of columns
        columns = list(inputs.values())
        n = len(columns[0]) if columns else 0
        return [{k: v[i] for k, v in inputs.items()} for i in range(n)]
    from verifiers.errors import ConfigError

    raise ConfigError(
        f"generate() takes its inputs as a datasets.Dataset, a list of rows or a dict of "
        f"columns, not {type(inputs).__name__}"
    )


def _resolve_client(config: Any) -> Any:
    # looked up on the environment module at call time, where 0.3.x's generate finds it
    module = sys.modules["verifiers.envs.environment"]
    return module.resolve_client(config)


async def _close_all(clients: Sequence[Any]) -> None:
    results = await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, Exception):
            raise result
        if isinstance(result, Exception):
            logger.debug("closing an endpoint client failed: %r", result)


class EndpointRoundRobin:
    """The client of each rollout or group: the next endpoint of a ``ClientConfig``'s
    ``endpoint_configs`` (its configs themselves when an env server makes the clients; local
    clients otherwise), or the caller's client."""

    def __init__(self, env: Environment, client: Any) -> None:
        from verifiers.classic.models import ClientConfig
        from verifiers.utils.client_utils import resolve_client_configs

        self.env = env
        self.client = client
        self.configs = resolve_client_configs(client) if isinstance(client, ClientConfig) else []
        self.local: list[Any] = []
        self.turn = 0

    def open(self) -> None:
        if self.env.env_client is None:
            for config in self.configs:  # created one by one: a failure closes those made
                self.local.append(_resolve_client(config))

    def next(self) -> Any:
        pool: Sequence[Any] = (
            self.configs if self.env.env_client is not None and self.configs else self.local
        )
        if not pool:
            return self.client
        chosen = pool[self.turn % len(pool)]
        self.turn += 1
        return chosen

    async def close(self) -> None:
        if self.local:
            await _close_all(self.local)


@dataclass
class GenerateRun:
    """One ``generate`` call's settings and its outputs so far."""

    env: Environment
    model: str
    sampling_args: dict[str, Any]
    rows: list[dict[str, Any]]
    per_example: int
    path: Path
    results_path: Path | str | None
    save_results: bool
    state_columns: list[str] | None
    max_retries: int
    builder: OutputsBuilder
    endpoints: EndpointRoundRobin
    semaphore: asyncio.Semaphore | None
    log: Callable[[str], Any]
    progress: list[Callable[..., Any]]

    async def save_metadata(self, metadata: dict[str, Any]) -> None:
        from verifiers.classic.results_io import save_metadata

        if self.save_results:
            await asyncio.to_thread(save_metadata, metadata, self.path)

    async def limited(self, coro: Any) -> Any:
        if self.semaphore is None:
            return await coro
        async with self.semaphore:
            return await coro


async def classic_generate(
    env: Environment,
    inputs: Any,
    client: Any,
    model: str,
    sampling_args: Mapping[str, Any] | None = None,
    max_concurrent: int = -1,
    results_path: Path | str | None = None,
    state_columns: list[str] | None = None,
    save_results: bool = False,
    push_to_hf_hub: bool = False,
    hf_hub_dataset_name: str | None = None,
    independent_scoring: bool = False,
    max_retries: int = 0,
    shuffle: bool = False,
    shuffle_seed: int | None = None,
    on_start: Callable[..., Any] | None = None,
    on_progress: Callable[..., Any] | list[Callable[..., Any]] | None = None,
    on_log: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """0.3.x's ``generate`` (see the module docstring); returns ``GenerateOutputs``."""
    from verifiers.classic.results_io import push_results_to_hf_hub
    from verifiers.utils.path_utils import get_results_path

    rows = _rows(inputs)
    args = {**env.sampling_args, **(sampling_args or {})}
    num_examples = len({r["example_id"] for r in rows})
    per_example = len(rows) // num_examples if num_examples else 0
    seed = (0 if shuffle_seed is None else shuffle_seed) if shuffle else None
    path = Path(results_path) if results_path is not None else get_results_path(env.env_id, model)
    run = GenerateRun(
        env=env,
        model=model,
        sampling_args=args,
        rows=rows,
        per_example=per_example,
        path=path,
        results_path=results_path,
        save_results=save_results,
        state_columns=state_columns,
        max_retries=max_retries,
        builder=OutputsBuilder(
            env, model, client, num_examples, per_example, args, state_columns, path, shuffle, seed
        ),
        endpoints=EndpointRoundRobin(env, client),
        semaphore=asyncio.Semaphore(max_concurrent) if max_concurrent > 0 else None,
        log=on_log or (lambda message: logger.info(message)),
        progress=(
            on_progress if isinstance(on_progress, list) else [on_progress] if on_progress else []
        ),
    )
    try:
        run.endpoints.open()
        resumable = results_path is not None and _is_results_folder(path)
        if resumable:
            _validate_resume(run, num_examples, shuffle, seed)
            todo = _resume(run)
            if not todo:
                run.log("No remaining rollouts to evaluate, returning completed outputs")
                results = run.builder.build()
                await run.save_metadata(results["metadata"])
                return results
        else:
            todo = rows
        await _start_results_folder(run, resumable)
        await _run_rollouts(run, todo, independent_scoring, on_start)
        results = run.builder.build()
        await run.save_metadata(results["metadata"])
        if save_results:
            if push_to_hf_hub:
                push_results_to_hf_hub(results, hf_hub_dataset_name)
            run.log(f"Saved final results to {path}")
        return results
    finally:
        await run.endpoints.close()


def _is_results_folder(path: Path) -> bool:
    from verifiers.utils.path_utils import is_valid_eval_results_path

    return is_valid_eval_results_path(path)


def _validate_resume(run: GenerateRun, num_examples: int, shuffle: bool, seed: int | None) -> None:
    """Refuse to resume a results folder of another configuration."""
    from verifiers.classic.results_io import validate_resume_metadata

    validate_resume_metadata(
        run.path, run.env.env_id, run.model, num_examples, run.per_example, shuffle, seed
    )


def _resume(run: GenerateRun) -> list[dict[str, Any]]:
    """Keep the folder's saved outputs (at most ``rollouts_per_example`` per example); the
    rows still to run."""
    from verifiers.classic.results_io import load_outputs
    from verifiers.utils.eval_utils import filter_inputs

    run.log(f"Resuming evaluation from {run.path}")
    saved = load_outputs(run.path)
    seen: dict[Any, int] = defaultdict(int)
    kept = []
    for output in saved:
        if seen[output["example_id"]] < run.per_example:
            seen[output["example_id"]] += 1
            kept.append(output)
    if len(kept) != len(saved):
        run.log(
            f"Ignoring {len(saved) - len(kept)} saved duplicate rollout(s) beyond "
            "rollouts_per_example"
        )
    run.builder.add_outputs(kept)
    todo = [
        dict(r)
        for r in filter_inputs(
            cast("list[Mapping[str, Any]]", run.rows), cast(Any, kept), run.per_example
        )
    ]
    if todo:
        run.log(f"Found {len(kept)} completed rollout(s), {len(todo)} remaining rollout(s)")
    return todo


async def _start_results_folder(run: GenerateRun, resumable: bool) -> None:
    """A new run's empty ``results.jsonl`` and its metadata (a resumed run has them)."""
    from verifiers.classic.results_io import save_outputs

    if not run.save_results:
        return
    run.log(f"Saving results to {run.path}")
    if resumable:
        return
    existing = run.path / "results.jsonl"
    if run.results_path is not None and existing.is_file() and existing.stat().st_size:
        raise ValueError(
            f"Cannot save to invalid results path {run.path}: results.jsonl already "
            "exists without valid metadata (metadata.json is missing); pass a new "
            "results_path, or restore its metadata.json to resume it"
        )
    await asyncio.to_thread(save_outputs, [], run.path, "a")
    await run.save_metadata(run.builder.build_metadata())


def _start_tasks(
    run: GenerateRun,
    todo: list[dict[str, Any]],
    independent_scoring: bool,
    on_start: Callable[..., Any] | None,
) -> list[asyncio.Task[Any]]:
    """One task per rollout (``independent_scoring``) or per example's group, each on the
    next endpoint (a group's rollouts share the prompt's KV cache)."""
    env: Any = run.env
    options = {"max_retries": run.max_retries, "state_columns": run.state_columns}
    if independent_scoring:
        if on_start is not None:
            on_start(run.rows, todo)
        return [
            asyncio.create_task(
                run.limited(
                    env.run_rollout(
                        row, run.endpoints.next(), run.model, run.sampling_args, **options
                    )
                )
            )
            for row in todo
        ]
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in todo:
        groups[row["example_id"]].append(row)
    if on_start is not None:
        on_start(run.rows, list(groups.values()))
    return [
        asyncio.create_task(
            run.limited(
                env.run_group(group, run.endpoints.next(), run.model, run.sampling_args, **options)
            )
        )
        for group in groups.values()
    ]


async def _run_rollouts(
    run: GenerateRun,
    todo: list[dict[str, Any]],
    independent_scoring: bool,
    on_start: Callable[..., Any] | None,
) -> None:
    """Run the rows; each finished rollout or group is added, reported and saved at once."""
    from verifiers.classic.results_io import save_new_outputs

    runs = _start_tasks(run, todo, independent_scoring, on_start)
    try:
        for finished in asyncio.as_completed(runs):
            result = await finished
            new = [result] if independent_scoring else list(result)
            run.builder.add_outputs(new)
            metadata = run.builder.build_metadata()
            for callback in run.progress:
                callback(run.builder.outputs, new, metadata)
            if run.save_results:
                await asyncio.to_thread(save_new_outputs, new, run.path)
                await run.save_metadata(metadata)
    finally:
        pending = [t for t in runs if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
