"""Browser sign-in: a token exchanged for a session cookie, and CSRF tokens for forms.

The session cookie holds the token's secret (the hub stores only its hash, as for every
token); it is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page
sends it) and ``Secure`` on HTTPS, and it expires with the token or after
:data:`SESSION_SECONDS`. The cookie authenticates HTML pages only: the JSON API and the
indexes keep taking tokens in the ``Authorization`` header. Forms carry a CSRF token that must
equal the random ``vf_csrf`` cookie (double submit).
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

from hub_server.auth import Principal, token_from_headers
from hub_server.errors import HubError

SESSION_COOKIE = "vf_session"
CSRF_COOKIE = "vf_csrf"
SESSION_SECONDS = 8 * 3600


def page_principal(request: Request, *, cookie_ok: bool = True) -> Principal | None:
    """Who a page is for: the Authorization header's token, else (for HTML pages only) the
    session cookie's."""
    service = request.app.state.service
    secret = token_from_headers(request.headers.get("authorization"))
    if secret:
        return service.authenticate(secret)  # type: ignore[no-any-return]
    cookie = request.cookies.get(SESSION_COOKIE) if cookie_ok else None
    if not cookie:
        return None
    try:
        return service.authenticate(cookie)  # type: ignore[no-any-return]
    except HubError:  # revoked or expired: the page is shown signed out
        return None


def csrf_token(request: Request) -> str:
    """The CSRF token for this browser (its cookie's value, or a new one to set, the same
    for the whole request)."""
    value = request.cookies.get(CSRF_COOKIE, "")
    if len(value) >= 32:
        return value
    fresh = getattr(request.state, "new_csrf", None)
    if fresh is None:
        fresh = request.state.new_csrf = secrets.token_urlsafe(32)
    return str(fresh)


def csrf_ok(request: Request, submitted: str | None) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    return bool(cookie) and bool(submitted) and hmac.compare_digest(cookie, submitted or "")


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def set_csrf_cookie(request: Request, response: Response, value: str) -> None:
    if request.cookies.get(CSRF_COOKIE) != value:
        response.set_cookie(
            CSRF_COOKIE, value, httponly=True, samesite="strict", secure=_secure(request), path="/"
        )


def set_session(request: Request, response: Response, secret: str, max_age: int) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=max(1, min(max_age, SESSION_SECONDS)),
        httponly=True,
        samesite="strict",
        secure=_secure(request),
        path="/",
    )


def clear_session(response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
