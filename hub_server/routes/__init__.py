"""The hub's HTTP routes, one ``APIRouter`` per area. ``ROUTERS`` is the order ``create_app``
includes them in: a new area is one line here (before ``index.scoped_router``, whose
``/{owner}/...`` paths would otherwise capture it)."""

from __future__ import annotations

from fastapi import APIRouter

from hub_server.routes import (
    evals,
    files,
    health,
    index,
    journal,
    projects,
    tokens,
    uploads,
    users_orgs,
)

ROUTERS: list[APIRouter] = [
    health.router,
    index.router,
    files.router,
    uploads.router,
    users_orgs.router,
    journal.router,
    tokens.router,
    projects.router,
    evals.router,
    index.scoped_router,  # last: /{owner}/simple/... and /{owner}/{project}/simple/...
]

__all__ = ["ROUTERS"]
