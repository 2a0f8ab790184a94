"""The driver's side of the cluster: connecting to it and a pool of rollout workers.

:func:`connect` joins (or, for ``"local"``, starts) a Ray cluster. :class:`WorkerPool` starts
the workers with the resources they declare, sends each call to the least busy live worker,
and when a worker (or its whole node) dies mid-call starts a replacement and sends the call
again, counting the re-run: a call's result is taken from exactly one worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verifiers.distributed.spec import ClientFactory, EnvSpec, RayConfig
from verifiers.errors import ConfigError, InfraError

__all__ = ["Connection", "WorkerPool", "connect", "ray_available"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Connection:
    """A connection to a cluster; ``owned`` when this process started it (``"local"``)."""

    address: str
    owned: bool
    started_ray: bool

    def close(self) -> None:
        """Disconnect (shutting a throwaway local cluster down)."""
        import ray

        if self.started_ray and ray.is_initialized():
            ray.shutdown()


def ray_available() -> bool:
    """Whether Ray is installed (the ``ray`` extra), without importing it."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def connect(address: str) -> Connection:
    """Join the cluster at ``address`` (``"auto"``, ``HOST:PORT``, ``ray://...``), or start a
    throwaway one on this machine with ``"local"``. Reuses a connection this process has."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "running on Ray needs the ray extra: pip install 'verifiers[ray]'"
        ) from None
    if ray.is_initialized():
        return Connection(address, owned=False, started_ray=False)
    kwargs: dict[str, Any] = {
        "ignore_reinit_error": True,
        "log_to_driver": False,
        "configure_logging": False,
    }
    kwargs["address"] = address
    if address == "local":  # a new instance, even where RAY_ADDRESS or `ray start` names one
        kwargs.update(num_cpus=os.cpu_count() or 1, include_dashboard=False)
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ConfigError(
            f"cannot connect to the Ray cluster at {address!r}: {e}",
        ) from None
    return Connection(address, owned=address == "local", started_ray=True)


@dataclass(slots=True)
class _Worker:
    handle: Any
    number: int
    busy: int = 0
    alive: bool = True
    ready: bool = False


@dataclass(slots=True)
class PoolStats:
    """What the pool saw: workers started, replaced, calls re-run, calls per node."""

    workers: int = 0
    replaced: int = 0
    reruns: int = 0
    by_node: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "replaced_workers": self.replaced,
            "reruns": self.reruns,
            "groups_by_node": dict(self.by_node),
        }


class WorkerPool:
    """Rollout workers placed by the resources they declare (see :class:`RayConfig`)."""

    def __init__(self, config: RayConfig, env_spec: EnvSpec, client_factory: ClientFactory):
        self.config = config
        self.env_spec = env_spec
        self.client_factory = client_factory
        self.stats = PoolStats()
        self.workers: list[_Worker] = []
        self._actor_class: Any = None
        self._changed = asyncio.Event()
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def size(self) -> int:
        return len([w for w in self.workers if w.alive])

    @property
    def handles(self) -> list[Any]:
        """The live workers' actor handles."""
        return [w.handle for w in self.workers if w.alive]

    async def start(self) -> None:
        """Start the workers and wait until each has loaded its environment (after
        ``config.start_timeout_s``, go on with those that have, if any)."""
        from verifiers.distributed.worker import worker_actor_class

        self._actor_class = worker_actor_class()
        count = self.config.num_workers or self._default_count()
        tasks = [asyncio.ensure_future(self._ready(self._spawn())) for _ in range(count)]
        _, waiting = await asyncio.wait(tasks, timeout=self.config.start_timeout_s)
        for task in waiting:  # still waiting for a place in the cluster: ready later
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
        for task in tasks:
            if task.done() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        if not any(w.ready for w in self.workers):
            raise InfraError(self._unplaced_message())

    def _unplaced_message(self) -> str:
        import ray

        free: Any = "unknown (not connected)"
        if ray.is_initialized():  # (asking otherwise would start a Ray instance of its own)
            try:
                free = {k: v for k, v in ray.available_resources().items() if "node:" not in k}
            except Exception as e:  # the cluster itself is gone
                free = f"unknown ({type(e).__name__}: {e})"
        return (
            f"no Ray rollout worker started within {self.config.start_timeout_s:.0f} s: each "
            f"asks for {self.config.actor_options()}, the cluster has {free} free; give the "
            "nodes those resources (e.g. ray start --resources '{\"sandbox\": 8}') or ask less"
        )

    async def call(
        self, method: str, *args: Any, on_node: Callable[[str], None] | None = None
    ) -> Any:
        """``method(*args)`` on the least busy live worker; when that worker dies before
        answering, again on another one (a re-run). Other errors propagate."""
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

        while True:
            worker = await self._pick()
            worker.busy += 1
            try:
                result = await getattr(worker.handle, method).remote(*args)
            except (RayActorError, ActorDiedError, ActorUnavailableError) as e:
                self._lost(worker, e)
                self.stats.reruns += 1
                continue
            finally:
                worker.busy -= 1
            if isinstance(result, dict) and result.get("node_id"):
                self.stats.by_node[str(result["node_id"])] += 1
            return result

    async def close(self) -> None:
        """Let each live worker close its environment, then end the workers."""
        import ray

        for task in list(self._pending):
            task.cancel()
        live = [w for w in self.workers if w.alive and w.ready]
        if live:
            await asyncio.gather(*(self._close_one(w) for w in live), return_exceptions=True)
        for w in self.workers:
            try:
                ray.kill(w.handle)
            except Exception:  # already gone
                pass
        self.workers.clear()

    # ------------------------------------------------------------------ internals

    def _default_count(self) -> int:
        import ray

        cpus = float(ray.cluster_resources().get("CPU", 1))
        per = self.config.num_cpus or 1.0
        return max(1, int(cpus // per))

    def _spawn(self) -> _Worker:
        handle = self._actor_class.options(**self.config.actor_options()).remote(
            self.env_spec, self.client_factory
        )
        worker = _Worker(handle, number=len(self.workers))
        self.workers.append(worker)
        self.stats.workers += 1
        return worker

    async def _ready(self, worker: _Worker) -> None:
        from ray.exceptions import RayActorError

        try:
            await worker.handle.info.remote()
            worker.ready = True
        except RayActorError as e:
            worker.alive = False
            logger.warning("Ray rollout worker %d did not start: %s", worker.number, e)
            cause = getattr(e, "cause", None) or e
            if isinstance(cause, ConfigError) or "ConfigError" in str(e):
                raise ConfigError(f"a Ray worker could not load the environment: {cause}") from None
        finally:
            self._changed.set()

    async def _pick(self) -> _Worker:
        """The least busy worker that has loaded its environment (a replacement still
        waiting for a place in the cluster is not given work). When none is ready for
        ``config.start_timeout_s`` (every node gone, say), the run fails with the cause."""
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        while True:
            live = [w for w in self.workers if w.alive]
            if not live:
                raise InfraError(
                    "every Ray rollout worker died and no replacement is left "
                    f"({self.stats.replaced} started); check the cluster's nodes (`ray status`)"
                )
            ready = [w for w in live if w.ready]
            if ready:
                return min(ready, key=lambda w: (w.busy, w.number))
            if deadline is None:
                deadline = loop.time() + self.config.start_timeout_s
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), max(deadline - loop.time(), 0.0))
            except TimeoutError:
                raise InfraError(
                    f"every Ray rollout worker died and none of the {len(live)} replacements "
                    f"found a place: {self._unplaced_message()}"
                ) from None

    def _lost(self, worker: _Worker, error: BaseException) -> None:
        if not worker.alive:
            return
        worker.alive = False
        budget = self.config.max_replacements
        if budget is None:
            budget = 2 * max(self.config.num_workers or len(self.workers), 1)
        logger.warning(
            "Ray rollout worker %d died (%s); its group runs again", worker.number, error
        )
        if self.stats.replaced < budget:
            self.stats.replaced += 1
            replacement = self._spawn()
            task = asyncio.ensure_future(self._ready(replacement))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
        self._changed.set()

    async def _close_one(self, worker: _Worker) -> None:
        await asyncio.wait_for(worker.handle.close.remote(), timeout=30)
