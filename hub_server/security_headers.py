"""Browser hardening for every response: no MIME sniffing, no framing, no referrer, and a
Content-Security-Policy (the index pages need no script, style or image at all)."""

from __future__ import annotations

from hub_server.limits import ASGIApp, Message, Receive, Scope, Send

STRICT_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
BASE_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)


class SecurityHeaders:
    """Adds the headers a route has not set itself (the docs page sets a looser CSP)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                have = {name.lower() for name, _ in headers}
                for name, value in (
                    *BASE_HEADERS,
                    (b"content-security-policy", STRICT_CSP.encode()),
                ):
                    if name not in have:
                        headers.append((name, value))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)
