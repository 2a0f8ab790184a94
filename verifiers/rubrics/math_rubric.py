"""Math answers checked with math-verify, in a process pool, with a per-call timeout.

``MathRubric`` scores ``correct_answer``: 1.0 when the parsed answer (thinking stripped, the last
``\\boxed{}`` by default) is mathematically equal to the gold answer, else 0.0.

Verification runs in a shared ``ProcessPoolExecutor`` (forkserver start method where available,
else spawn; created on first use, never at import). Each call has ``timeout_seconds`` inside the
worker, counted in CPU seconds (an ``ITIMER_PROF`` timer, so that a busy machine does not turn
slow scheduling into timeouts); a worker that does not answer within ``timeout_seconds`` +
``hard_timeout_grace`` (stuck in C code) is killed with its pool, and a fresh pool serves the
next calls. A timed-out answer scores 0 (a pathological answer is the model's fault, not an
error) and the rollout's ``metrics["math_verify_timeout"]`` is 1.0.

As with any process pool, a script that scores with ``MathRubric`` must guard its entry point
with ``if __name__ == "__main__":`` (worker processes import the main module).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any

from verifiers.errors import ConfigError
from verifiers.parsers.extract import extract_boxed_answer
from verifiers.parsers.maybe_think_parser import MaybeThinkParser
from verifiers.parsers.parser import Parser
from verifiers.rubrics.rubric import Rubric
from verifiers.types import Messages, State

# parse, verify: math-verify's, served by __getattr__
__all__ = ["MathRubric", "parse", "shutdown_math_pools", "verify", "verify_response"]  # noqa: F822

TIMEOUT_METRIC = "math_verify_timeout"

# -- worker side --------------------------------------------------------------------------------


class _VerifyTimeout(BaseException):
    """Raised by the alarm inside a worker. A BaseException, so that math-verify's and sympy's
    ``except Exception`` handlers cannot swallow it."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _VerifyTimeout


def _init_worker() -> None:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    import math_verify  # noqa: F401 - import once per worker, not inside the timed call

    module = sys.modules[__name__]
    _ = (module.parse, module.verify)  # resolved once per worker, not inside the timed call


def _boxed(text: str) -> str:
    return text if "\\boxed" in text else f"\\boxed{{{text}}}"


# ``parse`` and ``verify`` here (the classic module-level names) are math-verify's own
# functions, served on first use by the module ``__getattr__`` (verifiers.extension_points);
# the checks call them through the module, so a replacement (a test's monkeypatch) is used


def _mv_parse(*args: Any, **kwargs: Any) -> Any:
    return sys.modules[__name__].parse(*args, **kwargs)


def _mv_verify(*args: Any, **kwargs: Any) -> Any:
    return sys.modules[__name__].verify(*args, **kwargs)


def _is_verify_timeout(exc: BaseException) -> bool:
    """Our alarm's timeout, or math-verify's own ``TimeoutException`` (a ``BaseException``)."""
    if isinstance(exc, _VerifyTimeout):
        return True
    cls = type(exc)
    return cls.__name__ == "TimeoutException" and cls.__module__.startswith("math_verify")


def _verify_timed(response: str, answer: str, timeout: float) -> float:
    # the budget is the worker's CPU time (ITIMER_PROF), not wall time: on a busy machine a
    # verification that waits for a core is not cut off (and scored 0) for the wait; a call
    # that stops using CPU altogether is the parent's hard timeout's to catch
    previous = signal.signal(signal.SIGPROF, _on_alarm)
    signal.setitimer(signal.ITIMER_PROF, timeout)
    try:
        gold = _mv_parse(_boxed(answer), parsing_timeout=None)
        if not gold:
            return 0.0
        predicted = _mv_parse(_boxed(response), parsing_timeout=None)
        if not predicted:
            return 0.0
        return 1.0 if _mv_verify(gold, predicted, timeout_seconds=None) else 0.0
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _verify(response: str, answer: str, timeout: float) -> tuple[float, bool]:
    """(score, timed out). Runs in a worker process."""
    try:
        return _verify_timed(response, answer, timeout), False
    except _VerifyTimeout:
        return 0.0, True


# -- parent side: shared pools ------------------------------------------------------------------

_pools: dict[int, ProcessPoolExecutor] = {}
_pools_lock = threading.Lock()
_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)
_exit_hook_installed = False


def _mp_context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _pool(max_workers: int) -> ProcessPoolExecutor:
    global _exit_hook_installed
    with _pools_lock:
        pool = _pools.get(max_workers)
        if pool is None:
            pool = ProcessPoolExecutor(
                max_workers=max_workers, mp_context=_mp_context(), initializer=_init_worker
            )
            _pools[max_workers] = pool
            if not _exit_hook_installed:
                # runs before concurrent.futures joins its workers at interpreter exit, so a
                # worker stuck in C code cannot hang the exit
                register = getattr(threading, "_register_atexit", None)
                if register is not None:
                    register(shutdown_math_pools)
                _exit_hook_installed = True
        return pool


def _kill(pool: ProcessPoolExecutor) -> None:
    with _pools_lock:
        for key, existing in list(_pools.items()):
            if existing is pool:
                del _pools[key]
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for p in processes:
        p.kill()
    pool.shutdown(wait=False)  # queued calls fail with BrokenProcessPool and are retried
    for p in processes:
        p.join(timeout=5)


def shutdown_math_pools() -> None:
    """Stop every math-verify worker (also called at interpreter exit)."""
    with _pools_lock:
        pools = list(_pools.values())
    for pool in pools:
        _kill(pool)


def _gate(max_workers: int) -> asyncio.Semaphore:
    """At most ``max_workers`` calls in flight per loop and pool, so that the hard timeout
    measures running time, not time waiting in the pool's queue."""
    loop = asyncio.get_running_loop()
    gates = _gates.setdefault(loop, {})
    gate = gates.get(max_workers)
    if gate is None:
        gate = gates[max_workers] = asyncio.Semaphore(max_workers)
    return gate


# -- the rubric ---------------------------------------------------------------------------------


class MathRubric(Rubric):
    """Rewards mathematically correct answers (``correct_answer``, weight 1.0) plus any
    ``funcs`` given.

    ``parser`` defaults to ``MaybeThinkParser(extract_fn=partial(extract_boxed_answer,
    strict=True))``: thinking is stripped and the last ``\\boxed{}`` is the answer (no box: 0).
    ``max_workers`` (default ``min(8, cpu count)``) sizes the shared process pool;
    ``timeout_seconds`` bounds each verification; answers longer than ``max_verify_chars``
    score 0 without verification.
    """

    MAX_VERIFY_CHARS = 50_000
    hard_timeout_grace: float = 20.0
    """Seconds a worker gets beyond ``timeout_seconds`` (worker start-up included) before it is
    killed as stuck."""

    def __init__(
        self,
        funcs: Iterable[Callable[..., Any]] | None = None,
        weights: Iterable[float] | None = None,
        parser: Parser | None = None,
        max_workers: int | None = None,
        timeout_seconds: float = 5,
        max_verify_chars: int = MAX_VERIFY_CHARS,
        *,
        score_on_error: bool = False,
    ) -> None:
        if timeout_seconds <= 0:
            raise ConfigError(f"timeout_seconds must be positive, got {timeout_seconds}")
        workers = max_workers if max_workers is not None else min(8, os.cpu_count() or 1)
        if workers < 1:
            raise ConfigError(f"max_workers must be at least 1, got {max_workers}")
        if parser is None:
            parser = MaybeThinkParser(extract_fn=partial(extract_boxed_answer, strict=True))
        super().__init__(funcs=funcs, weights=weights, parser=parser, score_on_error=score_on_error)
        self.max_workers = workers
        self.timeout_seconds = float(timeout_seconds)
        self.max_verify_chars = max_verify_chars
        self.add_reward_func(self.correct_answer)

    async def verify(self, response: str, answer: str) -> tuple[float, bool]:
        """``(score, timed_out)`` for one parsed response against the gold answer."""
        for attempt in range(2):
            async with _gate(self.max_workers):
                pool = _pool(self.max_workers)
                try:
                    future = pool.submit(_verify, response, answer, self.timeout_seconds)
                    return await asyncio.wait_for(
                        asyncio.wrap_future(future), self.timeout_seconds + self.hard_timeout_grace
                    )
                except TimeoutError:
                    _kill(pool)  # a worker is stuck where the alarm cannot reach it
                    return 0.0, True
                except BrokenProcessPool:
                    # the pool was killed for another call's stuck worker: retry once
                    _kill(pool)
                    if attempt:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def correct_answer(
        self,
        parser: Parser,
        completion: Messages | str,
        answer: Any,
        state: State | None = None,
    ) -> float:
        """1.0 when the parsed answer equals the gold answer (math-verify), else 0.0."""
        response = parser.parse_answer(completion) or ""
        score, timed_out = 0.0, False
        if response.strip() and len(response) <= self.max_verify_chars:
            score, timed_out = await self.verify(response, str(answer))
        if state is not None:
            metrics = state.get("metrics")
            if not isinstance(metrics, dict):
                metrics = state["metrics"] = {}
            metrics[TIMEOUT_METRIC] = 1.0 if timed_out else 0.0
        return score


def verify_response(
    response: str, answer: str, max_verify_chars: int, timeout_seconds: int = 5
) -> tuple[float, float]:
    """``(score, seconds)`` of checking ``response`` against ``answer`` with math-verify in this
    process (the classic module-level helper). An empty response, one longer than
    ``max_verify_chars``, an exception from math-verify or a timeout (main thread only) scores
    0; cancellation, ``KeyboardInterrupt`` and ``SystemExit`` propagate."""
    import time

    started = time.perf_counter()
    if not response or len(response) > max_verify_chars:
        return 0.0, time.perf_counter() - started
    try:
        if threading.current_thread() is threading.main_thread():
            score = _verify_timed(response, answer, float(timeout_seconds))
        else:  # signal timers work only in the main thread: check without the timer
            gold = _mv_parse(_boxed(answer), parsing_timeout=None)
            predicted = _mv_parse(_boxed(response), parsing_timeout=None)
            score = 1.0 if gold and predicted and _mv_verify(gold, predicted) else 0.0
    except BaseException as exc:
        if not (isinstance(exc, Exception) or _is_verify_timeout(exc)):
            raise
        score = 0.0
    return score, time.perf_counter() - started


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
