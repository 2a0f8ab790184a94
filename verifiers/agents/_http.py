"""The slice of HTTP/1.1 the interception server speaks: request heads, bodies read under a
deadline, JSON error bodies in the agent's dialect, responses, and a lingering close."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Literal

import orjson

__all__ = [
    "MAX_HEAD_BYTES",
    "Dialect",
    "HttpError",
    "dialect_error",
    "error_body",
    "json_object",
    "linger",
    "parse_head",
    "read_body",
    "write_response",
]

MAX_HEAD_BYTES = 32 << 10
_CHUNK = 1 << 16

Dialect = Literal["chat", "anthropic", "responses"]

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


class HttpError(Exception):
    """A request answered with ``status`` and a JSON error naming ``message`` (``type_``, the
    OpenAI error type; ``code``, the limit gone over); ``close``: the connection ends after the
    answer."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        close: bool = False,
        type_: str = "invalid_request_error",
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close
        self.type_ = type_
        self.code = code


def parse_head(head: bytes) -> tuple[bytes, bytes, dict[bytes, bytes]]:
    """``(method, target, headers)`` of a request head (lower-cased header names)."""
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise HttpError(400, "not an HTTP/1.1 request", close=True)
    headers: dict[bytes, bytes] = {}
    if len(lines) > 101:
        raise HttpError(431, "too many header fields", close=True)
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            raise HttpError(400, "malformed header line", close=True)
        headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], headers


async def read_body(reader: asyncio.StreamReader, length: int, timeout: float) -> bytearray:  # noqa: ASYNC109
    """Exactly ``length`` bytes of body, read in chunks into one buffer (never a second copy),
    all within ``timeout`` seconds: :class:`TimeoutError` past it,
    :class:`asyncio.IncompleteReadError` when the peer ends early."""
    body = bytearray(length)  # its final size: growing it would copy it
    view = memoryview(body)
    got = 0
    try:
        async with asyncio.timeout(timeout):
            while got < length:
                chunk = await reader.read(min(_CHUNK, length - got))
                if not chunk:
                    raise asyncio.IncompleteReadError(bytes(view[max(0, got - 64) : got]), length)
                view[got : got + len(chunk)] = chunk
                got += len(chunk)
    finally:
        view.release()
    return body


def json_object(raw: bytes | bytearray) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise HttpError(400, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise HttpError(400, "the body must be a JSON object")
    return body


def error_body(
    message: str, type_: str = "invalid_request_error", code: str | None = None
) -> bytes:
    """An OpenAI-shaped error body."""
    return orjson.dumps({"error": {"message": message, "type": type_, "code": code}})


def dialect_error(status: int, message: str, type_: str, dialect: Dialect) -> bytes:
    """An error body in ``dialect``'s shape (Anthropic's type follows the status)."""
    if dialect == "anthropic":
        from verifiers.v1.dialects.anthropic import error_body as anthropic_error

        return orjson.dumps(anthropic_error(status, message))
    return error_body(message, type_)


async def write_response(
    writer: asyncio.StreamWriter, status: int, payload: bytes, *, close: bool = False
) -> None:
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    await writer.drain()


async def linger(
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
            chunk = await asyncio.wait_for(reader.read(_CHUNK), timeout=left)
            if not chunk:
                return
            limit -= len(chunk)
