"""Browser hardening (issue 13, point 10): security headers on every response, a CSP on HTML,
and API docs whose assets come from the hub itself."""

from __future__ import annotations

import re

import httpx
import pytest

from .conftest import Hub


def _paths(hub: Hub) -> list[str]:
    owner, token = hub.new_user()
    name = hub.unique("headers")
    sha = hub.upload(hub.wheel(name), token).json()["sha256"]
    dist = name.replace("-", "_")
    return [
        "/simple/",
        f"/simple/{name}/",
        f"/{owner}/{name}/simple/{name}/",
        f"/files/{sha[:2]}/{sha}/{dist}-1.0.0-py3-none-any.whl",
        f"/api/v1/projects/{owner}/{name}",
        "/api/v1/projects/nobody/nothing",  # an error
        "/api/openapi.json",
        "/api/docs",
        "/healthz",
    ]


def test_every_response_carries_the_security_headers(hub: Hub) -> None:
    for path in _paths(hub):
        r = httpx.get(hub.url + path, headers={"Accept": "text/html"})
        assert r.headers.get("x-content-type-options") == "nosniff", path
        assert r.headers.get("x-frame-options") == "DENY", path
        assert r.headers.get("referrer-policy") == "no-referrer", path
        csp = r.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in csp, path
        if r.headers.get("content-type", "").startswith("text/html"):
            assert "default-src 'none'" in csp, path


def test_index_html_allows_no_script_at_all(hub: Hub) -> None:
    r = httpx.get(f"{hub.url}/simple/", headers={"Accept": "text/html"})
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp


def test_api_docs_load_only_from_the_hub(hub: Hub) -> None:
    r = httpx.get(f"{hub.url}/api/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    refs = re.findall(r'(?:src|href)="([^"]+)"', r.text)
    assert len(refs) >= 3, refs
    for ref in refs:
        assert ref.startswith("/"), f"the docs page loads {ref} from elsewhere"
        asset = httpx.get(hub.url + ref)
        assert asset.status_code == 200 and len(asset.content) > 100, ref
    assert "<script>" not in r.text  # inline scripts would need 'unsafe-inline'
    spec = httpx.get(f"{hub.url}/api/openapi.json")
    assert spec.status_code == 200 and spec.json()["paths"]


@pytest.mark.parametrize("asset", ["swagger-ui-bundle.js", "swagger-ui.css"])
def test_docs_assets_are_served_with_their_types(hub: Hub, asset: str) -> None:
    r = httpx.get(f"{hub.url}/api/docs/assets/{asset}")
    assert r.status_code == 200
    assert ("javascript" if asset.endswith(".js") else "text/css") in r.headers["content-type"]
