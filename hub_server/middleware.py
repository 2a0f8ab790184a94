"""Pure ASGI middleware of the hub (the metrics middleware lives in :mod:`hub_server.metrics`)."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

from verifiers.hub import schemas as s


class RejectNul:
    """No name, query or version here may contain NUL, and PostgreSQL cannot store one,
    so such requests are a 400 before any handler runs."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (
            "\x00" in scope["path"] or b"%00" in scope.get("query_string", b"")
        ):
            response = JSONResponse(
                s.ErrorBody(
                    error="bad_request", message="the request URL contains a NUL character"
                ).model_dump(),
                status_code=400,
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
