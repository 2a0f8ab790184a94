"""``ZMQEnvClient``: the trainer's side of an env server.

::

    client = ZMQEnvClient(address="tcp://127.0.0.1:5555", name="my-env")
    await client.wait_for_server_startup()
    outputs = await client.run_group(group_inputs, client_config, model, sampling_args,
                                     max_retries=0, state_columns=["trajectory"])
    await client.close()

or through the environment, as prime-rl does: ``env.run_group(group_inputs,
client=client_config, model=..., sampling_args=..., max_retries=..., state_columns=...,
env_client=client)``.

``address`` may be a list: several servers of one environment, each request going to the
one with the fewest requests in flight (among those answering health checks). A request whose
caller is cancelled is cancelled on the server too. A server that stops answering health
checks fails its requests with :class:`EnvServerError`. It speaks the protocol of
:mod:`verifiers.serve.protocol`, so it drives classic ``verifiers`` 0.3.x servers as well.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import zmq

from verifiers.serve.client.env_client import EnvClient, wire_input
from verifiers.serve.protocol import (
    CANCEL,
    HEALTH_PING,
    EnvServerError,
    ServerError,
    ServerState,
    pack,
    unpack,
)
from verifiers.serve.security import ServeAuth

if TYPE_CHECKING:
    from verifiers.serve.types import (
        BaseRequest,
        BaseResponseT,
        HealthRequest,
        HealthResponse,
        RunGroupRequest,
        RunGroupResponse,
        RunRolloutRequest,
        RunRolloutResponse,
    )

__all__ = ["EnvClient", "EnvServerError", "ServerError", "ZMQEnvClient"]

logger = logging.getLogger("verifiers.serve.client")


def _fd(sock: zmq.Socket[bytes]) -> int:
    """The socket's notification descriptor (edge-triggered: check ``_events`` after it)."""
    return cast(int, sock.getsockopt(zmq.FD))


def _events(sock: zmq.Socket[bytes]) -> int:
    return cast(int, sock.getsockopt(zmq.EVENTS))


_PING_PREFIX = b"\x00h"
#: consecutive unanswered health checks after which a healthy server is taken as down
UNHEALTHY_AFTER = 5


class _Conn:
    """One server: its socket, the requests waiting for it, its health."""

    def __init__(self, client: ZMQEnvClient, address: str, sock: zmq.Socket[bytes]) -> None:
        self.client = client
        self.address = address
        self.sock = sock
        self.pending: dict[bytes, asyncio.Future[bytes]] = {}
        self.healthy = False
        self.ever_healthy = False
        self.error: str | None = None
        self.unanswered = 0
        self.changed = asyncio.Event()
        self._drain_scheduled = False

    def schedule_drain(self) -> None:
        if not self._drain_scheduled:
            self._drain_scheduled = True
            asyncio.get_running_loop().call_soon(self.drain)

    def drain(self) -> None:
        self._drain_scheduled = False
        sock = self.sock
        while not sock.closed and _events(sock) & zmq.POLLIN:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            auth = self.client.auth
            if auth.signs:
                if len(frames) != 3 or not auth.verify(frames[0], frames[1:]):
                    logger.warning("dropping a reply without a valid signature")
                    continue
                frames = frames[1:]
            if len(frames) < 2:
                continue
            rid, payload = frames[0], frames[1]
            if rid.startswith(_PING_PREFIX):
                self.on_pong(payload)
                continue
            fut = self.pending.pop(rid, None)
            if fut is not None and not fut.done():
                fut.set_result(payload)

    def send(self, rid: bytes, payload: bytes) -> None:
        self.raw_send(rid, payload)
        if _events(self.sock) & zmq.POLLIN:
            self.schedule_drain()

    def raw_send(self, rid: bytes, payload: bytes) -> None:
        auth = self.client.auth
        if auth.signs:
            self.sock.send_multipart((auth.sign((rid, payload)), rid, payload), zmq.NOBLOCK)
        else:
            self.sock.send_multipart((rid, payload), zmq.NOBLOCK, copy=len(payload) < 65536)

    def on_pong(self, payload: bytes) -> None:
        try:
            answer = unpack(payload)
        except Exception:
            return
        self.unanswered = 0
        ok = bool(answer.get("success")) if isinstance(answer, dict) else False
        error = answer.get("error") if isinstance(answer, dict) else None
        if ok != self.healthy or error != self.error:
            self.healthy, self.error = ok, (str(error) if error else None)
            if ok:
                self.ever_healthy = True
                logger.info("env server %s is healthy", self.client.describe(self))
            self.changed.set()

    def fail_pending(self, error: BaseException) -> None:
        pending, self.pending = self.pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(error)


class ZMQEnvClient(EnvClient):
    """Client of one or several env servers (see the module docstring).

    Args:
        address: ``tcp://host:port`` (or ``ipc://path``), or a list of them.
        name: shown in logs and errors.
        health_check_interval: seconds between health checks (0: none after start-up).
        startup_timeout: default wait of :meth:`wait_for_server_startup`.
        recovery_timeout: kept for the classic signature.
        request_timeout: seconds a request may take (default ``DEFAULT_REQUEST_TIMEOUT``:
            no limit).
        keys_dir: a directory of keys (``vf serve keygen --dir``); default
            ``VF_SERVE_KEYS_DIR``, else the per-user key pair the server also reads.
        insecure: connect without authentication (to a server started ``insecure=True``,
            e.g. verifiers 0.3.x's).

    Besides ``run_rollout``/``run_group``/``health`` it has the classic request methods of
    :class:`EnvClient` (``handle_run_rollout_request`` ..., ``send_request`` with the models
    of :mod:`verifiers.serve.types`), ``server_state``, ``send_cancel`` and
    ``cancel_all_pending``.
    """

    #: the request time limit when none is given (None: no limit)
    DEFAULT_REQUEST_TIMEOUT: float | None = None

    def __init__(
        self,
        address: str | Sequence[str] = "tcp://127.0.0.1:5000",
        name: str | None = None,
        health_check_interval: float = 1.0,
        startup_timeout: float = 600.0,
        recovery_timeout: float = 600.0,
        request_timeout: float | None = None,
        *,
        keys_dir: str | None = None,
        insecure: bool = False,
    ) -> None:
        self.auth = ServeAuth.resolve("client", keys_dir=keys_dir, insecure=insecure)
        addresses = [address] if isinstance(address, str) else list(address)
        if not addresses:
            from verifiers.errors import ConfigError

            raise ConfigError("ZMQEnvClient needs at least one server address")
        super().__init__(
            addresses[0],
            name,
            health_check_interval=health_check_interval,
            startup_timeout=startup_timeout,
            recovery_timeout=recovery_timeout,
        )
        self.addresses = addresses
        label = ", ".join(addresses)
        self.name = f"{name} ({label})" if name is not None else label
        self.request_timeout = (
            request_timeout if request_timeout is not None else self.DEFAULT_REQUEST_TIMEOUT
        )
        self._ctx: zmq.Context[zmq.Socket[bytes]] | None = None
        self._conns: list[_Conn] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._health_task: asyncio.Task[None] | None = None
        self._prefix = uuid.uuid4().hex[:10].encode()
        self._counter = 0
        self._pings = 0
        self._configs: dict[int, tuple[Any, dict[str, Any]]] = {}

    def describe(self, conn: _Conn) -> str:
        return conn.address if len(self._conns) > 1 else self.name

    # ------------------------------------------------------------------ connection

    async def ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None:
            from verifiers.errors import ConfigError

            raise ConfigError(
                "a ZMQEnvClient is bound to the event loop it was first used in; create one "
                "per event loop"
            )
        self._loop = loop
        self._ctx = zmq.Context()
        for address in self.addresses:
            sock = self._ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.SNDHWM, 0)
            sock.setsockopt(zmq.RCVHWM, 0)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
            sock.setsockopt(zmq.TCP_KEEPALIVE_IDLE, 10)
            sock.setsockopt(zmq.TCP_KEEPALIVE_INTVL, 2)
            sock.setsockopt(zmq.TCP_KEEPALIVE_CNT, 3)
            self.auth.secure_client(sock)
            sock.connect(address)
            conn = _Conn(self, address, sock)
            loop.add_reader(_fd(sock), conn.schedule_drain)
            conn.schedule_drain()  # the FD signals only after a read found the queue empty
            self._conns.append(conn)
        if self.health_check_interval > 0:
            self._health_task = loop.create_task(self._health_loop())

    def _ping(self, conn: _Conn) -> None:
        self._pings += 1
        try:
            conn.send(_PING_PREFIX + b"%d" % self._pings, HEALTH_PING)
        except zmq.Again:  # no connection (yet): the ping goes unanswered
            pass

    async def _health_loop(self) -> None:
        while True:
            await asyncio.sleep(self.health_check_interval)
            for conn in self._conns:
                conn.unanswered += 1
                if conn.healthy and conn.unanswered > UNHEALTHY_AFTER:
                    conn.healthy = False
                    conn.changed.set()
                    msg = (
                        f"env server {self.describe(conn)} stopped answering health checks; "
                        f"{len(conn.pending)} requests in flight there are lost"
                    )
                    logger.warning("%s", msg)
                    conn.fail_pending(EnvServerError(msg))
                self._ping(conn)

    async def wait_for_server_startup(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Wait until every server answers health checks. Raises :class:`EnvServerError` at
        once when a server reports that its environment failed to load, and
        ``TimeoutError`` after ``timeout`` (default ``startup_timeout``) seconds."""
        await self.ensure_started()
        limit = self.startup_timeout if timeout is None else timeout
        logger.info("waiting for env server %s", self.name)

        async def one(conn: _Conn) -> None:
            delay = 0.02
            while not conn.healthy:
                if conn.error:
                    raise EnvServerError(f"env server {self.describe(conn)}: {conn.error}")
                conn.changed.clear()
                self._ping(conn)
                try:
                    await asyncio.wait_for(conn.changed.wait(), delay)
                except TimeoutError:
                    pass
                delay = min(delay * 2, 0.5)
            if conn.error:
                raise EnvServerError(f"env server {self.describe(conn)}: {conn.error}")

        try:
            async with asyncio.timeout(limit):
                await asyncio.gather(*(one(c) for c in self._conns))
        except TimeoutError:
            raise TimeoutError(
                f"env server {self.name} did not become healthy within {limit}s (is it "
                "running? env servers refuse clients whose key they do not authorise: see "
                "`vf serve keygen --help`)"
            ) from None

    async def health(self, timeout: float | None = 1) -> bool:  # noqa: ASYNC109
        """Ask every server once; True when all answer healthy within ``timeout``."""
        await self.ensure_started()
        for conn in self._conns:
            conn.changed.clear()
            conn.healthy = False
            self._ping(conn)
        try:
            async with asyncio.timeout(timeout):
                while not all(c.healthy for c in self._conns):
                    waiting = [c for c in self._conns if not c.healthy]
                    if any(c.error for c in waiting):
                        return False
                    await asyncio.wait(
                        [asyncio.ensure_future(c.changed.wait()) for c in waiting],
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    for c in waiting:
                        c.changed.clear()
        except TimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ requests

    def wire_client_config(self, config: Any) -> dict[str, Any]:
        """A ClientConfig as the map the wire carries (resolved; cached per object)."""
        cached = self._configs.get(id(config))
        if cached is not None and cached[0] is config:
            return cached[1]
        data = super().wire_client_config(config)
        if len(self._configs) > 4096:
            self._configs.clear()
        self._configs[id(config)] = (config, data)
        return data

    async def send_request_map(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send a request map as it is (no request models on this path)."""
        return await self._request(pack(request), None)

    def _pick(self) -> _Conn:
        conns = self._conns
        if len(conns) == 1:
            return conns[0]
        healthy = [c for c in conns if c.healthy] or conns
        return min(healthy, key=lambda c: len(c.pending))

    async def _request(self, payload: bytes, limit: float | None) -> dict[str, Any]:
        if self._loop is not asyncio.get_running_loop():
            await self.ensure_started()
        conn = self._pick()
        self._counter += 1
        rid = self._prefix + b"%x" % self._counter
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        conn.pending[rid] = fut
        try:
            conn.send(rid, payload)
        except zmq.Again:
            conn.pending.pop(rid, None)
            raise EnvServerError(
                f"env server {self.describe(conn)} is not connected (down, or it refused "
                "this client's key)"
            ) from None
        limit = limit if limit is not None else self.request_timeout
        try:
            if limit is None:
                raw = await fut
            else:
                raw = await asyncio.wait_for(fut, limit)
        except (asyncio.CancelledError, TimeoutError):
            conn.pending.pop(rid, None)
            if not conn.sock.closed:
                conn.send(rid, CANCEL)
            raise
        response = unpack(raw)
        if not isinstance(response, dict) or not response.get("success"):
            error = response.get("error") if isinstance(response, dict) else None
            raise EnvServerError(
                f"env server {self.describe(conn)}: {error or 'request failed without a reason'}"
            )
        return response

    async def send_request(
        self,
        request: BaseRequest,
        response_type: type[BaseResponseT],
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> BaseResponseT:
        """Send a request model and validate the answer as ``response_type``; an answer
        that is not successful raises :class:`EnvServerError` (a ``RuntimeError``), no answer
        within ``timeout`` (default: ``request_timeout``) ``TimeoutError``."""
        data = request.model_dump(mode="python", warnings=False)
        if "input" in data:
            data["input"] = wire_input(data["input"])
        if "group_inputs" in data:
            data["group_inputs"] = [wire_input(i) for i in data["group_inputs"]]
        response = await self._request(pack(data), timeout)
        return response_type.model_validate(response)

    async def handle_health_request(
        self,
        request: HealthRequest,
        timeout: float | None,  # noqa: ASYNC109
    ) -> HealthResponse:
        from verifiers.serve.types import HealthResponse

        if await self.health(timeout):
            return HealthResponse(success=True)
        return HealthResponse(success=False, error=f"Server state: {self.server_state.value}")

    async def handle_run_rollout_request(
        self,
        request: RunRolloutRequest,
        timeout: float | None,  # noqa: ASYNC109
    ) -> RunRolloutResponse:
        from verifiers.serve.types import RunRolloutResponse

        return await self.send_request(request, RunRolloutResponse, timeout=timeout)

    async def handle_run_group_request(
        self,
        request: RunGroupRequest,
        timeout: float | None,  # noqa: ASYNC109
    ) -> RunGroupResponse:
        from verifiers.serve.types import RunGroupResponse

        return await self.send_request(request, RunGroupResponse, timeout=timeout)

    @property
    def server_state(self) -> ServerState:
        """``HEALTHY`` when every server answers health checks, ``STARTUP`` before any has,
        else ``UNHEALTHY``."""
        if self._conns and all(c.healthy for c in self._conns):
            return ServerState.HEALTHY
        if not any(c.ever_healthy for c in self._conns):
            return ServerState.STARTUP
        return ServerState.UNHEALTHY

    async def send_cancel(self, request_id: str | bytes) -> None:
        """Tell the servers to cancel a request (best effort; its waiter is not woken)."""
        rid = request_id.encode() if isinstance(request_id, str) else request_id
        for conn in self._conns:
            if not conn.sock.closed:
                try:
                    conn.raw_send(rid, CANCEL)
                except zmq.ZMQError:
                    pass

    async def cancel_all_pending(
        self, reason: str = "Request cancelled", use_cancelled: bool = False
    ) -> list[str]:
        """Fail every request in flight (with :class:`EnvServerError` carrying ``reason``,
        or cancel them with ``use_cancelled``), tell the servers to cancel them, and return
        their ids."""
        ids: list[str] = []
        for conn in self._conns:
            pending, conn.pending = conn.pending, {}
            for rid, fut in pending.items():
                ids.append(rid.decode(errors="replace"))
                if not fut.done():
                    if use_cancelled:
                        fut.cancel()
                    else:
                        fut.set_exception(EnvServerError(f"env server {self.name}: {reason}"))
                if not conn.sock.closed:
                    try:
                        conn.raw_send(rid, CANCEL)
                    except zmq.ZMQError:
                        pass
        return ids

    @property
    def pending(self) -> int:
        """Requests in flight over all servers."""
        return sum(len(c.pending) for c in self._conns)

    async def close(self) -> None:
        """Cancel what is in flight (on the servers too) and close the sockets."""
        if self._health_task is not None:
            self._health_task.cancel()
            try:
                await self._health_task
            except asyncio.CancelledError:
                pass
            self._health_task = None
        loop = self._loop
        for conn in self._conns:
            for rid, fut in list(conn.pending.items()):
                fut.cancel()
                try:
                    conn.raw_send(rid, CANCEL)
                except zmq.ZMQError:
                    pass
            conn.pending.clear()
            if loop is not None and not loop.is_closed():
                loop.remove_reader(_fd(conn.sock))
            conn.sock.close(linger=0)
        self._conns = []
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None
        self._loop = None


# names 0.3.x's version of this module imports, served on first use (verifiers.classic.forward)
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
