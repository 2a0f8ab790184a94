"""Small async helpers shared across the SDK."""

from __future__ import annotations

import asyncio
import atexit
import inspect
import logging
import statistics
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

__all__ = [
    "EventLoopLagMonitor",
    "EventLoopLagStats",
    "NullAsyncContext",
    "call_maybe_async",
    "is_async_callable",
    "maybe_await",
    "maybe_call_with_named_args",
    "maybe_retry",
    "maybe_semaphore",
    "run_sync",
    "takes_named_context",
    "with_sem",
]

T = TypeVar("T")

_local = threading.local()
_runners: list[asyncio.Runner] = []
_runners_lock = threading.Lock()


def is_async_callable(func: Callable[..., Any]) -> bool:
    """True when calling ``func`` returns an awaitable (coroutine functions, async __call__,
    partials of either)."""
    inner = func
    while hasattr(inner, "func"):  # functools.partial
        inner = inner.func
    if inspect.iscoroutinefunction(inner):
        return True
    call = getattr(inner, "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


async def call_maybe_async(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``func`` and await the result if it is awaitable."""
    result = func(*args, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


_NAMED_CONTEXT: weakref.WeakKeyDictionary[Any, dict[bool, bool]] = weakref.WeakKeyDictionary()


def takes_named_context(handler: Any) -> bool:
    """Whether a cleanup handler names ``env`` (or takes ``**kwargs``): then it is called with
    its arguments by name, as 0.3.x calls them; else with the state as its one argument.
    Decided once per function (it runs after every rollout)."""
    func = getattr(handler, "__func__", handler)
    bound = func is not handler
    try:
        known = _NAMED_CONTEXT.get(func, {}).get(bound)
    except TypeError:  # not weak-referenceable
        known = None
    if known is not None:
        return known
    try:
        params = inspect.signature(handler).parameters
    except (TypeError, ValueError):
        return False
    named = "env" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    try:
        _NAMED_CONTEXT.setdefault(func, {})[bound] = named
    except TypeError:
        pass
    return named


def run_sync(coro: Coroutine[Any, Any, T], what: str, use_instead: str) -> T:
    """Run ``coro`` to completion from synchronous code, on an event loop kept per thread.

    The loop stays open between calls (unlike :func:`asyncio.run`), so an async client the
    caller passes again, such as an ``openai.AsyncOpenAI`` whose connection pool is bound to
    the loop that opened it, keeps working on the next blocking call. The loops are closed at
    interpreter exit. Inside a running event loop this refuses with a
    :class:`~verifiers.errors.ConfigError` naming ``use_instead``.
    """
    from verifiers.errors import ConfigError

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise ConfigError(
            f"{what} blocks and cannot run inside a running event loop (a notebook, an async "
            f"app); use `{use_instead}` there instead"
        )
    runner: asyncio.Runner | None = getattr(_local, "runner", None)
    if runner is None:
        runner = asyncio.Runner()
        _local.runner = runner
        with _runners_lock:
            if not _runners:
                atexit.register(_close_runners)
            _runners.append(runner)
    return runner.run(coro)


def _close_runners() -> None:
    with _runners_lock:
        runners = list(_runners)
        _runners.clear()
    for runner in runners:
        try:
            runner.close()
        except RuntimeError:  # a runner of another thread still running: leave it
            pass


# ---------------------------------------------------------------- classic helpers (0.3.x names)


async def maybe_await(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``func`` and await its result when that is awaitable (classic name)."""
    return await call_maybe_async(func, *args, **kwargs)


async def maybe_call_with_named_args(func: Callable[..., Any], **objects: Any) -> Any:
    """Call ``func`` with the ``objects`` its signature names (all of them when it takes
    ``**kwargs``), awaiting the result when needed."""
    params = inspect.signature(func).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return await call_maybe_async(func, **objects)
    return await call_maybe_async(func, **{k: v for k, v in objects.items() if k in params})


async def with_sem(sem: AbstractAsyncContextManager[Any], coro: Awaitable[T]) -> T:
    """Await ``coro`` while holding ``sem`` (a semaphore or any async context manager)."""
    async with sem:
        return await coro


class NullAsyncContext:
    """An async context manager that does nothing (the unlimited "semaphore")."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> bool:
        return False


async def maybe_semaphore(limit: int | None = None) -> AbstractAsyncContextManager[Any]:
    """A semaphore of ``limit`` slots, or a no-op context when ``limit`` is ``None`` or <= 0."""
    if limit and limit > 0:
        return asyncio.Semaphore(limit)
    return NullAsyncContext()


def maybe_retry(
    func: Callable[..., Awaitable[T]],
    max_retries: int = 0,
    initial: float = 1.0,
    max_wait: float = 60.0,
    error_types: tuple[type[BaseException], ...] | None = None,
) -> Callable[..., Awaitable[T]]:
    """``func`` retried up to ``max_retries`` times with exponential back-off (``initial``
    seconds doubling up to ``max_wait``) when it raises one of ``error_types`` (default:
    :class:`~verifiers.errors.InfraError` and :class:`~verifiers.errors.ModelError`) or
    returns a state (or list of states) whose ``error`` record names such a type. After the
    last try the result (or exception) is passed on unchanged."""
    if max_retries <= 0:
        return func
    from verifiers.errors import InfraError, ModelError

    types = error_types or (InfraError, ModelError)
    # an errored state records its exception's type name: match the types and their subclasses
    names: set[str] = set()
    pending: list[type[BaseException]] = list(types)
    while pending:
        cls = pending.pop()
        if cls.__name__ not in names:
            names.add(cls.__name__)
            pending.extend(cls.__subclasses__())

    def retryable(error: Any) -> bool:
        if isinstance(error, BaseException):
            return isinstance(error, types)
        if not isinstance(error, dict):
            return False
        # our record names the type under "type"; 0.3.x's serialised ErrorData under "error"
        return error.get("type") in names or error.get("error") in names

    def failed(result: Any) -> bool:
        states = result if isinstance(result, list) else [result]
        return any(isinstance(s, dict) and retryable(s.get("error")) for s in states)

    async def wrapper(*args: Any, **kwargs: Any) -> T:
        delay = initial
        for attempt in range(max_retries + 1):
            last = attempt == max_retries
            try:
                result = await func(*args, **kwargs)
            except types:
                if last:
                    raise
            else:
                if last or not failed(result):
                    return result
            await asyncio.sleep(delay)
            delay = min(delay * 2, max_wait)
        raise AssertionError("unreachable")

    return wrapper


class EventLoopLagMonitor:
    """Measures how late the event loop wakes a sleeper: run :meth:`run` as a background task;
    ``lags`` keeps the last ``max_measurements`` lags in seconds."""

    def __init__(self, measure_interval: float = 0.1, max_measurements: int = 1000) -> None:
        if measure_interval <= 0 or max_measurements <= 0:
            raise ValueError("measure_interval and max_measurements must be positive")
        self.measure_interval = measure_interval
        self.max_measurements = max_measurements
        self.lags: deque[float] = deque(maxlen=max_measurements)

    async def measure_lag(self) -> float:
        due = time.perf_counter() + self.measure_interval
        await asyncio.sleep(self.measure_interval)
        return time.perf_counter() - due

    async def run(self) -> None:
        while True:
            self.lags.append(await self.measure_lag())


@dataclass(slots=True)
class EventLoopLagStats:
    """Summary of an :class:`EventLoopLagMonitor`'s lags (seconds)."""

    min: float = 0.0
    mean: float = 0.0
    median: float = 0.0
    p90: float = 0.0
    p99: float = 0.0
    max: float = 0.0
    n: int = 0

    @classmethod
    def from_monitor(cls, monitor: EventLoopLagMonitor) -> EventLoopLagStats:
        lags = sorted(monitor.lags)
        n = len(lags)
        if n == 0:
            return cls()

        def pct(q: float) -> float:
            return lags[min(n - 1, round(q * (n - 1)))]

        return cls(
            lags[0],
            statistics.fmean(lags),
            statistics.median(lags),
            pct(0.9),
            pct(0.99),
            lags[-1],
            n,
        )


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
