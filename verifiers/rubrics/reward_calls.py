"""How a rubric calls one reward function, and what it makes of the answer.

A reward function receives only the arguments it names; :func:`build_reward_call` reads its
signature once and records where each argument comes from (a rollout state key, a class object,
the state itself), so that scoring does no introspection. :class:`ScoringPlan` is a rubric's
calls in order; :class:`RolloutScores` collects one rollout's values and errors while it is
scored, and :func:`as_score` checks that an answer is a finite number.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifiers.errors import ConfigError
from verifiers.types import State

__all__ = [
    "RewardCall",
    "RolloutScores",
    "ScoringPlan",
    "as_score",
    "build_reward_call",
    "describe_func",
    "error_record",
    "func_name",
    "is_async_callable",
    "warn_duplicate_name",
]


# reward function argument -> (state key, default when the state lacks it)
_STATE_ARGS: dict[str, tuple[str, Any]] = {
    "prompt": ("prompt", None),
    "completion": ("completion", None),
    "answer": ("answer", ""),
    "info": ("info", None),
    "task": ("task", "default"),
    "example_id": ("example_id", None),
}


# group reward function argument -> state key
_GROUP_ARGS: dict[str, str] = {
    "prompts": "prompt",
    "completions": "completion",
    "answers": "answer",
    "infos": "info",
    "tasks": "task",
    "example_ids": "example_id",
}


_MISSING = object()

#: columns of a dataset row the rollout state holds under its own keys; a reward function's
#: ``**kwargs`` gets the row's other columns
ROW_INPUT_COLUMNS = frozenset({"prompt", "answer", "info", "example_id"})


def _row_field(state: State, column: str) -> Any:
    """``column`` of the rollout's dataset row (``state["input"]``), or ``_MISSING``."""
    row = state.get("input")
    if isinstance(row, Mapping) and column in row:
        return row[column]
    return _MISSING


def func_name(func: Callable[..., Any]) -> str:
    """The name a reward function is reported under: ``__name__``, the wrapped function's for a
    ``functools.partial``, the class name for a callable object."""
    name = getattr(func, "__name__", None)
    if isinstance(name, str):
        return name
    if isinstance(func, functools.partial):
        return func_name(func.func)
    return type(func).__name__


def describe_func(func: Callable[..., Any]) -> str:
    inner = func
    while isinstance(inner, functools.partial):
        inner = inner.func
    module = getattr(inner, "__module__", None) or type(inner).__module__
    qualname = getattr(inner, "__qualname__", None) or type(inner).__qualname__
    return f"{module}.{qualname}"


def warn_duplicate_name(
    log: logging.Logger, name: str, first: Callable[..., Any], second: Callable[..., Any]
) -> None:
    log.warning(
        "two reward functions named %r (%s and %s): both count in the reward, the metric "
        "shows one value; rename one to see both",
        name,
        describe_func(first),
        describe_func(second),
    )


def is_async_callable(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    if inspect.iscoroutinefunction(func):
        return True
    call = getattr(type(func), "__call__", None)  # noqa: B004 - the class's __call__
    return call is not None and not inspect.isfunction(func) and inspect.iscoroutinefunction(call)


@dataclass(slots=True)
class RewardCall:
    """One reward function with everything needed to call it without introspection."""

    name: str
    func: Callable[..., Any]
    weight: float
    group: bool
    is_async: bool
    const: dict[str, Any]  # class objects it receives
    from_state: tuple[tuple[str, str, Any], ...]  # (argument, state key, default or _MISSING)
    wants_state: str | None  # "state"/"states" when it receives the state(s) themselves
    required: frozenset[str]
    unknown: tuple[str, ...]  # required arguments a group function cannot be given
    score_on_error: bool
    row_columns: bool = False  # ``**kwargs`` of an individual function: gets the row's columns
    index: int = 0  # position in the plan: two functions may share a name
    source: int = 0  # which rubric of a RubricGroup it comes from

    def kwargs(self, state: State) -> dict[str, Any]:
        kw = dict(self.const)
        for arg, key, default in self.from_state:
            value = state.get(key, default)
            if value is _MISSING:
                value = _row_field(state, arg)
            if value is _MISSING:
                if arg in self.required:
                    raise ConfigError(
                        f"reward function {self.name!r} needs argument {arg!r}, which is not "
                        "one of prompt, completion, answer, info, task, example_id, state, "
                        "parser, a class object, a key of the rollout state or a column of "
                        "the dataset row"
                    )
                continue
            kw[arg] = {} if arg == "info" and value is None else value
        if self.row_columns:
            # ``**kwargs`` also receives the row's other columns (as in 0.3.x), below everything
            # named above
            row = state.get("input")
            if isinstance(row, Mapping):
                for column, value in row.items():
                    if column not in kw and column not in ROW_INPUT_COLUMNS:
                        kw[column] = value
        if self.wants_state:
            kw[self.wants_state] = state
        return kw

    def group_kwargs(self, states: Sequence[State]) -> dict[str, Any]:
        if self.unknown:
            raise ConfigError(
                f"group reward function {self.name!r} needs argument(s) {list(self.unknown)}; "
                f"group functions receive {', '.join([*_GROUP_ARGS, 'states'])}, parser and "
                "class objects"
            )
        kw = dict(self.const)
        for arg, key, default in self.from_state:
            kw[arg] = [s.get(key, default) for s in states]
        if self.wants_state:
            kw[self.wants_state] = list(states)
        return kw


def build_reward_call(
    func: Callable[..., Any],
    weight: float,
    group: bool,
    objects: dict[str, Any],
    score_on_error: bool,
) -> RewardCall:
    name = func_name(func)
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"cannot read the signature of reward function {name!r}: {exc}") from exc
    var_kw = False
    named: list[str] = []
    required: set[str] = set()
    for p in params.values():
        if p.kind is p.VAR_KEYWORD:
            var_kw = True
        elif p.kind is p.POSITIONAL_ONLY and p.default is p.empty:
            raise ConfigError(
                f"reward function {name!r} has a positional-only parameter {p.name!r}; reward "
                "functions receive keyword arguments"
            )
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            named.append(p.name)
            if p.default is p.empty:
                required.add(p.name)
    state_args = _GROUP_ARGS if group else {k: v[0] for k, v in _STATE_ARGS.items()}
    state_name = "states" if group else "state"
    if var_kw:
        named = [*named, *[n for n in (*state_args, state_name, *objects) if n not in named]]
    const: dict[str, Any] = {}
    from_state: list[tuple[str, str, Any]] = []
    wants_state: str | None = None
    unknown: list[str] = []
    for arg in named:
        if arg == state_name:
            wants_state = arg
        elif arg in objects:
            const[arg] = objects[arg]
        elif arg in state_args:
            key = state_args[arg]
            default = _STATE_ARGS[key][1]
            from_state.append((arg, key, default))
        elif group:
            if arg in required:
                unknown.append(arg)
        else:
            from_state.append((arg, arg, _MISSING))
    return RewardCall(
        name=name,
        func=func,
        weight=float(weight),
        group=group,
        is_async=is_async_callable(func),
        const=const,
        from_state=tuple(from_state),
        wants_state=wants_state,
        required=frozenset(required),
        unknown=tuple(unknown),
        score_on_error=score_on_error,
        row_columns=var_kw and not group,
    )


@dataclass(slots=True)
class ScoringPlan:
    individual: tuple[RewardCall, ...]
    group: tuple[RewardCall, ...]
    ordered: tuple[RewardCall, ...]  # registration order, for the reward sum and metrics
    any_async: bool


def error_record(name: str, exc: BaseException) -> dict[str, str]:
    return {
        "func": name,
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)),
    }


def as_score(name: str, value: Any) -> float:
    if isinstance(value, int | bool):
        return float(value)
    try:
        number = value if isinstance(value, float) else float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"reward function {name!r} returned {type(value).__name__} {value!r:.80}, "
            "expected a number"
        ) from None
    if not math.isfinite(number):
        raise ValueError(f"reward function {name!r} returned {number}, expected a finite number")
    return number


class RolloutScores:
    """Values and errors of one rollout while it is being scored."""

    __slots__ = ("errors", "values")

    def __init__(self) -> None:
        self.values: dict[int, float | None] = {}  # by the function's index in the plan
        self.errors: list[dict[str, str]] = []

    def fail(self, entry: RewardCall, exc: BaseException) -> None:
        self.values[entry.index] = None
        self.errors.append(error_record(entry.name, exc))
