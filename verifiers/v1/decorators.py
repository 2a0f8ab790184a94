"""``@vf.reward``, ``@vf.metric``, ``@vf.stop`` and ``@vf.intercept``: tag Task methods;
Task.hooks finds them. A hook is called with the arguments it names (:func:`invoke`): by
parameter name (``task``, ``trace``, ``runtime``, ``state`` ...), and, where the caller offers
values keyed by type (``Request``, ``Response``, ``Trace``), by the parameter's annotation."""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, get_origin, get_type_hints, overload

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "call_hook",
    "discover",
    "hook_boundary",
    "intercept",
    "invoke",
    "invoke_all",
    "metric",
    "reward",
    "stop",
]


def _tag(kind: str, priority: int, weight: float | None = None) -> Callable[[F], F]:
    def apply(fn: F) -> F:
        setattr(fn, kind, True)
        setattr(fn, f"{kind}_priority", priority)
        if weight is not None:
            fn.__dict__["_vf_weight"] = weight
        return fn

    return apply


@overload
def reward(func: F, weight: float = 1.0, priority: int = 0) -> F: ...
@overload
def reward(func: None = None, weight: float = 1.0, priority: int = 0) -> Callable[[F], F]: ...
def reward(func: F | None = None, weight: float = 1.0, priority: int = 0) -> Any:
    """Mark a weighted reward method (``(self, trace[, task]) -> float`` or a dict of scores)."""
    apply = _tag("reward", priority, float(weight))
    return apply if func is None else apply(func)


@overload
def metric(func: F, priority: int = 0) -> F: ...
@overload
def metric(func: None = None, priority: int = 0) -> Callable[[F], F]: ...
def metric(func: F | None = None, priority: int = 0) -> Any:
    """Mark a metric method: recorded on the trace, not part of the reward."""
    apply = _tag("metric", priority)
    return apply if func is None else apply(func)


@overload
def stop(func: F, priority: int = 0) -> F: ...
@overload
def stop(func: None = None, priority: int = 0) -> Callable[[F], F]: ...
def stop(func: F | None = None, priority: int = 0) -> Any:
    """Mark a stop condition: the rollout ends when it returns true."""
    apply = _tag("stop", priority)
    return apply if func is None else apply(func)


@overload
def intercept(func: F, priority: int = 0) -> F: ...
@overload
def intercept(func: None = None, priority: int = 0) -> Callable[[F], F]: ...
def intercept(func: F | None = None, priority: int = 0) -> Any:
    """Mark an interceptor of a typed boundary: a method taking a ``vf.Request`` (the
    conversation about to reach the model: new user and tool messages may be rewritten) or a
    ``vf.Response`` (the model's reply before the harness gets it: its assistant message may be
    replaced by a text-only one), and optionally the ``vf.Trace``. It returns the replacement,
    or None to leave the boundary unchanged; a replacement is recorded on the trace
    (``request_rewrites`` / ``response_rewrites``)."""
    apply = _tag("intercept", priority)
    return apply if func is None else apply(func)


def _order(kind: str) -> Callable[[Callable[..., Any]], tuple[int, str]]:
    return lambda fn: (-int(getattr(fn, f"{kind}_priority", 0)), fn.__name__)


_TAGGED: dict[tuple[type, str], frozenset[str]] = {}


def discover(obj: object, kind: str) -> list[Callable[..., Any]]:
    """The bound methods of ``obj`` tagged ``kind`` (an undecorated override hides a tagged
    base method), highest priority first, then by name."""
    key = (type(obj), kind)
    names = _TAGGED.get(key)
    if names is None:
        names = _TAGGED[key] = frozenset(
            name
            for klass in type(obj).__mro__
            for name, value in vars(klass).items()
            if callable(value) and getattr(value, kind, False)
        )
    found = [getattr(obj, name) for name in names]
    found = [fn for fn in found if getattr(fn, kind, False)]
    return sorted(found, key=_order(kind))


def sort_hooks(fns: Iterable[Callable[..., Any]], kind: str) -> list[Callable[..., Any]]:
    return sorted(fns, key=_order(kind))


_INTROSPECTED: weakref.WeakKeyDictionary[Any, dict[bool, tuple[Any, ...]]] = (
    weakref.WeakKeyDictionary()
)


def _introspect(fn: Callable[..., Any]) -> tuple[Mapping[str, inspect.Parameter], dict[str, Any]]:
    """``fn``'s parameters and resolved annotations, computed once per underlying function
    (hooks run several times per rollout: ``inspect.signature`` and ``get_type_hints`` each
    time cost more than the rest of a single-turn rollout)."""
    func = getattr(fn, "__func__", fn)
    bound = func is not fn
    try:
        per = _INTROSPECTED.get(func)
    except TypeError:  # not weak-referenceable: computed every time
        per = None
    cached = per.get(bound) if per is not None else None
    if cached is None:
        try:
            hints = get_type_hints(fn)
        except Exception:  # an annotation that does not resolve binds by name only
            hints = {}
        cached = (inspect.signature(fn).parameters, hints)
        try:
            _INTROSPECTED.setdefault(func, {})[bound] = cached
        except TypeError:
            pass
    return cached[0], cached[1]


def parameters(fn: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    """``inspect.signature(fn).parameters``, cached per underlying function."""
    return _introspect(fn)[0]


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    return _introspect(fn)[1]


def invoke(fn: Callable[..., Any], available: Mapping[str | type, Any]) -> Any:
    """Call ``fn`` with the values of ``available`` its parameters ask for: a parameter whose
    name is a key gets that value; with type keys offered, a parameter still unbound whose
    annotation (or its generic origin) is a key gets that value. Returns what ``fn`` returns
    (an awaitable for a coroutine function). A parameter neither offers and that has no
    default is left to Python to report (a TypeError naming it)."""
    params = parameters(fn)
    kwargs = {name: available[name] for name in params if name in available}
    if any(isinstance(key, type) for key in available):
        hints = _hints(fn)
        for name in params:
            hint = hints.get(name)
            annotation = get_origin(hint) or hint
            if name not in kwargs and isinstance(annotation, type) and annotation in available:
                kwargs[name] = available[annotation]
    return fn(**kwargs)


async def call_hook(fn: Callable[..., Any], available: Mapping[str | type, Any]) -> Any:
    """:func:`invoke`, awaiting the result when it is awaitable."""
    result = invoke(fn, available)
    if inspect.isawaitable(result):
        result = await result
    return result


async def invoke_all(
    fns: list[Callable[..., Any]], available: Mapping[str | type, Any]
) -> list[Any]:
    """Call each hook concurrently with the arguments it names (``task``, ``trace``,
    ``runtime``, ``state`` ...), in the order given."""
    if len(fns) <= 1:  # nothing to run alongside: no task per hook
        return [await call_hook(fn, available) for fn in fns]
    return list(await asyncio.gather(*(call_hook(fn, available) for fn in fns)))


def hook_boundary(fn: Callable[..., Any], *, allow_trace: bool) -> type:
    """The boundary a stop or interceptor watches, from its annotated parameters: exactly one
    ``Request`` or ``Response`` parameter (a ``Trace`` one besides is allowed), or, where
    ``allow_trace`` (stops), only a ``Trace`` one. Raises TypeError otherwise."""
    from verifiers.v1.trace import Trace
    from verifiers.v1.types import Request, Response

    hints = _hints(fn)
    annotations = [
        get_origin(hints[name]) or hints[name] for name in parameters(fn) if name in hints
    ]
    boundaries = [kind for kind in annotations if kind in (Request, Response)]
    traces = sum(1 for kind in annotations if kind is Trace)
    if len(boundaries) == 1 and traces <= 1:
        return boundaries[0]  # type: ignore[no-any-return]
    if not boundaries:  # unannotated: the parameter's name says the boundary
        params = parameters(fn)
        named = [
            kind for name, kind in (("request", Request), ("response", Response)) if name in params
        ]
        if len(named) == 1 and not (set(params) & set(hints)):
            return named[0]
    if not boundaries and allow_trace and traces <= 1:
        return Trace  # a stop over the trace (or what it names: state, task ...)
    expected = "Request, Response, or Trace" if allow_trace else "Request or Response"
    raise TypeError(f"{fn.__name__} must have exactly one {expected} parameter")
