"""Small async helpers shared across the SDK."""

from __future__ import annotations

import asyncio
import atexit
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["call_maybe_async", "is_async_callable", "run_sync"]

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
