"""Request body limits, enforced while the body arrives and before anything else runs.

:class:`BodyLimit` is a pure ASGI middleware placed outside routing, authentication and body
parsing: a declared ``Content-Length`` over the limit is refused before a byte of the body is
read, and an undeclared (chunked) body is counted as it is received and cut off at the limit.
So a client without credentials can make the server hold at most one limit's worth of body.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JSON_BODY_LIMIT = 1024 * 1024
UPLOAD_PATHS = ("/legacy/", "/api/v1/upload")
RUN_PATH_PREFIX = "/api/v1/runs/"  # pushed eval runs: their own limit (VF_HUB_MAX_RUN_BYTES)
# multipart framing and form fields around the file (bounded separately by the parser)
MULTIPART_OVERHEAD = 2 * 1024 * 1024


def _too_large(limit: int) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    body = json.dumps(
        {
            "error": "too_large",
            "message": f"the request body is over this route's limit of {limit} bytes; "
            "send less (uploads: VF_HUB_MAX_UPLOAD_BYTES on the server)",
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    return body, headers


class BodyLimit:
    """Refuse bodies over ``upload_limit`` (upload routes), ``run_limit`` (pushed eval runs)
    or ``json_limit`` (all others) with 413, counting bytes while receiving."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        upload_limit: int,
        json_limit: int = JSON_BODY_LIMIT,
        run_limit: int | None = None,
    ):
        self.app = app
        self.upload_limit = upload_limit + MULTIPART_OVERHEAD
        self.json_limit = json_limit
        self.run_limit = run_limit if run_limit is not None else json_limit

    def limit_for(self, path: str) -> int:
        if path in UPLOAD_PATHS:
            return self.upload_limit
        if path.startswith(RUN_PATH_PREFIX):
            return self.run_limit
        return self.json_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _send_413(send, limit)
            return
        received = 0
        over = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, over
            if over:  # the app keeps reading after the cut: it sees a disconnect
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if over:  # whatever the app answers to the cut-off body, the client gets 413
                if not started:
                    started = True
                    await _send_413(send, limit)
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not over:
                raise
        if over and not started:
            await _send_413(send, limit)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_413(send: Send, limit: int) -> None:
    body, headers = _too_large(limit)
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
