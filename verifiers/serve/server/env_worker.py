"""``EnvWorker``: one worker process of an :class:`~verifiers.serve.EnvRouter` (classic
``verifiers.serve.server.env_worker``).

A worker owns one environment (``vf.load_environment(env_id, **env_args)``, then
``env.set_kwargs(**extra_env_kwargs)``), one model client per client config, and three ZeroMQ
sockets:

- a PULL socket bound at ``request_address``: ``[client_id, request_id, payload]`` frames
  from the router; ``payload`` is a request map (:mod:`verifiers.serve.protocol`), or empty to
  cancel that request;
- a PUSH socket to ``response_address``: ``[client_id, request_id, response]`` when a request
  is done (``{"success": false, "error": ...}`` when it failed or was cancelled);
- a PUSH socket to ``stats_address``: an :class:`EnvWorkerStats` map every
  ``stats_interval`` seconds (the router's heartbeat).

Each request runs as its own task, all concurrently. An environment that fails to load does
not crash the worker: every request is answered with the reason. On SIGTERM/SIGINT (or when
``death_pipe`` reports the parent gone) the worker cancels what is in flight, closes its model
clients, runs the environment's teardown and exits. Start one with :meth:`EnvWorker.run_worker`
in a spawned process (what the router does).
"""

from __future__ import annotations

import asyncio
import logging
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq
import zmq.asyncio
from pydantic import BaseModel, Field

from verifiers.serve.protocol import pack
from verifiers.serve.security import ClientLRU, Limits, ServeAllow, bounded_unpack
from verifiers.serve.server.env_server import (
    load_classic_env,
    run_classic_request,
    serve_until_stopped,
    setup_serve_logging,
)
from verifiers.serve.types import (
    BaseResponse,
    RunGroupRequest,
    RunGroupResponse,
    RunRolloutRequest,
    RunRolloutResponse,
)
from verifiers.utils.async_utils import EventLoopLagMonitor, EventLoopLagStats
from verifiers.utils.process_utils import monitor_death_pipe, set_proc_title

if TYPE_CHECKING:
    from verifiers.classic.env_mixin import ClassicEnvironment as Environment
    from verifiers.clients.base import Client

__all__ = ["EnvWorker", "EnvWorkerStats"]


def _lag_text(lag: EventLoopLagStats) -> str:
    return (
        f"mean {lag.mean * 1000:.1f}ms, p90 {lag.p90 * 1000:.1f}ms, "
        f"max {lag.max * 1000:.1f}ms (n={lag.n})"
    )


class EnvWorkerStats(BaseModel):
    """What a worker reports to its router: its id, when, how many requests it is running,
    and its event loop's lag."""

    worker_id: int
    timestamp: float
    active_tasks: int
    lag: EventLoopLagStats = Field(default_factory=EventLoopLagStats)

    def __str__(self) -> str:
        return f"Lag: {_lag_text(self.lag)}" if self.lag.n > 0 else "no lag data"


class EnvWorker:
    """Runs an environment's requests in its own process (see the module docstring).

    Args (as the router passes them):
        env_id, env_args, extra_env_kwargs: the environment and its arguments.
        log_level, log_dir, console_logging, json_logging: logging (``env_worker_<id>.log``
            in ``log_dir``).
        worker_id, worker_name: the worker's index and name.
        request_address, response_address, stats_address: the sockets' addresses.
        death_pipe: the read end of a pipe the parent holds open while it lives.
        stats_interval: seconds between stats reports.
    """

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
        worker_id: int,
        worker_name: str,
        request_address: str,
        response_address: str,
        stats_address: str,
        death_pipe: Connection | None = None,
        stats_interval: float = 10.0,
        allow: ServeAllow | dict[str, Any] | None = None,
        limits: Limits | None = None,
    ) -> None:
        set_proc_title(f"EnvWorker{worker_id}")
        self.env_id = env_id
        self.worker_id = worker_id
        self.worker_name = worker_name
        self.request_address = request_address
        self.death_pipe = death_pipe
        self.stats_interval = stats_interval
        self._setup_logging(log_level, log_dir, console_logging, json_logging)
        self.logger = logging.getLogger(f"{__name__}.{type(self).__name__}")

        self.env: Environment | None
        self.load_error: str | None
        self.env, self.load_error = load_classic_env(
            env_id, dict(env_args or {}), dict(extra_env_kwargs or {}), f"env worker {worker_name}"
        )

        self.ctx = zmq.asyncio.Context()
        self.pull_socket = self.ctx.socket(zmq.PULL)
        self.pull_socket.setsockopt(zmq.RCVHWM, 0)
        self.pull_socket.setsockopt(zmq.LINGER, 0)
        self.pull_socket.bind(request_address)
        self.response_socket = self.ctx.socket(zmq.PUSH)
        self.response_socket.setsockopt(zmq.SNDHWM, 0)
        self.response_socket.setsockopt(zmq.LINGER, 5000)
        self.response_socket.connect(response_address)
        self.stats_socket = self.ctx.socket(zmq.PUSH)
        self.stats_socket.setsockopt(zmq.SNDHWM, 100)
        self.stats_socket.setsockopt(zmq.LINGER, 0)
        self.stats_socket.connect(stats_address)

        self.allow = ServeAllow.from_env(allow)
        self.limits = limits or Limits.from_env()
        self.clients: ClientLRU[Client] = ClientLRU(32)
        self.active_tasks: dict[str, asyncio.Task[None]] = {}
        self.shutting_down = False
        self.lag_monitor = EventLoopLagMonitor()
        self.logger.info("worker %s ready on %s", worker_name, request_address)

    def _setup_logging(
        self, level: str | None, log_dir: str | None, console: bool, json_lines: bool
    ) -> None:
        log_file = None
        if log_dir is not None:
            path = self.get_log_file(log_dir, self.worker_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            log_file = str(path)
        setup_serve_logging(level, log_file, console, json_lines)

    # ------------------------------------------------------------------ requests

    async def resolve_client(self, client_config: Any) -> Client:
        """The model client for a client config (one per endpoint, at most 32 kept; give it
        back with ``self.clients.release``)."""
        from verifiers.utils.client_utils import client_from_config, resolve_client_config

        config = resolve_client_config(client_config)
        refused = self.allow.check_classic(config.model_dump(mode="json", exclude_unset=True))
        if refused is not None:
            raise PermissionError(f"refused: {refused}")
        return self.clients.acquire(
            config.model_dump_json().encode(), lambda: client_from_config(config)
        )

    async def _run(self, kind: str, request: Any) -> dict[str, Any]:
        env = self._environment()
        client = await self.resolve_client(request.client_config)
        try:
            return await run_classic_request(env, client, kind, request.model_dump())
        finally:
            self.clients.release(client)

    def _environment(self) -> Environment:
        if self.env is None:
            from verifiers.serve.protocol import EnvServerError

            raise EnvServerError(self.load_error or "the environment is not loaded")
        return self.env

    async def handle_run_rollout(self, request: RunRolloutRequest) -> RunRolloutResponse:
        return RunRolloutResponse(output=(await self._run("run_rollout", request))["output"])

    async def handle_run_group(self, request: RunGroupRequest) -> RunGroupResponse:
        return RunGroupResponse(outputs=(await self._run("run_group", request))["outputs"])

    async def _send(self, client_id: bytes, request_id: bytes, data: bytes) -> None:
        try:
            await self.response_socket.send_multipart((client_id, request_id, data))
        except zmq.ZMQError as e:
            self.logger.warning("could not send the answer to %s: %s", request_id[:8], e)

    async def process_request(self, client_id: bytes, request_id: bytes, payload: bytes) -> None:
        """Run one request and push its answer (an error answer when it fails or is
        cancelled, except while shutting down)."""
        response: BaseResponse
        try:
            raw = bounded_unpack(payload, self.limits)
            kind = raw.get("request_type") if isinstance(raw, dict) else None
            if self.load_error is not None:
                response = BaseResponse(success=False, error=self.load_error)
            elif kind == "run_rollout":
                response = await self.handle_run_rollout(RunRolloutRequest.model_validate(raw))
            elif kind == "run_group":
                response = await self.handle_run_group(RunGroupRequest.model_validate(raw))
            else:
                response = BaseResponse(
                    success=False,
                    error=f"unknown request_type {kind!r}; expected 'run_rollout' or 'run_group'",
                )
            data = pack(response.model_dump(mode="python", warnings=False))
        except asyncio.CancelledError:
            if not self.shutting_down:
                error = BaseResponse(success=False, error="Request was cancelled")
                await asyncio.shield(self._send(client_id, request_id, pack(error.model_dump())))
            return
        except Exception as e:
            self.logger.error("request %s failed", request_id[:8], exc_info=True)
            error = BaseResponse(success=False, error=f"{type(e).__name__}: {e}")
            data = pack(error.model_dump())
        await self._send(client_id, request_id, data)

    def stats(self) -> EnvWorkerStats:
        return EnvWorkerStats(
            worker_id=self.worker_id,
            timestamp=time.time(),
            active_tasks=len(self.active_tasks),
            lag=EventLoopLagStats.from_monitor(self.lag_monitor),
        )

    async def stats_loop(self, interval: float | None = None) -> None:
        """Push this worker's stats to the router every ``interval`` seconds (default
        ``stats_interval``), the first time at once."""
        while True:
            try:
                await self.stats_socket.send(pack(self.stats().model_dump()), zmq.NOBLOCK)
            except zmq.Again:
                pass  # the router is not reading: the next report replaces this one
            await asyncio.sleep(self.stats_interval if interval is None else interval)

    # ------------------------------------------------------------------ lifecycle

    def _on_message(self, frames: list[bytes]) -> None:
        if len(frames) != 3:
            self.logger.warning("ignoring a message of %d frames (expected 3)", len(frames))
            return
        client_id, request_id, payload = frames
        rid = request_id.decode(errors="replace")
        if not payload:  # cancel
            task = self.active_tasks.get(rid)
            if task is not None:
                task.cancel()
            return
        task = asyncio.get_running_loop().create_task(
            self.process_request(client_id, request_id, payload)
        )
        self.active_tasks[rid] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self.active_tasks.get(rid) is done:
                del self.active_tasks[rid]

        task.add_done_callback(forget)

    async def serve(self, stop_event: asyncio.Event | None = None) -> None:
        """Receive and run requests until ``stop_event`` is set."""
        stop = stop_event or asyncio.Event()
        background = [
            asyncio.create_task(self.lag_monitor.run()),
            asyncio.create_task(self.stats_loop()),
        ]
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                receive = asyncio.ensure_future(self.pull_socket.recv_multipart())
                await asyncio.wait({receive, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not receive.done():
                    receive.cancel()
                    break
                self._on_message(receive.result())
        finally:
            stopped.cancel()
            for t in background:
                t.cancel()
            await asyncio.gather(stopped, *background, return_exceptions=True)

    async def close(self) -> None:
        """Cancel what is in flight, close the model clients, tear the environment down,
        close the sockets."""
        self.shutting_down = True
        tasks = list(self.active_tasks.values())
        for t in tasks:
            t.cancel()
        if tasks:
            self.logger.info("cancelling %d requests on worker %s", len(tasks), self.worker_name)
            await asyncio.gather(*tasks, return_exceptions=True)
        self.active_tasks.clear()
        await self.clients.close()
        if self.env is not None:
            try:
                await self.env.close()
            except Exception:
                self.logger.exception("environment teardown failed")
        for sock in (self.pull_socket, self.response_socket, self.stats_socket):
            sock.close()
        self.ctx.term()
        self.logger.info("worker %s shut down", self.worker_name)

    async def run(self) -> None:
        """Serve until SIGTERM/SIGINT (or the parent's death), then close."""
        if self.death_pipe is not None:
            monitor_death_pipe(self.death_pipe)
        await serve_until_stopped(self.serve, self.close)

    @staticmethod
    def get_log_file(log_dir: str, worker_id: int) -> Path:
        """The log file of worker ``worker_id`` in ``log_dir``."""
        return Path(log_dir) / f"env_worker_{worker_id}.log"

    @classmethod
    def run_worker(cls, *args: Any, **kwargs: Any) -> None:
        """Build the worker and run it (the target of a spawned process)."""
        worker = cls(*args, **kwargs)
        asyncio.run(worker.run())


# names 0.3.x's version of this module imports, served on first use (verifiers.classic.forward)
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
