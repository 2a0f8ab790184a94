"""The smaller defences of issue 22 (point 6), on both backends: failed authentication is
limited per client (429 with ``Retry-After``), search takes ``%`` and ``_`` literally, the
hub's files and directories are private whatever the umask, and error pages are plain HTML."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from hub_server.services.throttle import AuthLimiter
from verifiers.testing.runs import write_run

from .conftest import BACKENDS, Hub, make_settings
from .live import live_server

HTML = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


@contextmanager
def _own_hub(
    kind: str, request: pytest.FixtureRequest, data_dir: Path, **changes: object
) -> Iterator[tuple[str, object]]:
    """A hub of its own (so its limits and files are this test's alone)."""
    from hub_server.app import create_app

    gen = make_settings(kind, request, data_dir)
    settings = next(gen).with_(**changes)
    app = create_app(settings)
    try:
        with live_server(app) as url:
            yield url, app
    finally:
        app.state.engine.dispose()
        gen.close()


# ---------------------------------------------------------------- failed-authentication limit


@pytest.mark.parametrize("kind", BACKENDS)
def test_failed_authentication_is_limited_per_client(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with _own_hub(kind, request, tmp_path / "data", auth_failure_limit=3) as (url, app):
        _, token = app.state.service.create_user(f"u-{uuid.uuid4().hex[:6]}")  # type: ignore[attr-defined]
        bearer = {"Authorization": f"Bearer {token}"}
        for i in range(3):
            guess = {"Authorization": f"Bearer vfh_guess{i}"}
            assert httpx.get(f"{url}/api/v1/whoami", headers=guess).status_code == 401
        # the limit is reached: every guess answers 429 with Retry-After ...
        refused = [
            httpx.get(f"{url}/api/v1/whoami", headers={"Authorization": "Bearer vfh_guess"}),
            httpx.get(f"{url}/simple/", auth=("__token__", "vfh_guess")),
            httpx.get(f"{url}/", headers={**HTML, "Authorization": "Bearer vfh_guess"}),
        ]
        for r in refused:
            assert r.status_code == 429, (r.request.url, r.status_code)
            assert 0 < int(r.headers["retry-after"]) <= 300
        assert "too many failed sign-ins" in refused[0].json()["message"]
        # ... but a valid token is never refused: flooding an address locks nobody out
        assert httpx.get(f"{url}/api/v1/whoami", headers=bearer).status_code == 200
        assert httpx.get(f"{url}/", headers={**HTML, **bearer}).status_code == 200
        with httpx.Client(base_url=url, headers=HTML) as browser:
            form = browser.get("/-/signin").text
            csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            r = browser.post("/-/signin", data={"token": "vfh_guess", "csrf": csrf})
            assert r.status_code == 429 and "retry-after" in r.headers
            assert "vf_session" not in browser.cookies
            form = browser.get("/-/signin").text
            csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            r = browser.post("/-/signin", data={"token": token, "csrf": csrf})
            assert r.status_code in (200, 303) and "vf_session" in browser.cookies, r.text[:500]
        # anonymous reading is not authentication and goes on
        assert httpx.get(f"{url}/simple/").status_code == 200
        # another client (another loopback address) is not held to this one's failures
        other = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(transport=other) as elsewhere:
            guess = {"Authorization": "Bearer vfh_guess"}
            assert elsewhere.get(f"{url}/api/v1/whoami", headers=guess).status_code == 401


@pytest.mark.parametrize("trusted", [False, True])
def test_forwarded_headers_count_only_from_the_proxies_the_operator_names(
    trusted: bool, tmp_path: Path
) -> None:
    """`vf hub serve` believes X-Forwarded-For only from `--forwarded-allow-ips` (none by
    default): a guesser rotating the header from one address is still one client; behind a
    named proxy, each forwarded client counts alone."""
    from hub_server.settings import Settings

    from .procserver import hub_process

    settings = Settings(data_dir=tmp_path / "data")
    args = ["--forwarded-allow-ips", "127.0.0.1"] if trusted else []
    from hub_server.services import open_service

    service = open_service(settings)  # create the hub (the server process does not migrate)
    _, token = service.create_user(f"u-{uuid.uuid4().hex[:6]}")
    service.engine.dispose()
    with hub_process(settings, *args, VF_HUB_AUTH_FAILURE_LIMIT="3") as proc:

        def whoami(secret: str, forwarded: str) -> int:
            headers = {"Authorization": f"Bearer {secret}", "X-Forwarded-For": forwarded}
            return httpx.get(f"{proc.url}/api/v1/whoami", headers=headers).status_code

        codes = [whoami("vfh_guess", f"203.0.113.{i}") for i in range(6)]
        if trusted:  # six clients, one failure each
            assert codes == [401] * 6
            for _ in range(3):
                assert whoami("vfh_guess", "198.51.100.7") == 401
            assert whoami("vfh_guess", "198.51.100.7") == 429
            assert whoami("vfh_guess", "198.51.100.8") == 401
        else:  # rotating the header changes nothing: one client, limited after three
            assert codes == [401, 401, 401, 429, 429, 429]
        assert whoami(token, "198.51.100.7") == 200  # a valid token is never refused


def test_the_limit_forgets_failures_older_than_its_window() -> None:
    clock = [1000.0]
    limiter = AuthLimiter(2, 60, clock=lambda: clock[0])
    limiter.failed("a")
    clock[0] += 30
    limiter.failed("a")
    with pytest.raises(Exception) as refused:
        limiter.check("a")
    assert getattr(refused.value, "retry_after", None) == 30
    limiter.check("b")  # per client
    clock[0] += 31  # the first failure left the window
    limiter.check("a")


# ---------------------------------------------------------------- search


def test_search_takes_percent_and_underscore_literally(hub: Hub) -> None:
    owner, token = hub.new_user("like")
    stem = uuid.uuid4().hex[:8]
    literal, other = hub.unique("literal"), hub.unique("other")
    summaries = {literal: f"alpha_{stem} scores 50%", other: f"alphaZ{stem} scores 50Z"}
    for name, summary in summaries.items():
        assert hub.upload(hub.wheel(name, summary=summary), token).status_code == 200

    def found(q: str) -> set[str]:
        r = httpx.get(f"{hub.url}/{owner}", params={"q": q})
        assert r.status_code == 200, r.text
        return {p["name"] for p in r.json()["items"]}

    assert found(f"alpha_{stem}") == {literal}  # "_" is an underscore, not any character
    assert found("scores 50%") == {literal}  # "%" is a percent sign, not any text
    assert found(f"a%{stem}") == set()
    assert found("%") == {literal} and found("___") == set()
    assert found(stem) == {literal, other}


# ---------------------------------------------------------------- file modes


def _push_run(url: str, token: str, name: str, sha: str, tmp: Path) -> str:
    run_id = uuid.uuid4().hex
    meta = {
        "env_distribution": name,
        "env_version": "1.0.0",
        "run_id": run_id,
        "env_wheel_sha256": sha,
    }
    run = write_run(tmp / "run", 4, meta=meta)
    head = (run / "metadata.json").read_bytes().replace(b"\n", b"")
    body = gzip.compress(head + b"\n" + (run / "results.jsonl").read_bytes(), mtime=0)
    r = httpx.put(
        f"{url}/api/v1/runs/{json.loads(head)['run_id']}",
        content=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"},
        timeout=60,
    )
    assert r.status_code < 300, r.text
    return run_id


@pytest.mark.parametrize("kind", BACKENDS)
def test_data_files_are_private_whatever_the_umask(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from .wheelfactory import make_wheel

    data = tmp_path / "data"
    old = os.umask(0)  # the most permissive umask there is
    try:
        with _own_hub(kind, request, data) as (url, app):
            owner, token = app.state.service.create_user(f"m-{uuid.uuid4().hex[:6]}")  # type: ignore[attr-defined]
            name = f"modes-{uuid.uuid4().hex[:6]}"
            wheel = make_wheel(tmp_path / "w", name, "1.0.0")
            with wheel.open("rb") as f:
                r = httpx.post(
                    f"{url}/legacy/",
                    data={":action": "file_upload", "protocol_version": "1"},
                    files={"content": (wheel.name, f, "application/octet-stream")},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=60,
                )
            assert r.status_code == 200, r.text
            sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
            run_id = _push_run(url, token, name, sha, tmp_path)
            page = httpx.get(f"{url}/{owner}/{name}/runs/{run_id}/", headers=HTML)
            assert page.status_code == 200  # unpacked into the run cache
            modes = {p: p.stat().st_mode for p in [data, *data.rglob("*")]}  # while open
    finally:
        os.umask(old)
    names = {p.name for p in modes}
    assert "run-cache" in names and "results.jsonl" in names
    if kind == "sqlite-local":
        assert {"hub.db", "blobs"} <= names
        assert any(n.endswith("-wal") for n in names)  # SQLite's own files are checked too
    loose = [
        f"{p.relative_to(data)} {stat.filemode(mode)}" for p, mode in modes.items() if mode & 0o077
    ]
    assert not loose, loose


# ---------------------------------------------------------------- error pages


def test_error_pages_are_plain_html_without_cli_backticks(hub: Hub) -> None:
    owner, _ = hub.new_user("errs")
    for path in (f"/{owner}/no-such-env", f"/{owner}/no-such-env/runs/nope/"):
        r = httpx.get(hub.url + path, headers=HTML)
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
        main = r.text.split("<main>", 1)[1]
        assert "`" not in main, main
        assert "<h1>Not found</h1>" in main
