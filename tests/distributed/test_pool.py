"""The worker pool's bookkeeping, with stand-in actors (no cluster): what happens when the
workers die and their replacements never find a place (every node gone)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("ray")

from ray.exceptions import RayActorError

from verifiers.distributed.pool import WorkerPool
from verifiers.distributed.spec import EnvSpec, RayConfig
from verifiers.errors import InfraError


class _Method:
    def __init__(self, run: Any) -> None:
        self._run = run

    def remote(self, *args: Any) -> Any:
        return self._run(*args)


class _Handle:
    """An actor handle: the first one answers ``info`` and dies on ``run``; the ones started
    after it (replacements) never get a place, so their ``info`` never answers."""

    def __init__(self, placed: bool) -> None:
        self.info = _Method(self._info)
        self.run = _Method(self._run)
        self.close = _Method(self._info)
        self._placed = placed

    async def _info(self) -> dict[str, Any]:
        if not self._placed:
            await asyncio.Event().wait()  # pending placement, forever
        return {}

    async def _run(self, *args: Any) -> Any:
        raise RayActorError()


class _ActorClass:
    def __init__(self) -> None:
        self.started = 0

    def options(self, **options: Any) -> _ActorClass:
        return self

    def remote(self, *args: Any) -> _Handle:
        self.started += 1
        return _Handle(placed=self.started == 1)


async def test_a_run_whose_workers_all_died_fails_when_no_replacement_finds_a_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ray

    monkeypatch.setattr(ray, "kill", lambda handle: None)
    config = RayConfig(num_workers=1, start_timeout_s=0.5)
    pool = WorkerPool(config, EnvSpec("x"), client_factory=None)  # type: ignore[arg-type]
    actors = _ActorClass()
    monkeypatch.setattr("verifiers.distributed.worker.worker_actor_class", lambda: actors)
    await pool.start()
    assert pool.size == 1
    # the worker dies mid-call; its replacement waits for a place that never comes: the call
    # fails with the cause after start_timeout_s instead of waiting forever
    with pytest.raises(InfraError, match="none of the 1 replacements found a place"):
        await asyncio.wait_for(pool.call("run"), timeout=30)
    assert pool.stats.reruns == 1 and pool.stats.replaced == 1
    await pool.close()
    assert not ray.is_initialized()  # the error message did not start a Ray of its own
