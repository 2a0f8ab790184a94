"""``create_app(settings)``: the hub's HTTP surface, assembled.

Routes live in :mod:`hub_server.routes` (one router per area), the behaviour in
:mod:`hub_server.services`, dependencies in :mod:`hub_server.deps` and the mapping of
errors to HTTP in :mod:`hub_server.http_errors`.
"""

from __future__ import annotations

import functools

from fastapi import FastAPI

from hub_server.http_errors import install_error_handlers
from hub_server.index import PageCache
from hub_server.metrics import Metrics, MetricsMiddleware
from hub_server.middleware import RejectNul
from hub_server.openapi import openapi_schema
from hub_server.routes import ROUTERS
from hub_server.services import open_service
from hub_server.settings import Settings
from verifiers.hub import schemas as s

__all__ = ["create_app", "open_service"]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    service = open_service(settings)
    metrics = Metrics()

    app = FastAPI(
        title="verifiers hub",
        version="1",
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/api/openapi.json",
        responses={"default": {"model": s.ErrorBody, "description": "an error, explained"}},
    )
    app.openapi = functools.partial(openapi_schema, app)  # type: ignore[method-assign]
    app.state.settings = settings
    app.state.service = service
    app.state.engine = service.engine
    app.state.metrics = metrics
    app.state.pages = PageCache(service.queries.index_project)

    # Middleware: the last added runs first.
    app.add_middleware(RejectNul)
    app.add_middleware(MetricsMiddleware, metrics=metrics)

    for router in ROUTERS:
        app.include_router(router)
    install_error_handlers(app)
    return app
