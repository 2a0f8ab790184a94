"""Hostile uploads and callers (issue 13): names (point 4), sealed versions and burned
filenames (5), privacy (8), abandoned partial uploads and non-finite metrics (9)."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

import httpx
import pytest

from hub_server.storage import blob_key

from .conftest import Hub
from .wheelfactory import make_sdist

JSON_V1 = "application/vnd.pypi.simple.v1+json"


# ---------------------------------------------------------------- 4. names


@pytest.mark.parametrize(
    "bad",
    ["vf-m\u0430th", "vf<b>x", "vf?x", "vf#x", "vf%41x", "\u0430bc"],
    ids=["cyrillic-a", "markup", "question", "hash", "percent", "cyrillic-start"],
)
@pytest.mark.parametrize("kind", ["wheel", "sdist", "metadata-only"])
def test_non_pep508_names_are_refused_naming_the_rule(hub: Hub, bad: str, kind: str) -> None:
    _, token = hub.new_user()
    tag = uuid.uuid4().hex[:6]
    if kind == "wheel":
        path = hub.wheel(f"{bad}{tag}")
    elif kind == "sdist":
        path = make_sdist(hub.tmp / f"s-{tag}", f"{bad}{tag}", "1.0.0")
    else:  # an ASCII filename, the look-alike only inside METADATA
        path = hub.wheel(f"ok{tag}", metadata_name=f"{bad}{tag}")
    r = hub.upload(path, token)
    assert r.status_code == 400, r.text
    assert "PEP 508" in r.json()["message"]


def test_index_links_percent_encode_filenames(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("local-ver")
    assert hub.upload(hub.wheel(name, "1.0.0+abc.1"), token).status_code == 200
    html = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": "text/html"}).text
    dist = name.replace("-", "_")
    assert f"{dist}-1.0.0%2Babc.1-py3-none-any.whl#sha256=" in html
    url = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON_V1}).json()["files"][0][
        "url"
    ]
    assert "%2B" in url and "+" not in url
    assert httpx.get(httpx.URL(hub.url).join(url)).status_code == 200


# ---------------------------------------------------------------- 5. sealed versions


def _respelled(src: Path, filename: str) -> Path:
    dest = src.parent / "respelled" / filename
    dest.parent.mkdir(exist_ok=True)
    shutil.copy(src, dest)
    return dest


@pytest.mark.parametrize(
    "other", ["py311-none-any", "1-py3-none-any", "py3-none-manylinux1_x86_64"]
)
def test_a_version_with_a_wheel_is_sealed(hub: Hub, other: str) -> None:
    owner, token = hub.new_user()
    name = hub.unique("sealed")
    dist = name.replace("-", "_")
    assert hub.upload(hub.wheel(name, "0.1.0"), token).status_code == 200
    evil = _respelled(
        hub.wheel(name, "0.1.0", module_body="EVIL = 1\n"), f"{dist}-0.1.0-{other}.whl"
    )
    r = hub.upload(evil, token)
    assert r.status_code == 409, r.text
    assert "bump the version" in r.json()["message"]
    files = hub.api("GET", f"/projects/{owner}/{name}/versions/0.1.0").json()["files"]
    assert [f["filename"] for f in files] == [f"{dist}-0.1.0-py3-none-any.whl"]
    # an sdist may still join (twine upload dist/*, uv publish)
    sdist = make_sdist(hub.tmp / f"sd-{name}", name, "0.1.0")
    assert hub.upload(sdist, token).status_code == 200


def test_a_wheel_may_join_a_version_that_has_only_an_sdist(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("sdist-first")
    assert hub.upload(make_sdist(hub.tmp / f"sd-{name}", name, "0.1.0"), token).status_code == 200
    assert hub.upload(hub.wheel(name, "0.1.0"), token).status_code == 200


@pytest.mark.parametrize(
    "spelling",
    ["{Dist}-0.1.0-py3-none-any.whl", "{dist}-0.1-py3-none-any.whl"],
    ids=["case", "zeros"],
)
def test_respelled_filename_cannot_revive_a_deleted_file(hub: Hub, spelling: str) -> None:
    owner, token = hub.new_user()
    name = hub.unique("burnt")
    dist = name.replace("-", "_")
    assert hub.upload(hub.wheel(name, "0.1.0"), token).status_code == 200
    path = f"/projects/{owner}/{name}/versions/0.1.0"
    assert hub.api("DELETE", path, hub.admin_token).status_code == 200
    filename = spelling.format(dist=dist, Dist=dist.upper())
    version = filename.split("-")[1]
    again = _respelled(hub.wheel(name, version, module_body="NEW = 1\n"), filename)
    r = hub.upload(again, token)
    assert r.status_code == 409, r.text
    assert "never reused" in r.json()["message"]


# ---------------------------------------------------------------- 8. privacy


def _private_and_missing(hub: Hub) -> tuple[str, str, str, dict[str, str]]:
    owner, token = hub.new_user("secret")
    private = hub.unique("hidden")
    r = hub.upload(hub.wheel(private), token, private="1")
    assert r.status_code == 200, r.text
    missing = private[:-8] + uuid.uuid4().hex[:8]
    sha = r.json()["sha256"]
    filename = f"{private.replace('-', '_')}-1.0.0-py3-none-any.whl"
    return owner, private, missing, {"sha": sha, "filename": filename}


ROUTES = [
    "/simple/{name}/",
    "/{owner}/simple/{name}/",
    "/{owner}/{name}/simple/",
    "/{owner}/{name}/simple/{name}/",
    "/api/v1/projects/{owner}/{name}",
    "/api/v1/projects/{owner}/{name}/versions/1.0.0",
    "/api/v1/projects/{owner}/{name}/versions/1.0.0/evals",
    "/files/{sha2}/{sha}/{filename}",
]


@pytest.mark.parametrize("who", ["anonymous", "other-user"])
@pytest.mark.parametrize("route", ROUTES)
def test_private_project_is_indistinguishable_from_a_missing_one(
    hub: Hub, route: str, who: str
) -> None:
    owner, private, missing, f = _private_and_missing(hub)
    headers = {}
    if who == "other-user":
        headers["Authorization"] = f"Bearer {hub.new_user('nosy')[1]}"
    answers = []
    for name in (private, missing):
        sha = f["sha"] if name == private else "0" * 64
        filename = f["filename"].replace(private.replace("-", "_"), name.replace("-", "_"))
        url = route.format(owner=owner, name=name, sha=sha, sha2=sha[:2], filename=filename)
        r = httpx.get(hub.url + url, headers=headers)
        body = r.text.replace(name, "NAME").replace(name.replace("-", "_"), "NAME")
        answers.append((r.status_code, body.replace(sha, "SHA"), r.headers.get("www-authenticate")))
    assert answers[0] == answers[1]
    assert answers[0][0] in (401, 404)


def test_search_and_upload_conflicts_hide_private_projects(hub: Hub) -> None:
    owner, private, _, _ = _private_and_missing(hub)
    _, other = hub.new_user("squatter")
    assert hub.api("GET", "/projects", other, params={"q": private}).json()["total"] == 0
    r = hub.upload(hub.wheel(private, "2.0.0"), other)
    assert r.status_code == 403
    assert owner not in r.json()["message"]


def test_metrics_count_public_projects_only(hub: Hub) -> None:
    def environments() -> int:
        text = httpx.get(f"{hub.url}/metrics").text
        line = next(
            ln for ln in text.splitlines() if "environments" in ln and not ln.startswith("#")
        )
        return int(float(line.split()[-1]))

    before = environments()
    _private_and_missing(hub)
    assert environments() == before
    _, token = hub.new_user()
    assert hub.upload(hub.wheel(hub.unique("visible")), token).status_code == 200
    assert environments() == before + 1


# ---------------------------------------------------------------- 9. storage and data


def _leave_partial(hub: Hub) -> str:
    """What an upload killed while its blob was being stored leaves behind."""
    storage = hub.service.storage
    if hasattr(storage, "root"):
        d = storage.root / "sha256" / "ab"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f".upload-{uuid.uuid4().hex}"
        p.write_bytes(b"x" * 1000)
        old = time.time() - 7200
        os.utime(p, (old, old))
        return p.name
    key = storage._key(blob_key(uuid.uuid4().hex * 2))
    up = storage.client.create_multipart_upload(Bucket=storage.bucket, Key=key)
    storage.client.upload_part(
        Bucket=storage.bucket, Key=key, UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 1000
    )
    return str(up["UploadId"])


def test_gc_keeps_a_partial_upload_within_the_grace_period(hub: Hub, tmp_path: Path) -> None:
    from hub_server.storage import LocalStorage

    storage = LocalStorage(tmp_path)  # S3 dates its own uploads (moto: always 2010)
    (tmp_path / "sha256" / "ab").mkdir(parents=True)
    fresh = tmp_path / "sha256" / "ab" / ".upload-fresh"
    fresh.write_bytes(b"x")
    assert [h for h, _ in storage.partials()] == ["sha256/ab/.upload-fresh"]
    hub.service.storage, real = storage, hub.service.storage
    try:
        assert hub.service.collect_garbage(grace_seconds=3600) == []
        assert fresh.exists()
        assert hub.service.collect_garbage(grace_seconds=0) == ["partial:sha256/ab/.upload-fresh"]
    finally:
        hub.service.storage = real
    assert not fresh.exists()


def _partials(hub: Hub) -> list[str]:
    return [h for h, _ in hub.service.storage.partials()]


def test_gc_removes_abandoned_partial_uploads(hub: Hub) -> None:
    marker = _leave_partial(hub)
    assert any(marker in h for h in _partials(hub))
    # back-dated locally; moto dates every multipart upload in 2010: both past an hour's grace
    removed = hub.service.collect_garbage(grace_seconds=3600)
    assert any(marker in h and h.startswith("partial:") for h in removed)
    assert not any(marker in h for h in _partials(hub))


@pytest.mark.parametrize(
    "payload",
    ['{"reward": NaN}', '{"reward": Infinity}', '{"reward": -Infinity}'],
    ids=["nan", "inf", "-inf"],
)
@pytest.mark.parametrize("where", ["metrics", "details"])
def test_non_finite_eval_metrics_are_refused(hub: Hub, payload: str, where: str) -> None:
    owner, token = hub.new_user()
    name = hub.unique("evals")
    sha = hub.upload(hub.wheel(name), token).json()["sha256"]
    other = "details" if where == "metrics" else "metrics"
    body = (
        f'{{"wheel_sha256": "{sha}", "model": "m", "num_examples": 1, '
        f'"{where}": {payload}, "{other}": {{}}}}'
    )
    r = httpx.post(
        f"{hub.url}/api/v1/projects/{owner}/{name}/versions/1.0.0/evals",
        content=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 400, r.text
    assert "finite" in r.json()["message"]
    listed = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0/evals", token)
    assert listed.status_code == 200 and listed.json() == []
