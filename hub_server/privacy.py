"""One answer for "no such project" and "a private project you may not see".

Whoever lacks access must not learn that a private project exists: every route answers a
hidden project exactly as it answers a missing one (same status, same body). Scoped indexes
answer an anonymous caller 401 in both cases, so pip and uv retry with credentials; the
global index and everyone authenticated get 404.
"""

from __future__ import annotations

from hub_server.auth import Principal
from hub_server.errors import HubError, NotFound, Unauthorized


def hidden(who: Principal | None, what: str, *, scoped: bool = True) -> HubError:
    """The error for a project (or file) that is missing or private to ``who``."""
    if who is None and scoped:
        return Unauthorized(
            f"no {what} visible without credentials: if it is private, authenticate with a "
            "read token; else check the name"
        )
    return NotFound(f"no {what} on this hub")
