"""Thread pools sized to a run's concurrency (0.3.x's ``verifiers.utils.thread_utils``).

Code that runs blocking work in its own executor registers it (:func:`register_executor`);
:func:`scale_executors` then sizes every registered executor, and the event loop's default
one, for the number of rollouts run at once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

__all__ = [
    "THREAD_LOCAL_STORAGE",
    "Executor",
    "ScalingFn",
    "get_or_create_thread_attr",
    "install_default_executor",
    "register_executor",
    "scale_executors",
    "unregister_executor",
]

logger = logging.getLogger(__name__)

THREAD_LOCAL_STORAGE = threading.local()

ScalingFn = Callable[[int], int]
Executor = ThreadPoolExecutor | ProcessPoolExecutor

_registry: dict[str, tuple[Executor, ScalingFn]] = {}
_default_executor: ThreadPoolExecutor | None = None
_concurrency: int | None = None  # the last scale_executors() target


def get_or_create_thread_attr(
    key: str, factory: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """This thread's value under ``key``, made by ``factory(*args, **kwargs)`` the first time."""
    value = getattr(THREAD_LOCAL_STORAGE, key, None)
    if value is None:
        value = factory(*args, **kwargs)
        setattr(THREAD_LOCAL_STORAGE, key, value)
    return value


def _set_max_workers(executor: Executor, workers: int) -> None:
    # both pools start workers on demand, so a larger limit takes effect on the next submit
    executor._max_workers = workers  # type: ignore[union-attr]


def register_executor(name: str, executor: Executor, scaling_fn: ScalingFn | None = None) -> None:
    """Size ``executor`` with every later :func:`scale_executors` call (``scaling_fn`` maps
    the concurrency to its worker count; one worker per rollout by default), and at once when
    a concurrency was set already."""
    fn = scaling_fn or (lambda concurrency: concurrency)
    _registry[name] = (executor, fn)
    if _concurrency is not None:
        _set_max_workers(executor, max(1, fn(_concurrency)))


def unregister_executor(name: str) -> None:
    """Stop sizing the executor registered as ``name`` (it is not shut down)."""
    _registry.pop(name, None)


def scale_executors(concurrency: int) -> int:
    """Size the default executor (one thread per rollout) and every registered executor for
    ``concurrency``; bind the default one to the running event loop, if any (else call
    :func:`install_default_executor` inside the loop). Returns ``concurrency``."""
    global _default_executor, _concurrency
    _concurrency = concurrency
    if _default_executor is None:
        _default_executor = ThreadPoolExecutor(
            max_workers=max(1, concurrency), thread_name_prefix="vf-default"
        )
    else:
        _set_max_workers(_default_executor, max(1, concurrency))
    install_default_executor()
    for name, (executor, fn) in _registry.items():
        _set_max_workers(executor, max(1, fn(concurrency)))
        logger.debug("executor %s sized for concurrency %d", name, concurrency)
    return concurrency


def install_default_executor() -> None:
    """Make the sized default executor the running loop's default (no-op without one)."""
    if _default_executor is None:
        return
    try:
        asyncio.get_running_loop().set_default_executor(_default_executor)
    except RuntimeError:
        pass  # no running loop


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
