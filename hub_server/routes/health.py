"""``/healthz`` (the database answers) and ``/metrics`` (Prometheus text)."""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy import text

from hub_server.deps import AppMetrics, Service

log = logging.getLogger("hub_server")
router = APIRouter(include_in_schema=False)


@router.get("/healthz")
def healthz(service: Service) -> JSONResponse:
    try:
        with service.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as e:
        log.error("health check: database unavailable: %s", e)
        return JSONResponse({"status": "unavailable", "database": str(e)[:200]}, 503)
    return JSONResponse({"status": "ok"})


@router.get("/metrics")
def metrics_view(service: Service, metrics: AppMetrics) -> PlainTextResponse:
    return PlainTextResponse(
        metrics.render(service.queries.counts()), media_type="text/plain; version=0.0.4"
    )
