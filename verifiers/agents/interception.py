"""Model-call interception: an agent program's model requests become rollout steps.

One :class:`InterceptionServer` per environment process. Each rollout opens a
:class:`Channel`: its own Unix socket (in a private directory of the server) and its own secret.
The socket is bound into that rollout's sandbox only, where a small forwarder
(:data:`FORWARDER`, standard-library Python) listens on the sandbox's own loopback and relays
TCP connections to it, so the agent's base URL is ``http://127.0.0.1:PORT/vf/<secret>/v1``.
A sandbox without network has nothing else to reach: not the host's loopback, not another
rollout's socket (it is not in its file system), and a request without its own rollout's
secret is refused.

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

Bounds: request heads (32 KiB), bodies (``max_body_bytes``), connections and unanswered
requests per channel. Closing a channel refuses what is pending and drops its connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from verifiers.errors import ConfigError
from verifiers.types import ModelResponse

__all__ = [
    "FORWARDER",
    "Channel",
    "InterceptedCall",
    "InterceptionServer",
    "chat_completion_body",
    "sse_events",
]

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 32 << 10
DEFAULT_MAX_BODY_BYTES = 16 << 20
DEFAULT_MAX_PENDING = 4
DEFAULT_MAX_CONNECTIONS = 16

# the request keys passed on to the model as sampling arguments (the trainer's pinned ones win)
AGENT_SAMPLING_KEYS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
        "response_format",
    }
)

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Payload Too Large",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class _HttpError(Exception):
    def __init__(self, status: int, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close


Dialect = Literal["chat", "anthropic"]

MESSAGES_ROUTE = b"/v1/messages"
"""Anthropic's Messages endpoint (under the channel's base path)."""


@dataclass(eq=False)
class InterceptedCall:
    """One model request of an agent, waiting for the environment's answer. Whatever the
    agent's dialect, ``messages``, ``tools`` and ``sampling_args`` are in the chat-completions
    shape; ``body`` is the request as the agent sent it."""

    body: dict[str, Any]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    stream: bool
    include_usage: bool
    sampling_args: dict[str, Any]
    requested_model: str
    dialect: Dialect = "chat"
    received: float = field(default_factory=time.perf_counter)
    _reply: asyncio.Future[tuple[int, bytes, bool]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    @property
    def done(self) -> bool:
        return self._reply.done()

    def answer(self, response: ModelResponse) -> None:
        """Send ``response`` back to the agent in its dialect (as SSE events when it asked for
        a stream)."""
        if self._reply.done():
            return
        if self.dialect == "anthropic":
            from verifiers.v1.dialects import anthropic

            if self.stream:
                payload = anthropic.stream_events(response, self.requested_model)
            else:
                payload = orjson.dumps(anthropic.response_body(response, self.requested_model))
        elif self.stream:
            payload = sse_events(response, self.requested_model, self.include_usage)
        else:
            payload = orjson.dumps(chat_completion_body(response, self.requested_model))
        self._reply.set_result((200, payload, self.stream))

    def fail(self, status: int, message: str, type_: str = "invalid_request_error") -> None:
        """Answer with an error in the agent's dialect (OpenAI's shape with ``type_``, or
        Anthropic's, whose type follows the status)."""
        if not self._reply.done():
            self._reply.set_result((status, _error(status, message, type_, self.dialect), False))


class Channel:
    """One rollout's way in: a Unix socket only its sandbox has, and a secret."""

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
        self._answering: set[asyncio.Task[Any]] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self.closed = False
        #: counts: requests accepted as calls, refused (auth, shape, size, flood), connections
        self.stats: dict[str, int] = {"calls": 0, "refused": 0, "connections": 0}
        self.model_name = "model"

    def base_path(self) -> str:
        return f"/vf/{self.secret}/v1"

    def base_url(self, port: int, host: str = "127.0.0.1") -> str:
        """The OpenAI base URL for an agent reaching this channel through ``host:port``."""
        return f"http://{host}:{port}{self.base_path()}"

    def anthropic_base_url(self, port: int, host: str = "127.0.0.1") -> str:
        """The Anthropic base URL (the SDKs add ``/v1/messages``) for the same channel."""
        return f"http://{host}:{port}/vf/{self.secret}"

    async def next_call(self) -> InterceptedCall:
        """The next request of the agent (waits)."""
        while True:
            call = await self._queue.get()
            if not call.done:
                return call

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
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self._server._channels.discard(self)

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
                except _HttpError as e:
                    self.stats["refused"] += 1
                    await _write(writer, e.status, _error_body(e.message), close=True)
                    await _linger(reader, writer)
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
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise _HttpError(431, "request head too large", close=True) from None
        except asyncio.IncompleteReadError:
            return False
        method, target, headers = _parse_head(head)
        length_text = headers.get(b"content-length")
        if b"transfer-encoding" in headers:
            raise _HttpError(411, "send the body with a Content-Length", close=True)
        length = 0
        if length_text is not None:
            try:
                length = int(length_text)
            except ValueError:
                raise _HttpError(400, "bad Content-Length", close=True) from None
            if length < 0:
                raise _HttpError(400, "bad Content-Length", close=True)
        if length > self._server.max_body_bytes:
            raise _HttpError(
                413, f"request body over {self._server.max_body_bytes} bytes", close=True
            )
        if headers.get(b"expect", b"").lower() == b"100-continue" and length:
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = await reader.readexactly(length) if length else b""
        keep = headers.get(b"connection", b"").lower() != b"close"
        path = target.split(b"?", 1)[0]
        dialect: Dialect = "anthropic" if MESSAGES_ROUTE in path else "chat"
        route = self._authorised_path(path, headers)
        if route is None:
            self.stats["refused"] += 1
            error = _error(401, "invalid API key or path", "auth_error", dialect)
            await _write(writer, 401, error)
            return keep
        if route == b"/v1/models" and method == b"GET":
            data = {
                "object": "list",
                "data": [{"id": self.model_name, "object": "model", "owned_by": "verifiers"}],
            }
            await _write(writer, 200, orjson.dumps(data), close=not keep)
            return keep
        if route not in (b"/v1/chat/completions", MESSAGES_ROUTE):
            self.stats["refused"] += 1
            missing = (
                f"no route {route.decode(errors='replace')}: this server answers POST "
                ".../v1/chat/completions, POST .../v1/messages and GET .../v1/models"
            )
            error = _error(404, missing, "invalid_request_error", dialect)
            await _write(writer, 404, error)
            return keep
        if method != b"POST":
            self.stats["refused"] += 1
            await _write(writer, 405, _error(405, "use POST", "invalid_request_error", dialect))
            return keep
        try:
            call = self._make_call(body) if dialect == "chat" else self._make_messages_call(body)
        except _HttpError as e:
            self.stats["refused"] += 1
            error = _error(e.status, e.message, "invalid_request_error", dialect)
            await _write(writer, e.status, error, close=not keep)
            return keep
        if self.pending() >= self._max_pending:
            self.stats["refused"] += 1
            error = _error(429, "too many requests in flight", "rate_limit", dialect)
            await _write(writer, 429, error)
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
            if stream and status == 200:
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n" + payload
                )
                await writer.drain()
                return False
            await _write(writer, status, payload, close=not keep or self.closed)
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

    def _make_messages_call(self, raw: bytes) -> InterceptedCall:
        """An Anthropic Messages request as a chat-shaped call (a request the dialect cannot
        read is a 400 naming the field)."""
        from verifiers.v1.dialects.anthropic import AnthropicDialect, AnthropicRequestError
        from verifiers.v1.dialects.chat import message_to_wire

        body = _json_object(raw)
        dialect = AnthropicDialect()
        try:
            request = dialect.parse_request(body)
            sampling = dialect.parse_sampling(body)
        except AnthropicRequestError as e:
            raise _HttpError(400, f"invalid request: {e}") from None
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools or []
        ]
        model = body.get("model")
        return InterceptedCall(
            body=body,
            messages=[message_to_wire(m) for m in request.messages],
            tools=tools or None,
            stream=body.get("stream") is True,
            include_usage=True,
            sampling_args=sampling,
            requested_model=model if isinstance(model, str) else self.model_name,
            dialect="anthropic",
        )

    def _make_call(self, raw: bytes) -> InterceptedCall:
        body = _json_object(raw)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _HttpError(400, "'messages' must be a non-empty list")
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            raise _HttpError(400, "each message must be an object with a 'role'")
        n = body.get("n")
        if n not in (None, 1):
            raise _HttpError(400, "only n=1 is supported")
        tools = body.get("tools")
        if tools is not None and not (
            isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
        ):
            raise _HttpError(400, "'tools' must be a list of objects")
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        args = {k: v for k, v in body.items() if k in AGENT_SAMPLING_KEYS and v is not None}
        if "max_completion_tokens" in args:
            args.setdefault("max_tokens", args.pop("max_completion_tokens"))
        model = body.get("model")
        return InterceptedCall(
            body=body,
            messages=messages,
            tools=tools or None,
            stream=bool(body.get("stream")),
            include_usage=include_usage,
            sampling_args=args,
            requested_model=model if isinstance(model, str) else self.model_name,
        )


class InterceptionServer:
    """One per environment process: makes a :class:`Channel` per rollout.

    Args:
        max_body_bytes: largest request body accepted (413 beyond).
        max_pending: unanswered requests per channel (429 beyond).
        max_connections: open connections per channel (further ones are dropped).
        directory: where the channels' sockets live (default: a new private temp dir).
    """

    def __init__(
        self,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        directory: str | None = None,
    ) -> None:
        if max_body_bytes <= 0 or max_pending <= 0 or max_connections <= 0:
            raise ConfigError("max_body_bytes, max_pending and max_connections must be positive")
        self.max_body_bytes = max_body_bytes
        self.max_pending = max_pending
        self.max_connections = max_connections
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

    async def open_channel(self) -> Channel:
        """A new channel with its own socket and secret, listening."""
        secret = secrets.token_urlsafe(24)
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


# wire formats ------------------------------------------------------------------------------


def _parse_head(head: bytes) -> tuple[bytes, bytes, dict[bytes, bytes]]:
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise _HttpError(400, "not an HTTP/1.1 request", close=True)
    headers: dict[bytes, bytes] = {}
    if len(lines) > 101:
        raise _HttpError(431, "too many header fields", close=True)
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            raise _HttpError(400, "malformed header line", close=True)
        headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], headers


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _HttpError(400, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise _HttpError(400, "the body must be a JSON object")
    return body


def _error_body(message: str, type_: str = "invalid_request_error") -> bytes:
    return orjson.dumps({"error": {"message": message, "type": type_, "code": None}})


def _error(status: int, message: str, type_: str, dialect: Dialect) -> bytes:
    """An error body in ``dialect``'s shape (Anthropic's type follows the status)."""
    if dialect == "anthropic":
        from verifiers.v1.dialects.anthropic import error_body

        return orjson.dumps(error_body(status, message))
    return _error_body(message, type_)


async def _write(
    writer: asyncio.StreamWriter, status: int, payload: bytes, *, close: bool = False
) -> None:
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    await writer.drain()


def _message_out(response: ModelResponse) -> dict[str, Any]:
    msg = response.message
    out: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
    calls = msg.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": c.get("id") or f"call_{i}",
                "type": "function",
                "function": {
                    "name": c["function"]["name"],
                    "arguments": c["function"].get("arguments") or "{}",
                },
            }
            for i, c in enumerate(calls)
        ]
    reasoning = msg.get("reasoning_content")
    if reasoning:
        out["reasoning_content"] = reasoning
    return out


def _usage(response: ModelResponse) -> dict[str, int]:
    u = response.usage
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }


def _finish(response: ModelResponse) -> str:
    if response.finish_reason:
        return response.finish_reason
    return "tool_calls" if response.message.get("tool_calls") else "stop"


def chat_completion_body(response: ModelResponse, model: str) -> dict[str, Any]:
    """``response`` as an OpenAI ``chat.completion`` object."""
    return {
        "id": response.id or f"chatcmpl-{secrets.token_hex(8)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": _message_out(response),
                "finish_reason": _finish(response),
                "logprobs": None,
            }
        ],
        "usage": _usage(response),
    }


def sse_events(response: ModelResponse, model: str, include_usage: bool) -> bytes:
    """``response`` as the server-sent events of a streamed ``chat.completion.chunk``."""
    base = {
        "id": response.id or f"chatcmpl-{secrets.token_hex(8)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    message = _message_out(response)
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("reasoning_content"):
        delta["reasoning_content"] = message["reasoning_content"]
    chunks: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    ]
    for i, call in enumerate(message.get("tool_calls") or []):
        tc = {"index": i, **call}
        chunks.append(
            {
                **base,
                "choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}],
            }
        )
    chunks.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": _finish(response)}]}
    )
    if include_usage:
        chunks.append({**base, "choices": [], "usage": _usage(response)})
    out = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks)
    return out + b"data: [DONE]\n\n"


async def _linger(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    seconds: float = 2.0,
    limit: int = 8 << 20,
) -> None:
    """A lingering close after an error answer: end our side, then read and discard what the
    client is still sending (bounded in time and bytes), so that closing the connection with
    unread data does not reset it before the client has read the answer."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    with contextlib.suppress(Exception):
        if writer.can_write_eof():
            writer.write_eof()
        while limit > 0:
            left = deadline - loop.time()
            if left <= 0:
                return
            chunk = await asyncio.wait_for(reader.read(1 << 16), timeout=left)
            if not chunk:
                return
            limit -= len(chunk)


# the in-sandbox relay ----------------------------------------------------------------------

#: Standard-library Python run inside the sandbox: listens on 127.0.0.1 (port 0: the kernel
#: picks one, printed as the first line of output) and relays each connection to the Unix
#: socket given as its argument.
FORWARDER = r"""
import asyncio, sys
SOCK = sys.argv[1]
async def pipe(r, w):
    try:
        while True:
            data = await r.read(65536)
            if not data:
                break
            w.write(data)
            await w.drain()
    except Exception:
        # the far side is gone: read (and drop) a little more of this side, so that it is not
        # reset before it has read the far side's last answer
        try:
            left = 4 << 20
            while left > 0:
                data = await r.read(65536)
                if not data:
                    break
                left -= len(data)
        except Exception:
            pass
    finally:
        try:
            if w.can_write_eof():
                w.write_eof()
        except Exception:
            pass
async def handle(cr, cw):
    try:
        ur, uw = await asyncio.open_unix_connection(SOCK)
    except OSError:
        cw.close()
        return
    await asyncio.gather(pipe(cr, uw), pipe(ur, cw))
    for w in (cw, uw):
        try:
            w.close()
        except Exception:
            pass
async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    async with srv:
        await srv.serve_forever()
asyncio.run(main())
"""
