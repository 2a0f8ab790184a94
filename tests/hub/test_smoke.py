from __future__ import annotations

import httpx

from .conftest import Hub


def test_upload_and_index(hub: Hub) -> None:
    user, token = hub.new_user()
    name = hub.unique("smoke-env")
    r = hub.upload(hub.wheel(name), token)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["created"] is True and body["owner"] == user
    page = httpx.get(
        f"{hub.url}/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    assert page.status_code == 200, page.text
    files = page.json()["files"]
    assert files[0]["hashes"]["sha256"] == body["sha256"]
    assert page.headers["vary"] == "Accept"
