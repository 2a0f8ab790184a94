"""The API docs page (Swagger UI), served entirely from the hub: its script and style come
from the ``swagger-ui-bundle`` package, so the page works on a hub with no internet access,
and its CSP allows scripts from the hub only."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = "/api/docs/assets"
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'"
)
_INIT_JS = """window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: document.body.dataset.openapi,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
  });
});
"""


def assets_dir() -> Path:
    import swagger_ui_bundle

    return Path(swagger_ui_bundle.swagger_ui_path)


def mount_docs(app: FastAPI, *, openapi_url: str, title: str) -> None:
    """``GET /api/docs`` and its assets under ``/api/docs/assets``."""
    app.mount(ASSETS, StaticFiles(directory=assets_dir()), name="docs-assets")
    page = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title}: API</title>
  <link rel="stylesheet" href="{ASSETS}/swagger-ui.css">
</head>
<body data-openapi="{openapi_url}">
  <div id="swagger-ui"></div>
  <script src="{ASSETS}/swagger-ui-bundle.js"></script>
  <script src="/api/docs/init.js"></script>
</body>
</html>
"""

    @app.get("/api/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": DOCS_CSP})

    @app.get("/api/docs/init.js", include_in_schema=False)
    def docs_init() -> Response:
        return Response(_INIT_JS, media_type="text/javascript")
