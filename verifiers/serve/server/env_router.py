"""``EnvRouter``: a pool of :class:`~verifiers.serve.EnvWorker` processes (classic
``verifiers.serve.server.env_router``).

The router spawns ``num_workers`` workers (``EnvWorker.run_worker`` in spawned processes), each
owning the environment, and talks to them over ZeroMQ IPC sockets:

- :meth:`EnvRouter.dispatch_request` pushes ``[client_id, request_id, payload]`` to the
  worker with the fewest requests in flight; :meth:`EnvRouter.forward_cancel` sends that
  worker an empty payload (cancel);
- :meth:`EnvRouter.run` (a background loop) hands each worker answer to its ``on_response``
  callback as ``(client_id, request_id, response)``, keeps the workers' stats (their
  heartbeat), logs them every ``stats_log_interval`` seconds, and restarts a worker that dies
  (at once) or whose heartbeat stops for ``worker_heartbeat_timeout`` seconds; the requests
  it had are sent again to the pool.

The payloads are those of :mod:`verifiers.serve.protocol`: a transport in front of the router
(a socket answering clients) forwards them unchanged. ::

    router = EnvRouter("my-env", {"n": 10}, num_workers=4)
    task = asyncio.create_task(router.run(on_response=send_back, stop_event=stop))
    await router.dispatch_request(client_id, request_id, payload)
    ...
    stop.set(); await task; await router.close()
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing as mp
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import zmq
import zmq.asyncio
from pydantic import BaseModel, Field

from verifiers.serve.protocol import pack, unpack
from verifiers.serve.server.env_worker import EnvWorkerStats, _lag_text
from verifiers.utils.async_utils import EventLoopLagMonitor, EventLoopLagStats
from verifiers.utils.process_utils import terminate_process, terminate_processes
from verifiers.utils.serve_utils import make_ipc_address

__all__ = [
    "ActiveRequestInfo",
    "EnvRouter",
    "EnvRouterStats",
    "OnResponseCallback",
    "WorkerHandle",
]

#: the router's answer callback: ``(client_id, request_id, response payload)``
OnResponseCallback = Callable[[bytes, bytes, bytes], Awaitable[None]]


@dataclass
class ActiveRequestInfo:
    """A request a worker is running (kept to send it again if the worker dies)."""

    client_id: bytes
    request_id: bytes
    worker_id: int
    payload: bytes
    runs: int = 1
    """How many workers were given it (a request is re-sent after one death only)."""


@dataclass
class WorkerHandle:
    """The router's view of one worker: its process, address, socket and requests."""

    worker_id: int
    process: BaseProcess
    address: str
    socket: zmq.asyncio.Socket
    active_requests: dict[bytes, ActiveRequestInfo] = field(default_factory=dict)
    last_heartbeat: float = 0.0
    stats: EnvWorkerStats | None = None

    @property
    def active_count(self) -> int:
        return len(self.active_requests)


class EnvRouterStats(BaseModel):
    """The router's event-loop lag and each worker's last stats."""

    lag: EventLoopLagStats = Field(default_factory=EventLoopLagStats)
    workers: dict[int, EnvWorkerStats | None] = Field(default_factory=dict)

    @property
    def num_workers(self) -> int:
        return len(self.workers)

    @property
    def active_tasks(self) -> int:
        return sum(w.active_tasks for w in self.workers.values() if w is not None)

    def __str__(self) -> str:
        counts = ", ".join(
            f"W{wid}: {w.active_tasks if w is not None else '?'}"
            for wid, w in sorted(self.workers.items())
        )
        width = max([len("Server"), *(len(f"W{wid}") for wid in self.workers)])
        lines = [
            f"Active tasks: {self.active_tasks} ({counts})",
            f"  {'Server':<{width}} | Lag: {_lag_text(self.lag)}",
        ]
        lines += [
            f"  {f'W{wid}':<{width}} | {w if w is not None else 'no stats yet'}"
            for wid, w in sorted(self.workers.items())
        ]
        return "\n".join(lines)


class EnvRouter:
    """Manages a pool of :class:`~verifiers.serve.EnvWorker` processes (see the module
    docstring). Arguments as :class:`~verifiers.serve.EnvServer` takes them (the first seven
    go to every worker); ``worker_check_interval``: seconds between heartbeat checks."""

    def __init__(
        self,
        env_id: str,
        env_args: dict[str, Any] | None = None,
        extra_env_kwargs: dict[str, Any] | None = None,
        log_level: str | None = None,
        log_dir: str | None = None,
        console_logging: bool = True,
        json_logging: bool = False,
        *,
        num_workers: int = 1,
        worker_heartbeat_timeout: float = 30.0,
        stats_log_interval: float = 10.0,
        death_pipe: Connection | None = None,
        worker_check_interval: float = 5.0,
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 1:
            from verifiers.errors import ConfigError

            raise ConfigError(f"num_workers must be an integer >= 1, got {num_workers!r}")
        self.logger = logging.getLogger(f"{__name__}.{type(self).__name__}")
        self.env_id = env_id
        self.env_args = dict(env_args or {})
        self.extra_env_kwargs = dict(extra_env_kwargs or {})
        self.log_level = log_level
        self.log_dir = log_dir
        self.console_logging = console_logging
        self.json_logging = json_logging
        self.num_workers = num_workers
        self.worker_heartbeat_timeout = worker_heartbeat_timeout
        self.stats_log_interval = stats_log_interval
        self.worker_check_interval = worker_check_interval
        self.death_pipe = death_pipe
        self.session_id = uuid.uuid4().hex[:12]

        self.ctx = zmq.asyncio.Context()
        self.response_address = make_ipc_address(self.session_id, "responses")
        self.response_pull = self.ctx.socket(zmq.PULL)
        self.response_pull.setsockopt(zmq.RCVHWM, 0)
        self.response_pull.setsockopt(zmq.LINGER, 0)
        self.response_pull.bind(self.response_address)
        self.stats_address = make_ipc_address(self.session_id, "stats")
        self.stats_pull = self.ctx.socket(zmq.PULL)
        self.stats_pull.setsockopt(zmq.RCVHWM, 0)
        self.stats_pull.setsockopt(zmq.LINGER, 0)
        self.stats_pull.bind(self.stats_address)

        self.workers: dict[int, WorkerHandle] = {}
        self.request_to_worker: dict[bytes, int] = {}
        self.lag_monitor = EventLoopLagMonitor()
        self.ipc_paths = [
            self.response_address.removeprefix("ipc://"),
            self.stats_address.removeprefix("ipc://"),
        ]
        self._background: list[asyncio.Task[None]] = []
        self._restarting: set[int] = set()
        self._closing = False
        self._on_response: OnResponseCallback | None = None

    @property
    def active_requests(self) -> dict[bytes, ActiveRequestInfo]:
        """Every request in flight, over all workers."""
        return {rid: info for w in self.workers.values() for rid, info in w.active_requests.items()}

    def get_worker_name(self, worker_id: int) -> str:
        return f"{self.env_id}-{worker_id}"

    def get_worker_address(self, worker_id: int) -> str:
        return make_ipc_address(self.session_id, self.get_worker_name(worker_id))

    # ------------------------------------------------------------------ workers

    def start_worker(self, worker_id: int) -> WorkerHandle:
        """Spawn worker ``worker_id`` and connect to it (it is not yet in :attr:`workers`)."""
        from verifiers.serve.server.env_worker import EnvWorker

        name = self.get_worker_name(worker_id)
        address = self.get_worker_address(worker_id)
        path = address.removeprefix("ipc://")
        if path not in self.ipc_paths:
            self.ipc_paths.append(path)
        process = mp.get_context("spawn").Process(
            target=EnvWorker.run_worker,
            args=(
                self.env_id,
                self.env_args,
                self.extra_env_kwargs,
                self.log_level,
                self.log_dir,
                self.console_logging,
                self.json_logging,
            ),
            kwargs={
                "worker_id": worker_id,
                "worker_name": name,
                "request_address": address,
                "response_address": self.response_address,
                "stats_address": self.stats_address,
                "death_pipe": self.death_pipe,
            },
            name=name,
            daemon=False,
        )
        process.start()
        sock = self.ctx.socket(zmq.PUSH)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.LINGER, 5000)
        sock.connect(address)
        handle = WorkerHandle(worker_id=worker_id, process=process, address=address, socket=sock)
        self._watch_death(handle)
        self.logger.info(
            "started env worker %s (id %d, pid %s) on %s", name, worker_id, process.pid, address
        )
        return handle

    def _watch_death(self, handle: WorkerHandle) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop yet: check_workers finds a death
            return
        loop.add_reader(handle.process.sentinel, self._on_death, handle)

    def _on_death(self, handle: WorkerHandle) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(handle.process.sentinel)
        handle.process.join(0)  # reap it, for its exit code
        if self._closing or self.workers.get(handle.worker_id) is not handle:
            return
        self.logger.warning(
            "env worker %d (pid %s) died with exit code %s: restarting it",
            handle.worker_id,
            handle.process.pid,
            handle.process.exitcode,
        )
        task = loop.create_task(self.restart_worker(handle.worker_id))
        self._background.append(task)

    def start_workers(self) -> None:
        """Spawn every worker (and the router's lag monitor)."""
        self._background.append(asyncio.get_running_loop().create_task(self.lag_monitor.run()))
        for worker_id in range(self.num_workers):
            self.workers[worker_id] = self.start_worker(worker_id)

    def select_worker(self) -> int:
        """The worker with the fewest requests in flight."""
        if not self.workers:
            from verifiers.errors import ConfigError

            raise ConfigError("the router has no workers: start them (run() or start_workers())")
        return min(self.workers, key=lambda wid: self.workers[wid].active_count)

    async def restart_worker(self, worker_id: int) -> None:
        """Replace worker ``worker_id`` with a fresh process and send its requests again."""
        if worker_id in self._restarting or self._closing:
            return
        self._restarting.add(worker_id)
        try:
            old = self.workers.get(worker_id)
            again: list[ActiveRequestInfo] = []
            if old is not None:
                again = list(old.active_requests.values())
                old.active_requests.clear()
                for info in again:
                    self.request_to_worker.pop(info.request_id, None)
            # the replacement first, so the pool is never empty
            self.workers[worker_id] = self.start_worker(worker_id)
            for info in again:
                if info.runs >= 2 and self._on_response is not None:
                    error = (
                        f"env worker {worker_id} died running this request, and again when "
                        "it was retried; not retrying it again (see the worker log)"
                    )
                    await self._on_response(
                        info.client_id, info.request_id, pack({"success": False, "error": error})
                    )
                    continue
                info.runs += 1
                await self._send_to_worker(info)
            if old is not None:
                try:
                    asyncio.get_running_loop().remove_reader(old.process.sentinel)
                except (RuntimeError, ValueError):
                    pass
                old.socket.close(linger=0)
                await asyncio.to_thread(terminate_process, old.process)
        finally:
            self._restarting.discard(worker_id)

    async def _send_to_worker(self, info: ActiveRequestInfo) -> None:
        worker_id = self.select_worker()
        worker = self.workers[worker_id]
        await worker.socket.send_multipart((info.client_id, info.request_id, info.payload))
        info.worker_id = worker_id
        worker.active_requests[info.request_id] = info
        self.request_to_worker[info.request_id] = worker_id

    # ------------------------------------------------------------------ requests

    async def dispatch_request(self, client_id: bytes, request_id: bytes, payload: bytes) -> None:
        """Send a request to the least busy worker."""
        await self._send_to_worker(ActiveRequestInfo(client_id, request_id, -1, payload))

    async def forward_cancel(self, request_id: bytes, client_id: bytes) -> None:
        """Tell the worker running ``request_id`` to cancel it."""
        worker = self.workers.get(self.request_to_worker.get(request_id, -1))
        if worker is not None:
            try:
                await worker.socket.send_multipart((client_id, request_id, b""))
            except zmq.ZMQError:
                pass

    def complete_request(self, request_id: bytes) -> ActiveRequestInfo | None:
        """Forget a request that was answered; its info, or None when unknown."""
        worker_id = self.request_to_worker.pop(request_id, None)
        worker = self.workers.get(worker_id) if worker_id is not None else None
        return worker.active_requests.pop(request_id, None) if worker is not None else None

    def handle_stats_message(self, data: bytes) -> None:
        """Record a worker's stats report (its heartbeat); a malformed one is ignored."""
        try:
            stats = EnvWorkerStats.model_validate(unpack(data))
        except Exception:
            self.logger.debug("ignoring a malformed stats message", exc_info=True)
            return
        worker = self.workers.get(stats.worker_id)
        if worker is not None:
            worker.stats = stats
            worker.last_heartbeat = stats.timestamp

    async def check_workers(self) -> None:
        """Restart workers that died or whose heartbeat stopped."""
        now = time.time()
        for worker_id, worker in list(self.workers.items()):
            if not worker.process.is_alive():
                self.logger.warning("env worker %d died: restarting it", worker_id)
                await self.restart_worker(worker_id)
            elif (
                worker.last_heartbeat > 0
                and now - worker.last_heartbeat > self.worker_heartbeat_timeout
            ):
                self.logger.warning(
                    "env worker %d sent no stats for %.1fs: restarting it",
                    worker_id,
                    now - worker.last_heartbeat,
                )
                await self.restart_worker(worker_id)

    def stats(self) -> EnvRouterStats:
        return EnvRouterStats(
            lag=EventLoopLagStats.from_monitor(self.lag_monitor),
            workers={wid: w.stats for wid, w in sorted(self.workers.items())},
        )

    def log_stats(self) -> None:
        self.logger.info("%s", self.stats())

    # ------------------------------------------------------------------ lifecycle

    async def _responses(self, on_response: OnResponseCallback) -> None:
        while True:
            frames = await self.response_pull.recv_multipart()
            if len(frames) != 3:
                self.logger.warning("ignoring a worker message of %d frames", len(frames))
                continue
            client_id, request_id, response = frames
            self.complete_request(request_id)
            await on_response(client_id, request_id, response)

    async def _stats(self) -> None:
        while True:
            self.handle_stats_message(await self.stats_pull.recv())

    async def _periodic(self) -> None:
        last_log = time.monotonic()
        while True:
            await asyncio.sleep(self.worker_check_interval)
            await self.check_workers()
            if time.monotonic() - last_log >= self.stats_log_interval:
                self.log_stats()
                last_log = time.monotonic()

    async def run(self, on_response: OnResponseCallback, stop_event: asyncio.Event) -> None:
        """Start the workers (if not started) and handle their answers, stats and deaths
        until ``stop_event`` is set (or the task is cancelled)."""
        if not self.workers:
            self.start_workers()
        self._on_response = on_response
        loops = [
            asyncio.create_task(self._responses(on_response)),
            asyncio.create_task(self._stats()),
            asyncio.create_task(self._periodic()),
        ]
        stopped = asyncio.create_task(stop_event.wait())
        try:
            done, _ = await asyncio.wait([stopped, *loops], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stopped and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        finally:
            for task in (stopped, *loops):
                task.cancel()
            await asyncio.gather(stopped, *loops, return_exceptions=True)

    async def close(self) -> None:
        """Stop the workers (SIGTERM: they cancel and clean up), close the sockets, remove
        the IPC files."""
        self._closing = True
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background.clear()
        loop = asyncio.get_running_loop()
        for worker in self.workers.values():
            try:
                loop.remove_reader(worker.process.sentinel)
            except (ValueError, OSError):
                pass
        await asyncio.to_thread(terminate_processes, [w.process for w in self.workers.values()])
        for worker in self.workers.values():
            worker.socket.close(linger=0)
        self.workers.clear()
        self.request_to_worker.clear()
        self.response_pull.close()
        self.stats_pull.close()
        self.ctx.term()
        for path in self.ipc_paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self.logger.info("env router for %s shut down", self.env_id)


# names 0.3.x's version of this module imports, served on first use (verifiers.classic.forward)
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
