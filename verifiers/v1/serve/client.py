"""``EnvClient``: a trainer's connection to a v1 env server (or pool).

One DEALER socket; one receive loop matches reply frames to the waiting request by
``request_id`` and hands a run's ``delta`` frames to that run's :class:`EpisodeAssembly`. A
run returns the assembled episode validated as a :class:`~verifiers.v1.WireEpisode` (its
tasks keep their env-specific fields as extras, so the env need not be importable here).
Cancelling a run (cancelling the awaiting task) tells the server to stop it. Every request
names the streamed protocol it reads (:mod:`verifiers.v1.serve.wire`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import zmq
import zmq.asyncio

from verifiers.serve.security import ServeAuth
from verifiers.v1.configs.client import BaseClientConfig
from verifiers.v1.serve.delta import EpisodeAssembly
from verifiers.v1.serve.encoding import pack, unpack
from verifiers.v1.serve.types import (
    BaseRequest,
    BaseResponse,
    CancelRequest,
    HealthRequest,
    HealthResponse,
    RunRequest,
    RunResponse,
)
from verifiers.v1.serve.wire import PROTOCOL_KEY
from verifiers.v1.trace import WireEpisode
from verifiers.v1.types import SamplingConfig

__all__ = ["EnvClient"]

logger = logging.getLogger(__name__)

ResponseT = TypeVar("ResponseT", bound=BaseResponse)


class EnvServerError(RuntimeError):
    """The env server answered a request with a failure (``reason``: what it said)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class EnvClient:
    """A connection to the env server at ``address`` (a ZeroMQ endpoint). It authenticates
    with the per-user key pair by default (``keys_dir=`` or ``VF_SERVE_KEYS_DIR`` for
    explicit keys; ``insecure=True`` for a server started without authentication)."""

    def __init__(
        self,
        address: str = "tcp://127.0.0.1:5000",
        *,
        keys_dir: str | None = None,
        insecure: bool = False,
    ) -> None:
        self.address = address
        self.auth = ServeAuth.resolve("client", keys_dir=keys_dir, insecure=insecure)
        self.ctx = zmq.asyncio.Context()
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.SNDHWM, 0)
        self.socket.setsockopt(zmq.RCVHWM, 0)
        self.auth.secure_client(self.socket)
        self.socket.connect(address)
        self._pending: dict[str, asyncio.Future[bytes]] = {}
        self._deltas: dict[str, Callable[[bytes], None]] = {}
        self._cancel_tasks: set[asyncio.Task[None]] = set()
        self._receiver: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ transport

    async def _receive(self) -> None:
        while True:
            frames = self.auth.open_frames(await self.socket.recv_multipart(), routed=False)
            if len(frames) != 3:
                logger.warning(
                    "dropping a message of %d frames from %s (expected request id, kind, "
                    "data): is the server a v1 env server?",
                    len(frames),
                    self.address,
                )
                continue
            rid, kind, data = frames
            request_id = rid.decode(errors="replace")
            if kind == b"delta":
                on_delta = self._deltas.get(request_id)
                if on_delta is not None:
                    try:
                        on_delta(data)
                    except Exception:  # one bad delta must not stop the other requests
                        logger.warning("a delta of request %s failed", request_id, exc_info=True)
                continue
            future = self._pending.pop(request_id, None)
            if future is not None and not future.done():
                future.set_result(data)

    async def _request(
        self,
        request: BaseRequest,
        response_type: type[ResponseT],
        timeout: float | None = None,  # noqa: ASYNC109 - health polls only
        on_delta: Callable[[bytes], None] | None = None,
    ) -> ResponseT:
        if self._receiver is None or self._receiver.done():
            self._receiver = asyncio.create_task(self._receive())
        request_id = uuid.uuid4().hex
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        if on_delta is not None:
            self._deltas[request_id] = on_delta
        payload = pack({**request.model_dump(mode="json"), PROTOCOL_KEY: "stream"})
        try:
            await self.socket.send_multipart(
                self.auth.seal_frames(
                    [request_id.encode(), request.method.encode(), payload], routed=False
                )
            )
            data = await asyncio.wait_for(future, timeout)
        except asyncio.CancelledError:
            self._pending.pop(request_id, None)
            if request.method == RunRequest.method:
                cancel = asyncio.get_running_loop().create_task(self._send_cancel(request_id))
                self._cancel_tasks.add(cancel)
                cancel.add_done_callback(self._cancel_tasks.discard)
            raise
        except BaseException:
            self._pending.pop(request_id, None)
            raise
        finally:
            self._deltas.pop(request_id, None)
        response = response_type.model_validate(unpack(data))
        if not response.success:
            raise EnvServerError(
                f"the env server at {self.address} failed the {request.method} request: "
                f"{response.error or 'no reason given'}",
                response.error,
            )
        return response

    async def _send_cancel(self, run_request_id: str) -> None:
        with contextlib.suppress(zmq.ZMQError):
            await self.socket.send_multipart(
                self.auth.seal_frames(
                    [
                        uuid.uuid4().hex.encode(),
                        CancelRequest.method.encode(),
                        pack(
                            {
                                **CancelRequest(request_id=run_request_id).model_dump(mode="json"),
                                PROTOCOL_KEY: "stream",
                            }
                        ),
                    ],
                    routed=False,
                )
            )

    # ------------------------------------------------------------------ API

    async def health(self, timeout: float = 2.0) -> bool:  # noqa: ASYNC109 - trainers pass it
        """Whether the server is up and ready within ``timeout`` seconds (False while it loads
        the env); :class:`EnvServerError` when it reports why it cannot serve."""
        try:
            await self._request(HealthRequest(), HealthResponse, timeout=timeout)
        except TimeoutError:
            return False
        except EnvServerError as exc:
            if exc.reason is None:
                return False
            raise
        return True

    async def wait_for_server_startup(
        self,
        timeout: float = 120.0,  # noqa: ASYNC109 - prime-rl passes timeout=
        interval: float = 1.0,
    ) -> None:
        """Ask for health until the server is ready; TimeoutError after ``timeout`` seconds,
        :class:`EnvServerError` at once when the server says it cannot serve."""
        deadline = time.monotonic() + timeout
        while True:
            started = time.monotonic()
            remaining = deadline - started
            if remaining <= 0:
                break
            if await self.health(timeout=min(interval, remaining)):
                return
            # a "still loading" answer comes back at once: poll at most once per interval
            pause = min(interval - (time.monotonic() - started), deadline - time.monotonic())
            if pause > 0:
                await asyncio.sleep(pause)
        raise TimeoutError(
            f"the env server at {self.address} was not ready within {timeout}s; is it "
            "running, and is the address the one it binds?"
        )

    async def run(
        self,
        client: BaseClientConfig | dict[str, Any],
        model: str,
        sampling: SamplingConfig | dict[str, Any] | None = None,
        task_data: dict[str, Any] | None = None,
        on_delta: Callable[[dict[str, Any]], None] | None = None,
    ) -> WireEpisode:
        """Run one episode of the task ``task_data`` describes (its dumped ``TaskData``) with
        ``model`` at the endpoint ``client``. ``on_delta`` sees each trace delta as it lands."""
        if task_data is None:
            raise ValueError("run needs task_data: the task's data as task.data.model_dump()")
        assembly = EpisodeAssembly()

        def apply(data: bytes) -> None:
            delta = unpack(data)
            assembly.apply(delta)
            if on_delta is not None:
                on_delta(delta)

        request = RunRequest.model_validate(
            {
                "task_data": task_data,
                "client": client.model_dump() if isinstance(client, BaseClientConfig) else client,
                "model": model,
                "sampling": sampling if sampling is not None else {},
            }
        )
        response = await self._request(request, RunResponse, on_delta=apply)
        if response.head is None:
            raise EnvServerError(f"the env server at {self.address} replied without an episode")
        record = assembly.finish(response.head, response.traces)
        return await asyncio.to_thread(WireEpisode.model_validate, record)

    async def close(self) -> None:
        """Stop receiving, let pending cancels leave, close the socket."""
        if self._receiver is not None:
            self._receiver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._receiver
            self._receiver = None
        while self._cancel_tasks:
            task = self._cancel_tasks.pop()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.socket.close(linger=0)
        self.ctx.term()
