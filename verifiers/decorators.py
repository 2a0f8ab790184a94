"""Decorators that mark environment hooks and group reward functions.

``@vf.stop`` marks an async (or sync) method ``(self, state) -> bool`` checked after every turn;
higher ``priority`` runs first. ``@vf.cleanup`` marks a per-rollout handler ``(self, state)``
that always runs, also on error and cancellation. ``@vf.teardown`` marks a handler run once when
the environment is closed. ``@vf.group_reward`` marks a reward function that scores all rollouts
of one example together and returns one value per rollout.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

__all__ = [
    "SignalStage",
    "advantage",
    "cleanup",
    "discover",
    "discover_decorated",
    "group_reward",
    "is_group_reward",
    "metric",
    "reward",
    "setup",
    "stop",
    "teardown",
    "update",
]

SignalStage = Literal["rollout", "group"]

F = TypeVar("F", bound=Callable[..., Any])


class _Marker:
    """A decorator usable bare (``@vf.stop``) or with options (``@vf.stop(priority=10)``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.__name__ = kind
        self.__doc__ = (
            f"Mark a method as a ``{kind}`` hook (optionally ``priority=N``; higher first)."
        )

    @overload
    def __call__(self, func: F, *, priority: int = 0, stage: str = "rollout") -> F: ...
    @overload
    def __call__(
        self, func: None = None, *, priority: int = 0, stage: str = "rollout"
    ) -> Callable[[F], F]: ...
    def __call__(
        self, func: F | None = None, *, priority: int = 0, stage: str = "rollout"
    ) -> F | Callable[[F], F]:
        """``stage`` is accepted for the classic call shape and recorded on the function."""
        kind = self.kind

        def mark(f: F) -> F:
            setattr(f, kind, True)
            setattr(f, f"{kind}_priority", priority)
            setattr(f, f"{kind}_stage", stage)
            return f

        return mark(func) if func is not None else mark


stop = _Marker("stop")
cleanup = _Marker("cleanup")
teardown = _Marker("teardown")
# classic (0.3.x) markers: they record ``<kind>``, ``<kind>_priority`` and ``<kind>_stage`` on
# the function, as 0.3.x does; 0.3.x's classic environments do not act on them either
setup = _Marker("setup")
update = _Marker("update")
metric = _Marker("metric")
advantage = _Marker("advantage")


@overload
def reward(
    func: F, *, weight: float = 1.0, priority: int = 0, stage: SignalStage = "rollout"
) -> F: ...
@overload
def reward(
    func: None = None, *, weight: float = 1.0, priority: int = 0, stage: SignalStage = "rollout"
) -> Callable[[F], F]: ...
def reward(
    func: F | None = None,
    *,
    weight: float = 1.0,
    priority: int = 0,
    stage: SignalStage = "rollout",
) -> F | Callable[[F], F]:
    """Mark a reward signal (classic 0.3.x marker): records ``reward``, ``reward_weight``,
    ``reward_priority`` and ``reward_stage`` on the function."""

    def mark(f: F) -> F:
        marks = {"": True, "_weight": weight, "_priority": priority, "_stage": stage}
        for suffix, value in marks.items():
            setattr(f, f"reward{suffix}", value)
        return f

    return mark(func) if func is not None else mark


def discover_decorated(obj: object, attr: str) -> list[Callable[..., Any]]:
    """Bound methods of ``obj`` marked ``attr``, highest ``<attr>_priority`` first, then by
    name (the classic spelling of :func:`discover`)."""
    return discover(obj, attr)


def discover(obj: object, kind: str) -> list[Callable[..., Any]]:
    """Bound methods of ``obj`` marked with ``kind``, highest priority first, then by name."""
    found: dict[str, Callable[..., Any]] = {}
    for klass in reversed(type(obj).__mro__):
        for name, attr in vars(klass).items():
            if getattr(attr, kind, False) is True and callable(attr):
                found[name] = getattr(obj, name)
            elif name in found and not getattr(attr, kind, False):
                # overridden without the marker: the override wins and is not a hook
                del found[name]
    methods = list(found.values())
    methods.sort(key=lambda m: (-getattr(m, f"{kind}_priority", 0), m.__name__))
    return methods


def group_reward(func: F) -> F:
    """Mark a reward function as a group function.

    It receives the plural arguments it names (``prompts``, ``completions``, ``answers``,
    ``states``, ``infos``, ``tasks``) for all rollouts of one example and returns a list with
    one float per rollout.
    """
    func.group_reward = True  # type: ignore[attr-defined]
    return func


_PLURAL = frozenset({"prompts", "completions", "answers", "states", "infos", "tasks"})


def is_group_reward(func: Callable[..., Any]) -> bool:
    """True for ``@group_reward`` functions and for the classic plural-argument form."""
    if getattr(func, "group_reward", False) or getattr(func, "reward_stage", None) == "group":
        return True
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return any(p in _PLURAL for p in params)


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
