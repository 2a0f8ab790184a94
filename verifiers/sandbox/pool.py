"""A pool of blank, pre-started sandboxes with two separate limits.

``max_live`` bounds the sandboxes alive at once (memory: blank ones included), ``max_exec`` the
commands executing at once across all of the pool's sandboxes (CPU: default 2x cores). A
sandbox handed out by :meth:`SandboxPool.acquire` is fresh and is stopped, never reused, when
released.

>>> async with SandboxPool(prestart=4) as pool:
...     async with pool.sandbox() as sb:
...         await sb.exec("echo hi")
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from verifiers.errors import ConfigError, SandboxError
from verifiers.sandbox.base import Sandbox, SandboxLimits

__all__ = ["SandboxPool", "default_exec_limit"]


def default_exec_limit() -> int:
    """Commands executing at once: twice the cores this process may use."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return 2 * cores


class SandboxPool:
    """Hands out fresh started sandboxes; keeps ``prestart`` blank ones warm."""

    def __init__(
        self,
        backend: str | None = None,
        *,
        limits: SandboxLimits | None = None,
        network: bool = False,
        prestart: int = 0,
        max_live: int = 256,
        max_exec: int | None = None,
        **options: Any,
    ) -> None:
        if max_live < 1:
            raise ConfigError(f"max_live must be >= 1, got {max_live}")
        if prestart < 0 or prestart > max_live:
            raise ConfigError(
                f"prestart must be between 0 and max_live ({max_live}), got {prestart}"
            )
        self.backend = backend
        self.limits = limits or SandboxLimits()
        self.network = network
        self.prestart = prestart
        self.max_live = max_live
        self.max_exec = max_exec or default_exec_limit()
        self._options = options
        self._live = asyncio.Semaphore(max_live)
        self._exec = asyncio.Semaphore(self.max_exec)
        self._blank: asyncio.Queue[Sandbox] = asyncio.Queue()
        self._starting: set[asyncio.Task[None]] = set()
        self._out: set[Sandbox] = set()
        self._closed = False

    @property
    def exec_semaphore(self) -> asyncio.Semaphore:
        return self._exec

    async def __aenter__(self) -> SandboxPool:
        await self.fill()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _new(self, limits: SandboxLimits | None = None, network: bool | None = None) -> Sandbox:
        from verifiers.sandbox import create_sandbox

        sb = create_sandbox(
            self.backend,
            limits=limits or self.limits,
            network=self.network if network is None else network,
            **self._options,
        )
        sb.set_exec_semaphore(self._exec)
        return sb

    async def fill(self) -> None:
        """Start blank sandboxes until ``prestart`` are ready; waits for them."""
        self.refill()
        if self._starting:
            await asyncio.gather(*self._starting, return_exceptions=True)

    def refill(self) -> None:
        """Start (in the background) the blank sandboxes missing to reach ``prestart``."""
        if self._closed:
            return
        missing = self.prestart - self._blank.qsize() - len(self._starting)
        for _ in range(max(0, missing)):
            task = asyncio.ensure_future(self._start_blank())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start_blank(self) -> None:
        await self._live.acquire()
        sb = self._new()
        try:
            await sb.start()
            if self._closed:
                raise SandboxError("the pool was closed")
        except (SandboxError, asyncio.CancelledError):
            # acquire() starts its own sandbox and reports the error
            await sb.stop()
            self._live.release()
            return
        self._blank.put_nowait(sb)

    async def acquire(
        self, *, limits: SandboxLimits | None = None, network: bool | None = None
    ) -> Sandbox:
        """A fresh started sandbox (a blank one when ready and the pool's ``limits`` and
        ``network`` are wanted). Release it with :meth:`release`."""
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        default = (limits is None or limits == self.limits) and (
            network is None or network == self.network
        )
        while default and not self._blank.empty():
            sb = self._blank.get_nowait()
            if sb.running:
                self._out.add(sb)
                self.refill()
                return sb
            self._live.release()
        await self._live.acquire()
        sb = self._new(limits, network)
        try:
            await sb.start()
        except BaseException:
            self._live.release()
            raise
        self._out.add(sb)
        self.refill()
        return sb

    async def release(self, sandbox: Sandbox) -> None:
        """Stop a sandbox from :meth:`acquire` (sandboxes are never reused)."""
        if sandbox not in self._out:
            await sandbox.stop()
            return
        self._out.discard(sandbox)
        try:
            await sandbox.stop()
        finally:
            self._live.release()

    @contextlib.asynccontextmanager
    async def sandbox(self) -> AsyncIterator[Sandbox]:
        sb = await self.acquire()
        try:
            yield sb
        finally:
            await self.release(sb)

    @property
    def live(self) -> int:
        return self._blank.qsize() + len(self._out)

    async def close(self) -> None:
        """Stop every sandbox of the pool (blank and handed out)."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        sandboxes: list[Sandbox] = []
        while not self._blank.empty():
            sandboxes.append(self._blank.get_nowait())
        sandboxes.extend(self._out)
        self._out.clear()
        await asyncio.gather(*(sb.stop() for sb in sandboxes), return_exceptions=True)
