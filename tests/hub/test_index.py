"""The simple index as real clients see it: pip, uv, hash checks, yanking, private projects."""

from __future__ import annotations

from pathlib import Path

import httpx

from hub_server.storage import blob_key

from .conftest import Hub
from .tools import pip, pip_install, uv_pip_install, with_auth

JSON = "application/vnd.pypi.simple.v1+json"


def _installed_version(target: Path, name: str) -> str:
    mod = name.replace("-", "_")
    text = (target / mod / "__init__.py").read_text()
    return text.split("VERSION = ")[1].split("\n")[0].strip("'\"")


def test_pip_installs_from_global_index(hub: Hub, tmp_path: Path) -> None:
    _, token = hub.new_user()
    name = hub.unique("pip-env")
    assert hub.upload(hub.wheel(name, "1.0.0"), token).status_code == 200
    assert hub.upload(hub.wheel(name, "1.1.0"), token).status_code == 200
    r = pip_install(f"{hub.url}/simple/", tmp_path / "t", name)
    assert r.returncode == 0, r.stderr
    assert _installed_version(tmp_path / "t", name) == "1.1.0"


def test_uv_pip_installs_from_owner_index(hub: Hub, tmp_path: Path) -> None:
    owner, token = hub.new_user()
    name = hub.unique("uv-env")
    assert hub.upload(hub.wheel(name, "2.0.0"), token).status_code == 200
    r = uv_pip_install(f"{hub.url}/{owner}/simple/", tmp_path / "t", name)
    assert r.returncode == 0, r.stderr
    assert _installed_version(tmp_path / "t", name) == "2.0.0"


def test_altered_blob_fails_pip_hash_check(hub: Hub, tmp_path: Path) -> None:
    _, token = hub.new_user()
    name = hub.unique("tamper-env")
    sha = hub.upload(hub.wheel(name), token).json()["sha256"]
    evil = hub.wheel(name, module_body="import os  # altered\n")
    hub.tamper(blob_key(sha), evil.read_bytes())
    r = pip(
        "download",
        "--no-deps",
        "-d",
        str(tmp_path / "d"),
        "--index-url",
        f"{hub.url}/simple/",
        name,
    )
    assert r.returncode != 0
    assert "hash" in (r.stderr + r.stdout).lower()
    assert not list((tmp_path / "d").glob("*.whl")) if (tmp_path / "d").exists() else True


def test_yanked_version_skipped_unless_pinned(hub: Hub, tmp_path: Path) -> None:
    owner, token = hub.new_user()
    name = hub.unique("yank-env")
    for v in ("1.0.0", "1.1.0"):
        assert hub.upload(hub.wheel(name, v), token).status_code == 200
    r = hub.api(
        "POST",
        f"/projects/{owner}/{name}/versions/1.1.0/yank",
        token,
        json={"reason": "broken scorer"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["yanked"] is True
    page = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON}).json()
    yanked = {f["filename"]: f["yanked"] for f in page["files"]}
    assert yanked[f"{name.replace('-', '_')}-1.1.0-py3-none-any.whl"] == "broken scorer"
    html = httpx.get(f"{hub.url}/simple/{name}/").text
    assert 'data-yanked="broken scorer"' in html

    r = pip_install(f"{hub.url}/simple/", tmp_path / "a", name)
    assert r.returncode == 0, r.stderr
    assert _installed_version(tmp_path / "a", name) == "1.0.0"
    r = pip_install(f"{hub.url}/simple/", tmp_path / "b", f"{name}==1.1.0")
    assert r.returncode == 0, r.stderr
    assert _installed_version(tmp_path / "b", name) == "1.1.0"

    r = hub.api("POST", f"/projects/{owner}/{name}/versions/1.1.0/unyank", token)
    assert r.json()["yanked"] is False
    page = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON}).json()
    assert all(f["yanked"] is False for f in page["files"])


def test_private_project_visibility_and_install_with_read_token(hub: Hub, tmp_path: Path) -> None:
    owner, token = hub.new_user()
    name = hub.unique("secret-env")
    r = hub.upload(hub.wheel(name), token, private="true")
    assert r.status_code == 200, r.text
    sha = r.json()["sha256"]

    # global index: invisible, even with credentials
    assert httpx.get(f"{hub.url}/simple/{name}/").status_code == 404
    assert name not in httpx.get(f"{hub.url}/simple/").text
    # scoped views: 401 + WWW-Authenticate so pip/uv retry with credentials
    for path in (
        f"/{owner}/simple/{name}/",
        f"/{owner}/{name}/simple/",
        f"/{owner}/{name}/simple/{name}/",
    ):
        resp = httpx.get(hub.url + path)
        assert resp.status_code == 401, path
        assert resp.headers["www-authenticate"].startswith("Basic")
    assert name not in httpx.get(f"{hub.url}/{owner}/simple/").text
    wheel_url = f"{hub.url}/files/{sha[:2]}/{sha}/{name.replace('-', '_')}-1.0.0-py3-none-any.whl"
    assert httpx.get(wheel_url).status_code == 401
    # another user sees nothing
    _, stranger = hub.new_user("stranger")
    assert (
        httpx.get(
            hub.url + f"/{owner}/simple/{name}/", headers={"Authorization": f"Bearer {stranger}"}
        ).status_code
        == 404
    )
    assert hub.api("GET", f"/projects/{owner}/{name}", stranger).status_code == 404

    # a read-only token of the owner installs it with stock pip
    read = hub.api("POST", "/tokens", token, json={"name": "ci", "scopes": ["read"]}).json()[
        "token"
    ]
    r = pip_install(f"{hub.url}/{owner}/{name}/simple/", tmp_path / "t", name, token=read)
    assert r.returncode == 0, r.stderr
    assert _installed_version(tmp_path / "t", name) == "1.0.0"
    # what it was shown must stay out of shared caches
    auth = {"Authorization": f"Bearer {read}"}
    for path in (f"/{owner}/simple/{name}/", f"/{owner}/{name}/simple/", f"/{owner}/simple/"):
        page = httpx.get(hub.url + path, headers=auth)
        assert page.status_code == 200, path
        assert page.headers["cache-control"].startswith("private"), path
    assert not httpx.get(f"{hub.url}/simple/").headers["cache-control"].startswith("private")
    # so does uv
    r = uv_pip_install(with_auth(f"{hub.url}/{owner}/{name}/simple/", read), tmp_path / "uv", name)
    assert r.returncode == 0, r.stderr
    assert _installed_version(tmp_path / "uv", name) == "1.0.0"
    # anonymous pip cannot
    r = pip_install(f"{hub.url}/{owner}/{name}/simple/", tmp_path / "anon", name)
    assert r.returncode != 0


def test_project_scoped_index_never_serves_other_names(hub: Hub) -> None:
    owner, token = hub.new_user()
    name, other = hub.unique("scoped-env"), hub.unique("other-env")
    hub.upload(hub.wheel(name), token)
    hub.upload(hub.wheel(other), token)
    assert httpx.get(f"{hub.url}/{owner}/{name}/simple/{name}/").status_code == 200
    resp = httpx.get(f"{hub.url}/{owner}/{name}/simple/{other}/")
    assert resp.status_code == 404
    assert "serves only" in resp.json()["message"]
    root = httpx.get(f"{hub.url}/{owner}/{name}/simple/", headers={"Accept": JSON}).json()
    assert [p["name"] for p in root["projects"]] == [name]


def test_index_metadata_fields_and_pep658_file(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("meta-env")
    up = hub.upload(hub.wheel(name), token).json()
    page = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON})
    assert page.headers["content-type"] == JSON
    data = page.json()
    assert data["meta"]["api-version"] == "1.1"
    assert data["versions"] == ["1.0.0"]
    (f,) = data["files"]
    assert f["requires-python"] == ">=3.8"
    assert f["size"] > 0 and f["upload-time"].endswith("Z")
    assert f["url"].endswith(f"#sha256={up['sha256']}") or f["hashes"]["sha256"] == up["sha256"]
    meta = httpx.get(hub.url + f["url"] + ".metadata")
    assert meta.status_code == 200
    import hashlib

    assert hashlib.sha256(meta.content).hexdigest() == f["core-metadata"]["sha256"]
    assert f"Name: {name}" in meta.text
    html = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": "text/html"})
    assert html.headers["content-type"].startswith("text/html")
    assert f"#sha256={up['sha256']}" in html.text
    assert 'data-requires-python="&gt;=3.8"' in html.text
    assert f'data-core-metadata="sha256={f["core-metadata"]["sha256"]}"' in html.text
    wheel = httpx.get(hub.url + f["url"])
    assert hashlib.sha256(wheel.content).hexdigest() == up["sha256"]
    assert wheel.headers["etag"] == f'"{up["sha256"]}"'
    assert "immutable" in wheel.headers["cache-control"]


def test_file_head_lengths_and_conditional_gets(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("head-env")
    hub.upload(hub.wheel(name), token)
    (f,) = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON}).json()["files"]
    url = hub.url + f["url"]
    head = httpx.head(url)
    assert head.status_code == 200
    assert int(head.headers["content-length"]) == f["size"]
    meta = httpx.get(url + ".metadata")
    meta_head = httpx.head(url + ".metadata")
    assert int(meta_head.headers["content-length"]) == len(meta.content) > 0
    for inm in (f'W/"{f["hashes"]["sha256"]}"', f'"nope", "{f["hashes"]["sha256"]}"', "*"):
        assert httpx.get(url, headers={"If-None-Match": inm}).status_code == 304, inm
    page = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON})
    latest = "application/vnd.pypi.simple.latest+json"
    again = httpx.get(
        f"{hub.url}/simple/{name}/",
        headers={"Accept": latest, "If-None-Match": "W/" + page.headers["etag"]},
    )
    assert again.status_code == 304
    assert (
        httpx.get(f"{hub.url}/simple/", headers={"Accept": latest}).headers["content-type"] == JSON
    )


def test_negotiation_redirects_and_etags(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("Neg-Env")
    hub.upload(hub.wheel(name.lower()), token)
    odd = name.replace("-", "_").upper()
    r = httpx.get(f"{hub.url}/simple/{odd}/", follow_redirects=False)
    assert r.status_code == 301
    assert r.headers["location"] == f"/simple/{name.lower()}/"
    pip_accept = f"{JSON}, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"
    r = httpx.get(f"{hub.url}/simple/{name.lower()}/", headers={"Accept": pip_accept})
    assert r.headers["content-type"] == JSON
    r2 = httpx.get(
        f"{hub.url}/simple/{name.lower()}/",
        headers={"Accept": pip_accept, "If-None-Match": r.headers["etag"]},
    )
    assert r2.status_code == 304
    assert httpx.get(f"{hub.url}/simple/", headers={"Accept": "image/png"}).status_code == 406
    assert (
        httpx.get(f"{hub.url}/simple/{name.lower()}/", params={"format": JSON}).headers[
            "content-type"
        ]
        == JSON
    )
    assert httpx.get(f"{hub.url}/simple/does-not-exist-{hub.unique('x')}/").status_code == 404
