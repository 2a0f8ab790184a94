"""The OpenAPI document served at ``/api/openapi.json``."""

from __future__ import annotations

import warnings
from typing import Any

from fastapi import FastAPI


def openapi_schema(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema, less the 422 responses it assumes (this app answers every invalid
    request with a 400 ErrorBody, documented as each operation's default response), with one
    operation id per method."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        with warnings.catch_warnings():  # GET+HEAD routes: the ids are made unique below
            warnings.filterwarnings("ignore", "Duplicate Operation ID", UserWarning)
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
        for ops in schema.get("paths", {}).values():
            for method, op in ops.items():
                op.get("responses", {}).pop("422", None)
                # GET+HEAD routes share one generated id; give each operation its own
                base, _, _ = op.get("operationId", "").rpartition("_")
                if base:
                    op["operationId"] = f"{base}_{method}"
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema
