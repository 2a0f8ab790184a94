"""Garbage-collector settings for a batch of rollouts.

With a thousand rollouts in flight the process holds hundreds of thousands of live objects
(imported modules, datasets, every rollout's messages), and CPython's default thresholds run
a collection every 700 net allocations, each older one scanning everything alive: on a
single-turn rollout that was a quarter of its CPU. :func:`batch_gc` freezes what was alive
before the batch (never scanned again until the batch ends) and collects the young
generation less often, then restores both.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["batch_gc"]

YOUNG_THRESHOLD = 20_000
"""Net allocations between young collections during a batch (CPython's default: 700)."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def batch_gc() -> Iterator[None]:
    """Freeze the objects alive now and raise the young generation's threshold until the
    outermost ``with`` ends (nested and concurrent batches share one setting)."""
    global _depth, _saved
    with _lock:
        _depth += 1
        if _depth == 1:
            _saved = gc.get_threshold()
            young, middle, old = _saved
            if gc.isenabled() and young:  # a disabled collector is left alone
                gc.freeze()
                gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
            else:
                _saved = None
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                gc.unfreeze()
                _saved = None
