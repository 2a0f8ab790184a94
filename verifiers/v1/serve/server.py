"""``EnvServer``: one v1 env answering run requests on a ZeroMQ ROUTER socket.

A request is four frames at the socket, ``[client_id, request_id, method, payload]`` (the
client's DEALER sends the last three); ``payload`` is a msgpack map (see
:mod:`verifiers.v1.serve.types`). Every request gets exactly one ``reply`` frame set,
``[client_id, request_id, b"reply", data]``; a ``run`` first streams its traces as
``[client_id, request_id, b"delta", data]`` frames (:mod:`verifiers.v1.serve.delta`). A
two-frame client (verifiers a60a606) gets ``[client_id, request_id, data]`` with the whole
episode instead; which one a client reads is told from its requests
(:mod:`verifiers.v1.serve.wire`). A message of more frames than a request has is drained
unread.

The server holds no tasks: each run request carries its task's data, validated here into the
taskset's ``TaskData`` class and wrapped in its ``Task`` class with the taskset's task config,
as the taskset's own ``load`` builds it. A failed run is an answer (``success`` false, the
reason in ``error``), never a crash of the server: every frame is decoded inside the
request's handler, bounded by ``limits`` (:class:`~verifiers.serve.security.Limits`), and a
frame that cannot be read is answered (or dropped) without stopping the receive loop.

Security (:mod:`verifiers.serve.security`): clients authenticate with ZeroMQ CURVE (the
per-user key pair by default; ``keys_dir=`` / ``VF_SERVE_KEYS_DIR``; ``insecure=True`` for
none); a run's ``client`` may name only endpoints ``allow`` permits (never
``headers_from_env`` or a key variable holding a secret of the server); a client that
disconnects has its runs cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from typing import Any

import zmq
import zmq.asyncio

from verifiers.serve.security import (
    Limits,
    PayloadError,
    Peers,
    ServeAllow,
    ServeAuth,
    bounded_unpack,
    watch_disconnects,
)
from verifiers.v1.configs import EnvConfig
from verifiers.v1.configs.client import build_client, train_sampling_args
from verifiers.v1.env import Env
from verifiers.v1.serve.delta import DeltaStreamer, TraceSummary, dump
from verifiers.v1.serve.encoding import pack
from verifiers.v1.serve.types import (
    BaseResponse,
    CancelRequest,
    CancelResponse,
    EpisodeResponse,
    HealthResponse,
    RunRequest,
    RunResponse,
)
from verifiers.v1.serve.wire import (
    MAX_FRAMES,
    PeerProtocols,
    Protocol,
    ServeProtocol,
    recv_bounded,
    reply_frames,
)
from verifiers.v1.task import Task, TaskData
from verifiers.v1.trace import Episode
from verifiers.v1.utils.loaders import load_environment, resolve_env_config
from verifiers.v1.utils.memory import trim_memory_periodically

__all__ = ["EnvServer", "build_env"]

logger = logging.getLogger(__name__)

DEFAULT_ADDRESS = "tcp://127.0.0.1:5000"


def build_env(config: EnvConfig | dict[str, Any]) -> Env[Any]:
    """The env ``config`` describes (narrowed to its env's config class first)."""
    return load_environment(resolve_env_config(config))


class EnvServer:
    """Serves the env ``config`` describes at ``address`` (``:0`` binds a free port; read
    :attr:`address` for the one bound). ``max_concurrent`` bounds the episodes running at once
    (None: no bound). ``keys_dir``/``insecure``: authentication; ``allow``: the endpoints
    and secrets runs may use; ``limits``: input bounds (see the module docstring);
    ``protocol``: the reply shape, ``auto`` (each client's own,
    :mod:`verifiers.v1.serve.wire`), ``stream`` or ``two-frame``."""

    def __init__(
        self,
        config: EnvConfig | dict[str, Any] | None = None,
        address: str = DEFAULT_ADDRESS,
        max_concurrent: int | None = None,
        *,
        config_data: dict[str, Any] | None = None,
        keys_dir: str | None = None,
        insecure: bool = False,
        allow: ServeAllow | dict[str, Any] | None = None,
        limits: Limits | None = None,
        internal: bool = False,
        protocol: ServeProtocol = "auto",
    ) -> None:
        self.protocols = PeerProtocols(protocol)
        self.env: Env[Any] | None = None
        self.load_error: str | None = None
        """Why the env could not be built; every request is answered with it."""
        raw = config if config is not None else config_data
        try:
            self.config = resolve_env_config(raw)
            self.env = build_env(self.config)
            self.task_cls: type[Task[Any, Any, Any]] = type(self.env.taskset).task_type()
            self.data_cls: type[TaskData] = self.task_cls.data_type()
            excluded = [n for n, f in self.data_cls.model_fields.items() if f.exclude]
            if excluded:
                raise ValueError(
                    f"{self.data_cls.__name__} excludes {excluded} from serialisation: a "
                    "served task travels as its dump and would lose them; drop exclude=True"
                )
        except Exception as exc:  # answered to every request: the trainer sees the reason
            self.env = None
            self.load_error = (
                f"the env server could not load its env ({raw!r}): {type(exc).__name__}: {exc}"
            )
            logger.error("%s", self.load_error, exc_info=True)
        self.env_id = self.env.id if self.env is not None else "(not loaded)"
        self._gate = asyncio.Semaphore(max_concurrent) if max_concurrent else None
        self._running: dict[bytes, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.auth = (
            ServeAuth(mode="insecure", source="internal")
            if internal
            else ServeAuth.resolve("server", keys_dir=keys_dir, insecure=insecure)
        )
        self.allow = (
            allow if isinstance(allow, ServeAllow) and internal else ServeAllow.from_env(allow)
        )
        self.limits = limits or Limits.from_env()
        self.peers = Peers()
        self.stats = {"requests": 0, "refused": 0, "bad_frames": 0, "disconnects": 0}
        self.ctx = zmq.asyncio.Context()
        self.socket = self.ctx.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.socket.setsockopt(zmq.SNDHWM, 0)
        self.socket.setsockopt(zmq.RCVHWM, 0)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.MAXMSGSIZE, self.limits.max_message_bytes)
        self.gate = self.auth.secure_server(self.ctx, self.socket)
        self.monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.socket.bind(address)
        self.address: str = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)

    # ------------------------------------------------------------------ running

    @classmethod
    def run_server(cls, address_queue: Any = None, **kwargs: Any) -> None:
        """Build the server and serve until SIGTERM/SIGINT (a spawned process's target);
        the bound address is put on ``address_queue`` when given."""
        server = cls(**kwargs)
        if address_queue is not None:
            address_queue.put(server.address)
        asyncio.run(server.serve_forever())

    async def serve_forever(self) -> None:
        """Serve until SIGTERM/SIGINT, then stop what is in flight and close."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        installed = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, stop.set)
                installed.append(sig)
            except (RuntimeError, ValueError):  # not the main thread
                pass
        try:
            await self.run(stop)
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Answer requests until ``stop`` is set (or the task is cancelled), then close."""
        logger.info("v1 env server for %s listening on %s", self.env_id, self.address)
        stopped = asyncio.ensure_future((stop or asyncio.Event()).wait())
        watching = asyncio.ensure_future(watch_disconnects(self.monitor, self._on_disconnect))
        try:
            while True:
                receiving = asyncio.ensure_future(recv_bounded(self.socket, MAX_FRAMES))
                done, _ = await asyncio.wait(
                    {receiving, stopped}, return_when=asyncio.FIRST_COMPLETED
                )
                if stopped in done:
                    receiving.cancel()
                    break
                frames = receiving.result()
                if not frames:  # more frames than any request has: dropped unread
                    self.stats["bad_frames"] += 1
                    continue
                self.peers.seen(
                    frames[0].bytes, frames[0].get(zmq.SRCFD), self.monitor, self._on_disconnect
                )
                self._dispatch([f.bytes for f in frames])
        finally:
            stopped.cancel()
            watching.cancel()
            await self.close()

    def _on_disconnect(self, fd: int) -> None:
        for cid, rids in self.peers.disconnected(fd):
            self.protocols.forget(cid)
            if rids:
                self.stats["disconnects"] += 1
                logger.warning("a client left with %d runs in flight: cancelling them", len(rids))
            for rid in rids:
                task = self._running.get(rid)
                if task is not None:
                    task.cancel()

    def _dispatch(self, frames: list[bytes]) -> None:
        """Hand one message to its handler; nothing here may raise (the loop must live)."""
        frames = self.auth.open_frames(frames, self.stats)
        if len(frames) != 4:
            self.stats["bad_frames"] += 1
            logger.warning("ignoring a message of %d frames (expected 4)", len(frames))
            return
        client_id, request_id, method, payload = frames
        self.stats["requests"] += 1
        received = time.monotonic()
        task = asyncio.create_task(self._handle(client_id, request_id, method, payload, received))
        if method == b"run":
            # registered now, so a cancel that arrives before the handler starts finds it
            self._running[request_id] = task
            self.peers.add(client_id, request_id)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.env is not None:
            try:
                await self.env.close()  # the clients of seats with their own endpoint
            except Exception:
                logger.warning("closing the env failed", exc_info=True)
        self.socket.disable_monitor()
        self.monitor.close(linger=0)
        self.socket.close(linger=0)
        if self.gate is not None:
            self.gate.stop()
        self.ctx.term()
        logger.info("v1 env server for %s shut down", self.env_id)

    # ------------------------------------------------------------------ requests

    def _loaded(self) -> Env[Any]:
        if self.env is None:
            raise RuntimeError(self.load_error or "the env is not loaded")
        return self.env

    def build_task(self, task_data: dict[str, Any]) -> Task[Any, Any, Any]:
        """The task a request's data describes, as the taskset builds its own."""
        env = self._loaded()
        data = self.data_cls.model_validate(task_data)
        return self.task_cls(data, env.taskset.config.task)

    async def run_episode(
        self, request: RunRequest, send_delta: Any | None = None
    ) -> tuple[Episode[Any, Any, Any], RunResponse]:
        """Run one request's episode, streaming its traces through ``send_delta``."""
        env = self._loaded()
        task = self.build_task(request.task_data)
        client = build_client(request.client)
        sampling = {**request.sampling.as_args(), **train_sampling_args(request.client)}

        async def discard(_delta: dict[str, Any]) -> None:
            return None

        try:
            agents = env.agents(client, request.model, sampling)
            seats = list(agents)
            async with DeltaStreamer(
                lambda: [t for seat in seats for t in seat.traces], send_delta or discard
            ) as streamer:
                for seat in seats:
                    seat.on_trace = streamer.watch
                if self._gate is None:
                    episode = await env.run_episode(task, agents)
                else:
                    async with self._gate:
                        episode = await env.run_episode(task, agents)
        finally:
            await client.close()
        await trim_memory_periodically()
        response = RunResponse(
            head=dump(episode, exclude={"traces"}),
            traces=[
                TraceSummary(id=t.id, nodes=len(t.nodes), calls=len(t.calls))
                for t in episode.traces
            ],
        )
        return episode, response

    async def _handle(
        self,
        client_id: bytes,
        request_id: bytes,
        method: bytes,
        payload: bytes,
        received: float | None = None,
    ) -> None:
        route = method.decode(errors="replace")
        response: BaseResponse
        raw: object = None
        unreadable: PayloadError | None = None
        try:
            raw = bounded_unpack(payload, self.limits)
        except PayloadError as exc:
            unreadable = exc
        protocol = self.protocols.resolve(client_id, method, raw)
        try:
            if unreadable is not None:
                raise unreadable
            if self.load_error is not None and route in ("health", "run"):
                response = BaseResponse(success=False, error=self.load_error)
            elif route == "health":
                response = HealthResponse()
            elif route == "run":
                response = await self._run(client_id, request_id, raw, protocol)
            elif route == "cancel":
                target = CancelRequest.model_validate(raw).request_id
                running = self._running.get(target.encode("utf-8", "surrogateescape"))
                if running is not None:
                    running.cancel()
                response = CancelResponse(cancelled=running is not None)
            else:
                response = BaseResponse(
                    success=False,
                    error=f"unknown method {route!r}; this server answers health, run, cancel",
                )
        except asyncio.CancelledError:
            response = BaseResponse(success=False, error="Cancelled: the run was stopped")
        except (PayloadError, PermissionError) as exc:
            response = BaseResponse(success=False, error=str(exc))
        except Exception as exc:  # a failed request is an answer, not a crash
            logger.warning("request %s failed", request_id[:8], exc_info=True)
            response = BaseResponse(success=False, error=f"{type(exc).__name__}: {exc}")
        if route == "run":  # done: a cancel from now on finds nothing to stop
            self._running.pop(request_id, None)
            self.peers.done(client_id, request_id)
        try:
            data = pack(response.model_dump(mode="json"))
        except Exception as exc:
            data = pack({"success": False, "error": f"{type(exc).__name__}: {exc}"})
        try:
            await self._send(client_id, protocol, request_id, b"reply", data)
        except zmq.ZMQError as exc:  # the client is gone
            logger.debug("could not answer request %r: %s", request_id[:8], exc)
        self.protocols.answered(client_id, method, received or time.monotonic(), response.success)

    async def _run(
        self, client_id: bytes, request_id: bytes, raw: object, protocol: Protocol
    ) -> BaseResponse:
        """A run request's answer: streamed (its reply the episode head) or whole."""

        async def send_delta(delta: dict[str, Any]) -> None:
            await self._send(client_id, "stream", request_id, b"delta", pack(delta))

        if isinstance(raw, dict) and isinstance(raw.get("client"), dict):
            refused = self.allow.check_v1(raw["client"])
            if refused is not None:
                self.stats["refused"] += 1
                raise PermissionError(f"refused: {refused}")
        request = RunRequest.model_validate(raw)
        if protocol == "stream":
            return (await self.run_episode(request, send_delta))[1]
        episode, _ = await self.run_episode(request)
        return EpisodeResponse(episode=dump(episode))

    async def _send(
        self, client_id: bytes, protocol: Protocol, rid: bytes, kind: bytes, data: bytes
    ) -> None:
        frames = reply_frames(protocol, rid, kind, data)
        if frames is not None:
            sealed = self.auth.seal_frames([client_id, *frames])
            await self.socket.send_multipart(sealed, copy=False)
