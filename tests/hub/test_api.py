"""The JSON API beyond uploads: listing and search, eval results, health, metrics, errors."""

from __future__ import annotations

from pathlib import Path

import httpx

from .conftest import Hub


def test_list_search_by_query_owner_tag_and_paging(hub: Hub) -> None:
    owner, token = hub.new_user()
    word = hub.unique("zebra")
    names = [f"{word}-{i}" for i in range(3)]
    for i, n in enumerate(names):
        kw = "puzzle, games" if i < 2 else "math"
        assert hub.upload(hub.wheel(n, keywords=kw), token).status_code == 200
    hub.upload(hub.wheel(hub.unique("hidden"), keywords="puzzle"), token, private="1")

    res = hub.api("GET", "/projects", params={"owner": owner}).json()
    assert res["total"] == 3  # the private one is not listed anonymously
    assert hub.api("GET", "/projects", token, params={"owner": owner}).json()["total"] == 4
    res = hub.api("GET", "/projects", params={"q": word}).json()
    assert sorted(p["name"] for p in res["items"]) == names
    res = hub.api("GET", "/projects", params={"owner": owner, "tag": "puzzle"}).json()
    assert sorted(p["name"] for p in res["items"]) == names[:2]
    assert res["items"][0]["tags"] == ["games", "puzzle"]
    page1 = hub.api("GET", "/projects", params={"q": word, "per_page": 2}).json()
    page2 = hub.api("GET", "/projects", params={"q": word, "per_page": 2, "page": 2}).json()
    assert page1["total"] == 3 and len(page1["items"]) == 2 and len(page2["items"]) == 1
    assert hub.api("GET", "/projects", params={"per_page": 1000}).status_code == 400


def test_project_and_version_views(hub: Hub) -> None:
    owner, token = hub.new_user()
    name = hub.unique("view-env")
    for v in ("1.0", "1.10.0", "1.9.0"):
        hub.upload(hub.wheel(name, v), token)
    p = hub.api("GET", f"/projects/{owner}/{name}").json()
    assert p["latest_version"] == "1.10.0"
    assert [r["version"] for r in p["releases"]] == ["1.10.0", "1.9.0", "1.0"]
    assert p["releases"][0]["entry_points"] == {name: f"{name.replace('-', '_')}:load_environment"}
    r = hub.api("GET", f"/projects/{owner}/{name}/versions/1.9.0").json()
    assert r["files"][0]["url"].startswith("/files/")
    assert hub.api("GET", f"/projects/{owner}/{name}/versions/3.0").status_code == 404
    hub.api("POST", f"/projects/{owner}/{name}/versions/1.10.0/yank", token, json={})
    assert hub.api("GET", f"/projects/{owner}/{name}").json()["latest_version"] == "1.9.0"


def test_eval_results_pinned_to_release_and_wheel(hub: Hub) -> None:
    owner, token = hub.new_user()
    name = hub.unique("eval-env")
    sha = hub.upload(hub.wheel(name), token).json()["sha256"]
    body = {
        "wheel_sha256": sha,
        "model": "oracle",
        "num_examples": 5,
        "metrics": {"avg_reward": 1.0},
    }
    r = hub.api("POST", f"/projects/{owner}/{name}/versions/1.0.0/evals", token, json=body)
    assert r.status_code == 201, r.text
    assert r.json()["submitted_by"] == owner
    bad = hub.api(
        "POST",
        f"/projects/{owner}/{name}/versions/1.0.0/evals",
        token,
        json={**body, "wheel_sha256": "a" * 64},
    )
    assert bad.status_code == 400 and "not a file of" in bad.json()["message"]
    assert (
        hub.api(
            "POST", f"/projects/{owner}/{name}/versions/1.0.0/evals", None, json=body
        ).status_code
        == 401
    )
    listed = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0/evals").json()
    assert [e["metrics"] for e in listed] == [{"avg_reward": 1.0}]


def test_health_metrics_and_error_bodies(hub: Hub) -> None:
    assert httpx.get(f"{hub.url}/healthz").json() == {"status": "ok"}
    httpx.get(f"{hub.url}/simple/")
    text = httpx.get(f"{hub.url}/metrics").text
    assert 'vf_hub_http_requests_total{method="GET",route="/simple/",status="200"}' in text
    assert "vf_hub_environments " in text
    r = hub.api("POST", "/tokens", hub.admin_token, json={"scopes": "nope"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    r = httpx.get(f"{hub.url}/api/v1/nothing/here")
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    # a missing file answers like a private one: 401 without credentials, else 404
    r = httpx.get(f"{hub.url}/files/ab/abc/x.whl")
    assert r.status_code == 401
    r = httpx.get(
        f"{hub.url}/files/ab/abc/x.whl", headers={"Authorization": f"Bearer {hub.admin_token}"}
    )
    assert r.status_code == 404
    r = httpx.post(
        f"{hub.url}/legacy/",
        headers={"Authorization": f"Bearer {hub.admin_token}"},
        files={"other": ("a.txt", b"x")},
    )
    assert r.status_code == 400 and "no file" in r.json()["message"]
    r = httpx.post(
        f"{hub.url}/legacy/",
        headers={"Authorization": f"Bearer {hub.admin_token}"},
        data={"x": "1"},
    )
    assert r.status_code == 400 and "multipart/form-data" in r.json()["message"]
    r = httpx.get(f"{hub.url}/simple/", headers={"Authorization": "Digest abc"})
    assert r.status_code == 401 and "Bearer or Basic" in r.json()["message"]
    r = httpx.get(f"{hub.url}/simple/", headers={"Authorization": b"Basic \xff\xfe"})
    assert r.status_code == 401 and "malformed Basic" in r.json()["message"]


def test_openapi_documents_what_the_api_answers(hub: Hub) -> None:
    """Generated clients and schema-driven fuzzers see the real contract: errors are a 400
    ErrorBody (never FastAPI's 422), index pages are HTML or PEP 691 JSON, uploads multipart."""
    doc = httpx.get(f"{hub.url}/api/openapi.json").json()
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert "422" not in op["responses"], (method, path)
            assert op["responses"]["default"]["content"]["application/json"], (method, path)
    index_200 = doc["paths"]["/simple/{name}/"]["get"]["responses"]["200"]["content"]
    assert set(index_200) >= {"text/html", "application/vnd.pypi.simple.v1+json"}
    upload = doc["paths"]["/legacy/"]["post"]["requestBody"]["content"]
    assert upload["multipart/form-data"]["schema"]["required"] == ["content"]
    # a 405 names every method the path supports, not only those of the first route tried
    r = httpx.delete(f"{hub.url}/api/v1/tokens")
    assert r.status_code == 405
    assert r.headers["allow"] == "GET, POST"


def test_unknown_global_names_redirect_upstream_only_when_configured(tmp_path: Path) -> None:
    from hub_server.app import create_app
    from hub_server.settings import Settings

    from .live import live_server

    app = create_app(Settings(data_dir=tmp_path, upstream_index_url="https://pypi.org/simple/"))
    with live_server(app) as url:
        r = httpx.get(f"{url}/simple/requests/", follow_redirects=False)
        assert r.status_code == 302
        assert r.headers["location"] == "https://pypi.org/simple/requests/"
        # scoped views never fall through to upstream
        assert httpx.get(f"{url}/nobody/simple/requests/").status_code == 404
    app.state.engine.dispose()


def test_journal_records_every_change_with_a_serial(hub: Hub) -> None:
    owner, token = hub.new_user()
    name = hub.unique("audit-env")
    start = hub.api("GET", "/journal", hub.admin_token, params={"since": 0, "limit": 1000}).json()
    since = max((e["serial"] for e in start), default=0)
    hub.upload(hub.wheel(name), token)
    hub.api("POST", f"/projects/{owner}/{name}/versions/1.0.0/yank", token, json={"reason": "x"})
    entries = hub.api("GET", "/journal", hub.admin_token, params={"since": since}).json()
    mine = [(e["action"], e["project"], e["actor"]) for e in entries if e["project"] == name]
    assert mine == [("add_file", name, owner), ("yank", name, owner)]
    serials = [e["serial"] for e in entries]
    assert serials == sorted(serials) and serials[0] > since
    assert hub.api("GET", "/journal", token).status_code == 403


def test_head_requests_on_index_and_files(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("head-env")
    sha = hub.upload(hub.wheel(name), token).json()["sha256"]
    r = httpx.head(f"{hub.url}/simple/{name}/")
    assert r.status_code == 200 and r.headers["vary"] == "Accept" and r.content == b""
    r = httpx.head(
        f"{hub.url}/files/{sha[:2]}/{sha}/{name.replace('-', '_')}-1.0.0-py3-none-any.whl"
    )
    assert r.status_code == 200 and r.headers["etag"] == f'"{sha}"'


def test_hostile_values_are_400s_not_500s(hub: Hub) -> None:
    """NUL bytes and out-of-range numbers (which PostgreSQL refuses) are the client's error."""
    owner, token = hub.new_user()
    name = hub.unique("hostile-env")
    sha = hub.upload(hub.wheel(name), token).json()["sha256"]
    admin = hub.admin_token
    for url in (
        "/simple/%00/",
        "/%00/simple/",
        "/%00/x/simple/",
        f"/files/{sha[:2]}/{sha}%00/x.whl",
        "/api/v1/projects?q=%00",
        "/api/v1/projects?owner=%00",
        "/api/v1/projects?tag=a%00",
        "/api/v1/projects/%00/x",
        f"/api/v1/projects/{owner}/{name}/versions/1%00",
        "/api/v1/projects?page=99999999999999999999",
        "/api/v1/projects?page=0",
        "/api/v1/projects?per_page=101",
        "/api/v1/journal?since=99999999999999999999",
        "/api/v1/journal?limit=0",
    ):
        r = httpx.get(hub.url + url, headers={"Authorization": f"Bearer {admin}"})
        assert r.status_code == 400, (url, r.status_code, r.text)
        assert r.json()["message"], url
    r = hub.api("DELETE", "/tokens/99999999999999999999", token)
    assert r.status_code == 400, r.text
    r = hub.api("POST", "/tokens", token, json={"name": "a\u0000b", "scopes": ["read"]})
    assert r.status_code in (201, 400), r.text  # SQLite stores NUL; PostgreSQL cannot
    evals = f"/projects/{owner}/{name}/versions/1.0.0/evals"
    base = {"wheel_sha256": sha, "model": "m", "num_examples": 1}
    for big in ({"num_examples": 2**70}, {"rollouts_per_example": 2**31}):
        r = hub.api("POST", evals, token, json={**base, **big})
        assert r.status_code == 400, (big, r.text)
    for bad in (
        {"num_examples": 2**40},
        {"rollouts_per_example": 2**40},
        {"model": "a\u0000b"},
        {"details": {"x": "a\u0000b"}},
    ):
        r = hub.api("POST", evals, token, json={**base, **bad})
        assert r.status_code in (201, 400), (bad, r.text)
    nan = b'{"wheel_sha256": "%s", "model": "m", "num_examples": 1, "metrics": {"x": NaN}}'
    r = httpx.post(
        f"{hub.url}/api/v1{evals}",
        content=nan % sha.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert r.status_code in (201, 400), r.text
    assert hub.api("GET", evals).status_code == 200


def test_database_outage_is_a_503(tmp_path: Path) -> None:
    from hub_server.app import create_app
    from hub_server.db import make_engine, make_sessionmaker
    from hub_server.settings import Settings

    from .live import live_server

    app = create_app(Settings(data_dir=tmp_path / "data"))
    down = make_engine("postgresql://nobody@127.0.0.1:1/none")
    app.state.service.sessions = make_sessionmaker(down)
    with live_server(app) as url:
        for path in ("/simple/anything/", "/api/v1/projects", "/api/v1/whoami"):
            r = httpx.get(url + path, headers={"Authorization": "Bearer vfh_x"})
            assert r.status_code == 503, (path, r.text)
            assert "database is unavailable" in r.json()["message"]
    down.dispose()
    app.state.engine.dispose()
