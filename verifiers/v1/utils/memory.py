"""Giving a long-lived worker's freed memory back to the OS: a rollout parses and drops large
request bodies (base64 images) every turn, and glibc keeps the freed arenas, so without a trim
now and then the worker's resident size only grows."""

from __future__ import annotations

import asyncio
import ctypes
from collections.abc import Callable
from typing import Any

__all__ = ["trim_memory", "trim_memory_periodically"]

TRIM_EVERY = 16
"""Finished rollouts between two trims (a trim walks every arena: not on every rollout)."""

_trim: Callable[[int], Any] | None = None
_resolved = False
_since_trim = 0


def _malloc_trim() -> Callable[[int], Any] | None:
    """glibc's ``malloc_trim``, looked up once; None off glibc (musl, macOS)."""
    global _trim, _resolved
    if not _resolved:
        _resolved = True
        try:
            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = None
    return _trim


def trim_memory() -> None:
    """``malloc_trim(0)`` where glibc has it (else nothing). It can block for tens of
    milliseconds on a large heap: off the event loop, use :func:`trim_memory_periodically`."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


async def trim_memory_periodically() -> None:
    """Count one finished rollout; every :data:`TRIM_EVERY` th, :func:`trim_memory` in a
    worker thread (the call releases the GIL: other rollouts go on meanwhile)."""
    global _since_trim
    if _malloc_trim() is None:
        return
    _since_trim += 1
    if _since_trim >= TRIM_EVERY:
        _since_trim = 0
        await asyncio.to_thread(trim_memory)
