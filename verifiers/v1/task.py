"""``TaskData`` (the wire half of a task) and ``Task`` (its behaviour: scoring, stop hooks)."""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import logging
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Self

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar

from verifiers.v1.configs import DecoratedFunctionConfig, TaskConfig
from verifiers.v1.decorators import discover, invoke_all, parameters, sort_hooks
from verifiers.v1.errors import TaskError
from verifiers.v1.state import State, StateT, state_cls
from verifiers.v1.types import Messages, content_text
from verifiers.v1.utils.artifacts import MAX_ARTIFACT_BYTES, Artifact
from verifiers.v1.utils.loaders import load_plugged_fn

if TYPE_CHECKING:
    from verifiers.v1.runtimes import Runtime
    from verifiers.v1.trace import Trace

__all__ = [
    "DataT",
    "Task",
    "TaskData",
    "TaskT",
    "TaskTimeout",
    "WireTaskData",
    "hooks_need_runtime",
    "requires_runtime",
    "task_key",
]

logger = logging.getLogger(__name__)


def task_key(data: Mapping[str, Any]) -> str:
    """A content hash of task data, independent of key order."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class TaskTimeout(BaseModel):
    """A task's own stage limits in seconds (None: none); a seat's ``timeout`` setting for a
    stage takes precedence over the task's."""

    model_config = ConfigDict(frozen=True)
    setup: float | None = None
    """The task's ``setup`` (and the runtime's start)."""
    agent: float | None = None
    """The agent's attempt (the seat's ``timeout.rollout``)."""
    finalize: float | None = None
    scoring: float | None = None


class TaskData(BaseModel):
    """What a task is: frozen, serialised on every trace. Subclass to add fields."""

    model_config = ConfigDict(frozen=True)
    idx: int | None = None
    id: str | None = None
    name: str | None = None
    description: str | None = None
    prompt: str | Messages | None = None
    system_prompt: str | None = None
    artifacts: list[Artifact] = Field(default_factory=list)
    """Paths a grader in another runtime needs from the solver's (``IsolatedVerifierEnv``),
    besides :data:`~verifiers.v1.utils.artifacts.ARTIFACTS_DIR`; one missing at collection
    fails the rollout."""
    artifact_max_bytes: int = Field(default=MAX_ARTIFACT_BYTES, gt=0)
    """Limit on all the collected archives together."""
    timeout: TaskTimeout = Field(default_factory=TaskTimeout)
    """The task's own stage limits, for the stages its seat's config leaves unset."""

    @property
    def prompt_text(self) -> str:
        if isinstance(self.prompt, str):
            return self.prompt
        return "\n\n".join(t for t in (content_text(m.content) for m in self.prompt or []) if t)


class WireTaskData(TaskData):
    """Task data read back from the wire: task-specific fields are kept as extra keys."""

    model_config = ConfigDict(extra="allow", frozen=True)


DataT = TypeVar("DataT", bound=TaskData, default=TaskData)
ConfigT = TypeVar("ConfigT", bound=TaskConfig, default=TaskConfig)


def _type_arg(cls: type, base: type) -> type | None:
    """The first concrete generic argument of ``cls``'s bases that subclasses ``base``."""
    for klass in cls.__mro__:
        for orig in getattr(klass, "__orig_bases__", ()):
            for arg in typing.get_args(orig):
                if isinstance(arg, type) and issubclass(arg, base):
                    return arg
    return None


class Task(Generic[DataT, StateT, ConfigT]):
    """One task: its ``data`` plus ``@vf.reward`` / ``@vf.metric`` / ``@vf.stop`` methods."""

    scoring_deferred: bool = False

    def __init__(self, data: DataT, config: ConfigT | None = None) -> None:
        self.data = data
        self.config: ConfigT = config if config is not None else self.config_type()()  # type: ignore[assignment]

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per this task and its current ``data`` and ``config`` objects
        (its hooks, its hash: asked for on every turn of every rollout)."""
        held = self.__dict__.get("_vf_memo")
        if (
            held is None
            or held[0] is not self
            or held[1] is not self.data
            or (held[2] is not self.config)
        ):
            held = (self, self.data, self.config, {})
            self.__dict__["_vf_memo"] = held
        values: dict[str, Any] = held[3]
        if key not in values:
            values[key] = compute()
        return values[key]

    @property
    def hash(self) -> str:
        return self.memo(  # type: ignore[no-any-return]
            "hash", lambda: task_key(self.data.model_dump(mode="json", exclude_none=True))
        )

    @property
    def key(self) -> str:
        """The task's identity as traces record it (the content hash by default)."""
        return self.hash

    def with_data(self, **update: Any) -> Self:
        clone = copy.copy(self)
        clone.data = self.data.model_copy(update=update)
        return clone

    def with_system_prompt(self, system_prompt: str) -> Self:
        return self.with_data(system_prompt=system_prompt)

    def defer_scoring(self) -> Self:
        """A copy whose :meth:`score` does nothing (scored later, elsewhere)."""
        clone = copy.deepcopy(self)
        clone.scoring_deferred = True
        return clone

    @classmethod
    def data_type(cls) -> type[TaskData]:
        return _type_arg(cls, TaskData) or TaskData

    @classmethod
    def config_type(cls) -> type[TaskConfig]:
        return _type_arg(cls, TaskConfig) or TaskConfig

    @classmethod
    def state_type(cls) -> type[State]:
        return state_cls(cls)

    def hooks(self, kind: str) -> list[Callable[..., Any]]:
        """The ``kind`` hooks ("stop", "intercept", "metric", "reward"): decorated methods, with
        the config's plugged functions replacing same-named ones; highest priority first."""
        return list(self.memo(f"hooks:{kind}", lambda: self._find_hooks(kind)))

    def _find_hooks(self, kind: str) -> list[Callable[..., Any]]:
        table: dict[str, Mapping[str, DecoratedFunctionConfig]] = {
            "stop": self.config.stops,
            "metric": self.config.metrics,
            "reward": self.config.rewards,
        }
        if kind == "intercept":
            return discover(self, kind)
        plugged = table.get(kind)
        if plugged is None:
            raise ValueError(
                f"unknown hook kind {kind!r}; use 'stop', 'intercept', 'metric' or 'reward'"
            )
        merged = {fn.__name__: fn for fn in discover(self, kind)}
        for name, spec in plugged.items():
            merged[name] = load_plugged_fn(name, spec, kind, merged.get(name))
        return sort_hooks(merged.values(), kind)

    async def setup(self, trace: Trace, runtime: Runtime) -> None:
        """Runs before the agent. Called with the arguments an override names: ``trace``
        and/or ``runtime`` (the rollout's runtime, started for it)."""

    async def finalize(self, trace: Trace, runtime: Runtime) -> None:
        """Runs after the agent, before scoring; called like :meth:`setup`."""

    async def stage_verifier(self, trace: Trace, runtime: Runtime) -> None:
        """Runs in a grader's fresh runtime after the solver's artifacts are restored, before
        scoring (``IsolatedVerifierEnv``): put trusted grading inputs (hidden tests) in place
        here, out of the solver's reach. Called like :meth:`setup`."""

    def runtime_env(self) -> dict[str, str]:
        """Process environment of the task's runtime (its hooks' commands); not recorded
        on traces, unlike :attr:`data`."""
        return {}

    async def validate(self, runtime: Runtime) -> bool | None:
        """Whether the task is well-formed (None: no check), run without a model."""
        return None

    def plugged_judges(self) -> list[Any]:
        """The judges the config plugs (``TaskConfig.judges``), built from their configs."""
        from verifiers.v1.judge import load_judge

        return [load_judge(config) for config in self.config.judges]

    async def score(self, trace: Trace, runtime: Any = None) -> None:
        """Run the metrics, the rewards, then the plugged judges, recording them on ``trace``.
        A failing hook or judge raises :class:`TaskError` naming it; its score stays ``None``
        on the trace. ``runtime`` is offered to hooks that name it."""
        if self.scoring_deferred:
            return
        available: dict[str | type, Any] = {
            "task": self.data,
            "trace": trace,
            "state": trace.state,
        }
        if runtime is not None:
            available["runtime"] = runtime
        metrics, rewards = self.hooks("metric"), self.hooks("reward")
        judges = self.plugged_judges()
        if runtime is None:  # offline scoring: what needs the runtime is left out, as upstream
            metrics = [fn for fn in metrics if not requires_runtime(fn)]
            rewards = [fn for fn in rewards if not requires_runtime(fn)]
            judges = [judge for judge in judges if not requires_runtime(judge.score)]
        for fn in metrics:
            trace.metrics[fn.__name__] = None
        for fn in rewards:
            trace.rewards[fn.__name__] = None
        for judge in judges:
            trace.rewards[judge.reward_name] = None
        try:
            results = await invoke_all(metrics, available)
        except Exception as exc:
            raise TaskError(f"task {type(self).__name__}: a metric failed: {exc!r}") from exc
        for fn, value in zip(metrics, results, strict=False):
            if isinstance(value, Mapping):
                if trace.metrics.get(fn.__name__) is None:
                    trace.metrics.pop(fn.__name__, None)
                trace.record_metrics(value)
            else:
                trace.record_metric(fn.__name__, value)
        try:
            results = await invoke_all(rewards, available)
        except Exception as exc:
            raise TaskError(f"task {type(self).__name__}: a reward failed: {exc!r}") from exc
        for fn, value in zip(rewards, results, strict=False):
            weight = float(getattr(fn, "_vf_weight", 1.0))
            if isinstance(value, Mapping):
                if trace.rewards.get(fn.__name__) is None:
                    trace.rewards.pop(fn.__name__, None)
                for name, score in value.items():
                    trace.record_reward(name, score, weight)
            else:
                trace.record_reward(fn.__name__, value, weight)
        if judges:
            await self._run_judges(judges, trace)

    async def _run_judges(self, judges: list[Any], trace: Trace) -> None:
        import asyncio

        outcomes = await asyncio.gather(
            *(judge.score(self.data, trace) for judge in judges), return_exceptions=True
        )
        for judge, outcome in zip(judges, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome
                raise TaskError(
                    f"task {type(self).__name__}: judge {judge.reward_name!r} failed: {outcome}"
                ) from outcome
            weight = float(judge.config.weight)
            if isinstance(outcome, Mapping):
                if trace.rewards.get(judge.reward_name) is None:
                    trace.rewards.pop(judge.reward_name, None)
                for name, score in outcome.items():
                    trace.record_reward(name, score, weight)
            else:
                trace.record_reward(judge.reward_name, outcome, weight)


def requires_runtime(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` has a ``runtime`` parameter without a default (it cannot run offline)."""
    param = parameters(fn).get("runtime")
    return param is not None and param.default is inspect.Parameter.empty


def hooks_need_runtime(task: Task[Any, Any, Any]) -> bool:
    """Whether any of the task's hooks (setup, finalize, stops, metrics, rewards, plugged
    judges) names a ``runtime`` parameter: its rollout then provides one."""
    fns = [
        getattr(task, name)
        for name in ("setup", "finalize")
        if getattr(type(task), name) is not getattr(Task, name)  # overridden
    ]
    return task.memo(  # type: ignore[no-any-return]
        "needs_runtime", lambda: _hooks_need_runtime(task, fns)
    )


def _hooks_need_runtime(task: Task[Any, Any, Any], fns: list[Callable[..., Any]]) -> bool:
    fns = [*fns, *task.hooks("stop"), *task.hooks("metric"), *task.hooks("reward")]
    if any("runtime" in parameters(fn) for fn in fns):
        return True
    return any(requires_runtime(judge.score) for judge in task.plugged_judges())


TaskT = TypeVar("TaskT", bound=Task[Any, Any, Any], default=Task[Any, Any, Any])
