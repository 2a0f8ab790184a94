"""Model-call interception: an agent program's model requests become rollout steps.

One :class:`InterceptionServer` per environment process. Each rollout opens a
:class:`Channel` with its own secret, listening on a socket only that rollout's sandbox can
reach. On the local backends (bwrap, subprocess) the sandbox's agent opens a TCP socket
listening on the sandbox's own loopback and hands it to the host, which accepts the agent's
connections itself: no relay process, no byte copied twice; the agent's base URL is
``http://127.0.0.1:PORT/vf/<secret>/v1``. Elsewhere (docker) the channel is a Unix socket (in a
private directory of the server) bound into the sandbox, where a small forwarder
(:data:`FORWARDER`, standard-library Python) relays TCP connections to it. A sandbox without
network has nothing else to reach: not the host's loopback, not another rollout's socket (it is
in another network namespace, or not in its file system), and a request without its own
rollout's secret is refused.

The server speaks just enough HTTP/1.1 for OpenAI clients: ``POST .../v1/chat/completions``
(streamed as server-sent events or not, tools, ``n=1``) and ``GET .../v1/models``; and for
Anthropic clients (the ``anthropic`` SDK, Claude Code; base URL ``http://127.0.0.1:PORT/vf/<secret>``,
the secret also accepted as ``x-api-key``): ``POST .../v1/messages``, read through
:class:`verifiers.v1.dialects.anthropic.AnthropicDialect` into the same chat-shaped call, so an
agent of either API is answered by the same OpenAI-compatible model and recorded the same way.
Each accepted request is an :class:`InterceptedCall` on the channel's queue; the environment
takes it, calls the model through its own client (one trajectory step) and answers it with
:meth:`InterceptedCall.answer`, which writes the response in the dialect and shape (streamed or
not) the agent asked for; errors, too, come back in the agent's dialect.

Bounds (the agent is untrusted; these keep the host's memory bounded whatever it sends):
request heads (32 KiB), each body (``max_body_bytes``, 413), connections and unanswered requests
per channel (dropped, 429), the body bytes a channel holds at once, being read or waiting for
their answer (``max_channel_bytes``, 413) and all channels together (``max_total_bytes``, 413),
and the time a body may take to arrive once its head has (``read_timeout``, 408). Going over
the last three is recorded on the channel (:attr:`Channel.limit_errors`,
:meth:`Channel.limit_hit`): the environment ends the rollout as errored. Closing a channel
refuses what is pending and drops its connections.

Modules: the HTTP slice (:mod:`verifiers.agents._http`), calls and request parsing
(:mod:`verifiers.agents.calls`), OpenAI's Responses API (``POST .../v1/responses``, what Codex
speaks; :mod:`verifiers.agents.responses_wire`), the chat wire format
(:mod:`verifiers.agents.wire`) and the relay (:mod:`verifiers.agents.forwarder`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from verifiers.agents._http import (
    MAX_HEAD_BYTES,
    Dialect,
    HttpError,
    dialect_error,
    error_body,
    linger,
    parse_head,
    read_body,
    write_response,
)
from verifiers.agents.calls import (
    AGENT_SAMPLING_KEYS,
    MESSAGES_ROUTE,
    InterceptedCall,
    chat_call,
    messages_call,
)
from verifiers.agents.forwarder import FORWARDER
from verifiers.agents.responses_wire import RESPONSES_ROUTE, responses_call
from verifiers.agents.wire import chat_completion_body, sse_events
from verifiers.errors import ConfigError

__all__ = [
    "AGENT_SAMPLING_KEYS",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CHANNEL_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "DEFAULT_READ_TIMEOUT",
    "FORWARDER",
    "Channel",
    "InterceptedCall",
    "InterceptionServer",
    "chat_completion_body",
    "sse_events",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 16 << 20
DEFAULT_MAX_CHANNEL_BYTES = 16 << 20
DEFAULT_MAX_TOTAL_BYTES = 256 << 20
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_MAX_PENDING = 4
DEFAULT_MAX_CONNECTIONS = 16
_MAX_LIMIT_ERRORS = 8


class Channel:
    """One rollout's way in: a socket only its sandbox reaches, and a secret."""

    def __init__(
        self, server: InterceptionServer, path: str, secret: str, max_pending: int
    ) -> None:
        self._server = server
        self.path = path
        self.secret = secret
        self._prefix = f"/vf/{secret}".encode()
        self._queue: asyncio.Queue[InterceptedCall] = asyncio.Queue()
        self._max_pending = max_pending
        self._pending: set[InterceptedCall] = set()
        self._listener: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._answering: set[asyncio.Task[object]] = set()
        self._handlers: set[asyncio.Task[object]] = set()
        self._limit = asyncio.Event()
        self.closed = False
        #: counts: requests accepted as calls, refused (auth, shape, size, flood), connections,
        #: requests refused for the byte budgets, bodies cut off by the read timeout; request
        #: body bytes read and answer body bytes written (each byte once: no relay copies)
        self.stats: dict[str, int] = {
            "calls": 0,
            "refused": 0,
            "connections": 0,
            "over_budget": 0,
            "read_timeouts": 0,
            "body_bytes_in": 0,
            "answer_bytes_out": 0,
        }
        #: bytes of request bodies this channel holds now (being read or awaiting an answer)
        self.held_bytes = 0
        #: what the agent went over (budgets, read timeout): the first few, each a sentence
        self.limit_errors: list[str] = []
        self.model_name = "model"
        #: answers ``POST .../tool`` (a program asking about a tool result before it records
        #: it: ``{"phase": ..., "message": {...}}``) with a JSON decision; None: no such route
        self.tool_hook: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None

    def base_path(self) -> str:
        return f"/vf/{self.secret}/v1"

    def base_url(self, port: int, host: str = "127.0.0.1") -> str:
        """The OpenAI base URL for an agent reaching this channel through ``host:port``."""
        return f"http://{host}:{port}{self.base_path()}"

    def tool_url(self, port: int, host: str = "127.0.0.1") -> str:
        """Where a program posts its tool results for :attr:`tool_hook` (the secret as bearer
        token, or in the path as here)."""
        return f"http://{host}:{port}/vf/{self.secret}/tool"

    def anthropic_base_url(self, port: int, host: str = "127.0.0.1") -> str:
        """The Anthropic base URL (the SDKs add ``/v1/messages``) for the same channel."""
        return f"http://{host}:{port}/vf/{self.secret}"

    async def next_call(self) -> InterceptedCall:
        """The next request of the agent (waits)."""
        while True:
            call = await self._queue.get()
            if not call.done:
                return call

    async def limit_hit(self) -> None:
        """Returns once the agent has gone over a byte budget or the read timeout (at once if
        it already has): the rollout should end as errored (:attr:`limit_errors` says how)."""
        await self._limit.wait()

    def pending(self) -> int:
        return sum(1 for c in self._pending if not c.done)

    async def close(self) -> None:
        """Refuse what is pending, drop the connections, remove the socket. Idempotent."""
        if self.closed:
            return
        self.closed = True
        for call in list(self._pending):
            call.fail(503, "the rollout is over", "rollout_finished")
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        answering = [t for t in self._answering if t is not asyncio.current_task()]
        if answering:  # let the refusals be written (briefly: the peer may not read)
            await asyncio.wait(answering, timeout=1.0)
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                writer.transport.abort()
        self._writers.clear()
        handlers = [t for t in self._handlers if t is not asyncio.current_task()]
        if handlers:  # they see the aborted connections and end
            await asyncio.wait(handlers, timeout=1.0)
        if self.path:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        self._server._channels.discard(self)

    # limits ------------------------------------------------------------------------------

    def _over_limit(self, status: int, code: str, message: str) -> HttpError:
        """Record that the agent went over ``code`` (a limit's name) and the error answering
        it (the connection ends after it)."""
        self.stats["read_timeouts" if status == 408 else "over_budget"] += 1
        if not self.limit_errors:  # once per rollout: the agent decides how often
            logger.warning("interception: a rollout's agent went over %s: %s", code, message)
        if len(self.limit_errors) < _MAX_LIMIT_ERRORS:
            self.limit_errors.append(f"{code}: {message}")
        self._limit.set()
        return HttpError(status, f"{code}: {message}", close=True, code=code)

    def _reserve(self, length: int) -> None:
        """Count ``length`` bytes of body against the channel's and the server's budgets, or
        raise the 413 of the one it would go over (nothing is read then)."""
        server = self._server
        if self.held_bytes + length > server.max_channel_bytes:
            raise self._over_limit(
                413,
                "max_channel_bytes",
                f"this rollout's requests would hold {self.held_bytes + length} bytes of body at "
                f"once, over its budget of {server.max_channel_bytes} bytes (wait for an answer "
                "before sending more)",
            )
        if server.held_bytes + length > server.max_total_bytes:
            raise self._over_limit(
                413,
                "max_total_bytes",
                f"the interception server holds {server.held_bytes} bytes of request bodies; "
                f"{length} more would pass its budget of {server.max_total_bytes} bytes",
            )
        self.held_bytes += length
        server.held_bytes += length

    def _release(self, length: int) -> None:
        self.held_bytes -= length
        self._server.held_bytes -= length

    async def _read_body(self, reader: asyncio.StreamReader, length: int) -> bytearray:
        timeout = self._server.read_timeout
        try:
            return await read_body(reader, length, timeout)
        except TimeoutError:
            raise self._over_limit(
                408,
                "read_timeout",
                f"the {length}-byte request body did not arrive within {timeout:g} seconds",
            ) from None

    # HTTP --------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.closed or len(self._writers) >= self._server.max_connections:
            self.stats["refused"] += 1
            writer.transport.abort()
            return
        self._writers.add(writer)
        self.stats["connections"] += 1
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            while not self.closed:
                try:
                    keep = await self._one_request(reader, writer)
                except HttpError as e:
                    self.stats["refused"] += 1
                    payload = error_body(e.message, e.type_, e.code)
                    await write_response(writer, e.status, payload, close=True)
                    await linger(reader, writer)
                    return
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        except asyncio.CancelledError:
            # only the event loop's shutdown cancels a connection's task: end it quietly (a
            # cancelled handler task is reported by asyncio as an error)
            return
        except Exception:  # never let one odd request take the server down
            logger.exception("interception: request handling failed")
        finally:
            self._writers.discard(writer)
            self._handlers.discard(task)  # type: ignore[arg-type]
            with contextlib.suppress(Exception):
                writer.close()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Read and answer one request; whether the connection stays open."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise HttpError(431, "request head too large", close=True) from None
        except asyncio.IncompleteReadError:
            return False
        method, target, headers = parse_head(head)
        length = self._content_length(headers)
        self._reserve(length)
        try:
            if headers.get(b"expect", b"").lower() == b"100-continue" and length:
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            keep = headers.get(b"connection", b"").lower() != b"close"
            body = await self._read_body(reader, length) if length else bytearray()
            self.stats["body_bytes_in"] += len(body)
            path = target.split(b"?", 1)[0]
            dialect: Dialect = (
                "anthropic" if MESSAGES_ROUTE in path
                else "responses" if RESPONSES_ROUTE in path else "chat"
            )  # fmt: skip
            route = self._authorised_path(path, headers)
            call = await self._route(writer, method, route, dialect, body, keep)
            del body  # the call holds the parsed request; the raw bytes go
            if call is None:
                return keep
            return await self._queue_and_answer(writer, call, keep)
        finally:
            self._release(length)

    def _content_length(self, headers: Mapping[bytes, bytes]) -> int:
        if b"transfer-encoding" in headers:
            raise HttpError(411, "send the body with a Content-Length", close=True)
        text = headers.get(b"content-length")
        if text is None:
            return 0
        try:
            length = int(text)
        except ValueError:
            raise HttpError(400, "bad Content-Length", close=True) from None
        if length < 0:
            raise HttpError(400, "bad Content-Length", close=True)
        limit = self._server.max_body_bytes
        if length > limit:
            raise HttpError(
                413, f"max_body_bytes: request body over {limit} bytes", close=True,
                code="max_body_bytes",
            )  # fmt: skip
        return length

    async def _route(
        self,
        writer: asyncio.StreamWriter,
        method: bytes,
        route: bytes | None,
        dialect: Dialect,
        body: bytearray,
        keep: bool,
    ) -> InterceptedCall | None:
        """The call a request makes, or None once it has been answered here (an error, or the
        model list)."""
        status, payload = 0, b""
        if route is None:
            status = 401
            payload = dialect_error(401, "invalid API key or path", "auth_error", dialect)
        elif route == b"/v1/models" and method == b"GET":
            model = {"id": self.model_name, "object": "model", "owned_by": "verifiers"}
            await write_response(
                writer, 200, orjson.dumps({"object": "list", "data": [model]}), close=not keep
            )
            return None
        elif route == b"/tool" and method == b"POST" and self.tool_hook is not None:
            await self._answer_tool(writer, self.tool_hook, body, keep)
            return None
        elif route not in (b"/v1/chat/completions", MESSAGES_ROUTE, RESPONSES_ROUTE):
            status = 404
            missing = (
                f"no route {route.decode(errors='replace')}: this server answers POST "
                ".../v1/chat/completions, POST .../v1/messages, POST .../v1/responses and GET "
                ".../v1/models"
            )
            payload = dialect_error(404, missing, "invalid_request_error", dialect)
        elif method != b"POST":
            status = 405
            payload = dialect_error(405, "use POST", "invalid_request_error", dialect)
        else:
            try:
                if dialect == "chat":
                    return chat_call(body, self.model_name)
                if dialect == "responses":
                    return responses_call(body, self.model_name)
                return messages_call(body, self.model_name)
            except HttpError as e:
                status = e.status
                payload = dialect_error(e.status, e.message, "invalid_request_error", dialect)
        self.stats["refused"] += 1
        await write_response(writer, status, payload, close=not keep)
        return None

    async def _answer_tool(
        self,
        writer: asyncio.StreamWriter,
        hook: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
        body: bytearray,
        keep: bool,
    ) -> None:
        """Answer a tool-result request with the hook's decision (400: a body that is not a
        JSON object, or a hook that failed; the environment records why)."""
        try:
            request = orjson.loads(body)
            if not isinstance(request, dict):
                raise ValueError("the body must be a JSON object")
            decision = await hook(request)
        except Exception as e:  # the hook's own failure is kept by the environment
            self.stats["refused"] += 1
            payload = error_body(f"tool hook failed: {e}", "invalid_request_error", None)
            await write_response(writer, 400, payload, close=not keep)
            return
        await write_response(writer, 200, orjson.dumps(decision), close=not keep)

    async def _queue_and_answer(
        self, writer: asyncio.StreamWriter, call: InterceptedCall, keep: bool
    ) -> bool:
        """Hand ``call`` to the environment and write its answer; whether to keep going."""
        if self.pending() >= self._max_pending:
            self.stats["refused"] += 1
            error = dialect_error(429, "too many requests in flight", "rate_limit", call.dialect)
            await write_response(writer, 429, error)
            return keep
        self.stats["calls"] += 1
        self._pending.add(call)
        self._queue.put_nowait(call)
        task = asyncio.current_task()
        assert task is not None
        self._answering.add(task)
        try:
            try:
                status, payload, stream = await call._reply
            finally:
                self._pending.discard(call)
            self.stats["answer_bytes_out"] += len(payload)
            if stream and status == 200:
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n" + payload
                )
                await writer.drain()
                return False
            await write_response(writer, status, payload, close=not keep or self.closed)
            return keep and not self.closed
        finally:
            self._answering.discard(task)

    def _authorised_path(self, path: bytes, headers: Mapping[bytes, bytes]) -> bytes | None:
        """The route under the secret prefix (or with the secret as bearer token or as
        Anthropic's ``x-api-key``), or None."""
        prefix = self._prefix
        if path.startswith(prefix + b"/") and hmac.compare_digest(path[: len(prefix)], prefix):
            return path[len(prefix) :]
        auth = headers.get(b"authorization", b"")
        token = auth[7:].strip() if auth[:7].lower() == b"bearer " else b""
        token = token or headers.get(b"x-api-key", b"")
        if token and hmac.compare_digest(token, self.secret.encode()):
            return path
        return None


class InterceptionServer:
    """One per environment process: makes a :class:`Channel` per rollout.

    Args:
        max_body_bytes: largest request body accepted (413 beyond).
        max_pending: unanswered requests per channel (429 beyond).
        max_connections: open connections per channel (further ones are dropped).
        max_channel_bytes: body bytes one channel may hold at once, being read or waiting for
            their answer (413 beyond, recorded as the rollout's error). Default 16 MiB: one
            request of the largest size, or several smaller ones.
        max_total_bytes: the same over all channels (default 256 MiB).
        read_timeout: seconds a request body may take to arrive once its head has (408
            beyond, recorded as the rollout's error). Default 60.
        directory: where the channels' sockets live (default: a new private temp dir).
    """

    def __init__(
        self,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_channel_bytes: int | None = None,
        max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        directory: str | None = None,
    ) -> None:
        if max_channel_bytes is None:
            max_channel_bytes = max(DEFAULT_MAX_CHANNEL_BYTES, max_body_bytes)
        sizes = (max_body_bytes, max_pending, max_connections, max_channel_bytes, max_total_bytes)
        if min(sizes) <= 0 or not read_timeout > 0:
            raise ConfigError(
                "max_body_bytes, max_pending, max_connections, max_channel_bytes, "
                "max_total_bytes and read_timeout must be positive"
            )
        if max_body_bytes > min(max_channel_bytes, max_total_bytes):
            raise ConfigError(
                f"max_body_bytes ({max_body_bytes}) is over the byte budget "
                f"(max_channel_bytes {max_channel_bytes}, max_total_bytes {max_total_bytes}): "
                "no request of that size could be taken"
            )
        self.max_body_bytes = max_body_bytes
        self.max_pending = max_pending
        self.max_connections = max_connections
        self.max_channel_bytes = max_channel_bytes
        self.max_total_bytes = max_total_bytes
        self.read_timeout = read_timeout
        #: bytes of request bodies all channels hold now
        self.held_bytes = 0
        self._given_dir = directory
        self._dir: str | None = None
        self._channels: set[Channel] = set()

    def _directory(self) -> str:
        if self._dir is None:
            if self._given_dir is not None:
                os.makedirs(self._given_dir, mode=0o711, exist_ok=True)
                self._dir = self._given_dir
            else:
                self._dir = tempfile.mkdtemp(prefix="vf-intercept-")
            # traversable, not listable: a sandbox's uid (bwrap binds the socket as that uid)
            # reaches a socket only by its unguessable name
            os.chmod(self._dir, 0o711)
        return self._dir

    async def open_channel(self, listener: socket.socket | None = None) -> Channel:
        """A new channel with its own secret, listening: on ``listener`` when given (a
        listening socket, e.g. one a sandbox's agent opened on the sandbox's own loopback:
        ``listen_loopback()`` of the bwrap and subprocess sandboxes; the channel then
        accepts the sandbox's connections itself and ``path`` is empty), else on a new Unix
        socket of its own (``path``)."""
        secret = secrets.token_urlsafe(24)
        if listener is not None:
            channel = Channel(self, "", secret, self.max_pending)
            channel._listener = await asyncio.start_server(
                channel._serve, sock=listener, limit=MAX_HEAD_BYTES
            )
            self._channels.add(channel)
            return channel
        path = os.path.join(self._directory(), f"{secrets.token_hex(16)}.sock")
        channel = Channel(self, path, secret, self.max_pending)
        channel._listener = await asyncio.start_unix_server(
            channel._serve, path=path, limit=MAX_HEAD_BYTES
        )
        os.chmod(path, 0o666)
        self._channels.add(channel)
        return channel

    @property
    def open_channels(self) -> int:
        return len(self._channels)

    async def close(self) -> None:
        """Close every channel and remove the socket directory."""
        for channel in list(self._channels):
            await channel.close()
        if self._dir is not None and self._given_dir is None:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None
