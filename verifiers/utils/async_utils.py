"""Small async helpers shared across the SDK."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["call_maybe_async", "is_async_callable"]


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
