"""Uploads: twine compatibility, write-once rules, refused archives, concurrent pushes."""

from __future__ import annotations

import hashlib
import io
import os
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from hub_server import models as m
from hub_server.storage import blob_key

from .conftest import Hub
from .tools import pip_install, twine_upload, uv_publish
from .wheelfactory import make_sdist, make_wheel

JSON = "application/vnd.pypi.simple.v1+json"


def test_twine_upload_reupload_and_conflict(hub: Hub, tmp_path: Path) -> None:
    _, token = hub.new_user()
    name = hub.unique("twine-env")
    wheel = hub.wheel(name)
    r = twine_upload(f"{hub.url}/legacy/", token, wheel)
    assert r.returncode == 0, r.stdout + r.stderr
    assert httpx.get(f"{hub.url}/simple/{name}/").status_code == 200
    # the identical file again: a no-op success
    r = twine_upload(f"{hub.url}/legacy/", token, wheel)
    assert r.returncode == 0, r.stdout + r.stderr
    # other bytes, same version: refused, and the message says what to do
    other = hub.wheel(name, module_body="CHANGED = True\n")
    assert other.name == wheel.name and other.read_bytes() != wheel.read_bytes()
    r = twine_upload(f"{hub.url}/legacy/", token, other, verbose=True)
    assert r.returncode != 0
    assert "409" in r.stdout + r.stderr
    assert "bump the version" in r.stdout + r.stderr
    resp = hub.upload(other, token)
    assert resp.status_code == 409
    assert resp.json()["error"] == "conflict"
    assert "bump the version" in resp.json()["message"]
    # refused before anything was stored
    assert not hub.service.storage.exists(blob_key(hashlib.sha256(other.read_bytes()).hexdigest()))


def test_identical_reupload_reports_not_created(hub: Hub) -> None:
    _, token = hub.new_user()
    wheel = hub.wheel(hub.unique("noop-env"))
    first = hub.upload(wheel, token)
    second = hub.upload(wheel, token)
    assert first.status_code == second.status_code == 200
    assert first.json()["created"] is True and second.json()["created"] is False


def test_same_version_same_tags_under_another_filename_is_refused(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("build-tag-env")
    hub.upload(hub.wheel(name), token)
    # a build tag makes another filename for the same version and tags
    src = hub.wheel(name, module_body="X = 2\n")
    dist = name.replace("-", "_")
    renamed = src.with_name(f"{dist}-1.0.0-1-py3-none-any.whl")
    src.rename(renamed)
    resp = hub.upload(renamed, token)
    assert resp.status_code == 409
    assert "bump the version" in resp.json()["message"]


def _zip(path: Path, members: dict[str, bytes], compress: int = zipfile.ZIP_DEFLATED) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as zf:
        for n, d in members.items():
            zf.writestr(n, d)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return path


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("zip_bomb", "zip bomb"),
        ("dotdot", "'..'"),
        ("absolute", "absolute path"),
        ("name_mismatch", "METADATA Name"),
        ("version_mismatch", "METADATA Version"),
        ("missing_metadata", "METADATA"),
        ("nul_metadata", "NUL byte"),
        ("not_a_zip", "not a valid zip"),
        ("bad_sdist", "not a valid gzip"),
        ("zip_sdist", "only wheels (.whl) and .tar.gz"),
    ],
)
def test_bad_uploads_refused_with_clear_message(hub: Hub, case: str, needle: str) -> None:
    _, token = hub.new_user()
    name = hub.unique("bad-env")
    dist = name.replace("-", "_")
    fname = f"{dist}-1.0.0-py3-none-any.whl"
    if case == "zip_bomb":
        path = hub.wheel(name, extra_members={f"{dist}/data.bin": b"\0" * (20 * 1024 * 1024)})
    elif case == "dotdot":
        path = hub.wheel(name, extra_members={"../../etc/evil.py": b"x"})
    elif case == "absolute":
        path = hub.wheel(name, extra_members={"/tmp/evil.py": b"x"})
    elif case == "name_mismatch":
        path = hub.wheel(name, metadata_name="someone-else")
    elif case == "version_mismatch":
        path = hub.wheel(name, metadata_version="9.9.9")
    elif case == "missing_metadata":
        path = hub.wheel(name, omit_metadata=True)
    elif case == "nul_metadata":  # PostgreSQL cannot store it: refused before anything is stored
        path = hub.wheel(name, summary="a\x00b")
    elif case == "not_a_zip":
        path = hub.tmp / "junk" / fname
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"this is not a zip archive")
    else:
        ext = "tar.gz" if case == "bad_sdist" else "zip"
        path = hub.tmp / "sd" / f"{dist}-1.0.0.{ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x1f\x8b not really")
    resp = hub.upload(path, token)
    assert resp.status_code in (400, 413), resp.text
    assert needle in resp.json()["message"], resp.json()
    # nothing was published
    assert httpx.get(f"{hub.url}/simple/{name}/").status_code == 404


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("gzip_bomb", "gzip bomb"),
        ("dotdot", "'..'"),
        ("absolute", "absolute path"),
        ("outside_top", "outside the"),
        ("symlink_out", "'..'"),
        ("fifo", "special files"),
        ("name_mismatch", "PKG-INFO Name"),
        ("missing_pkg_info", "PKG-INFO"),
    ],
)
def test_bad_sdists_refused_with_clear_message(hub: Hub, case: str, needle: str) -> None:
    _, token = hub.new_user()
    name = hub.unique("bad-sdist")
    top = f"{name.replace('-', '_')}-1.0.0"
    kw: dict[str, Any] = {
        "gzip_bomb": {"extra_members": {f"{top}/data.bin": b"\0" * (20 * 1024 * 1024)}},
        "dotdot": {"extra_members": {f"{top}/../../evil.py": b"x"}},
        "absolute": {"extra_members": {"/tmp/evil.py": b"x"}},
        "outside_top": {"extra_members": {"elsewhere/evil.py": b"x"}},
        "symlink_out": {"symlinks": {f"{top}/link": "../../../etc/passwd"}},
        "fifo": {"fifo": f"{top}/pipe"},
        "name_mismatch": {"metadata_name": "someone-else"},
        "missing_pkg_info": {"omit_pkg_info": True},
    }[case]
    resp = hub.upload(make_sdist(hub.tmp / hub.unique("sd"), name, "1.0.0", **kw), token)
    assert resp.status_code in (400, 413), resp.text
    assert needle in resp.json()["message"], resp.json()
    assert httpx.get(f"{hub.url}/simple/{name}/").status_code == 404


def test_sdist_beside_wheel_twine_and_uv_publish(hub: Hub, tmp_path: Path) -> None:
    """`twine upload dist/*` and `uv publish` of a build's sdist + wheel both succeed; the
    index offers PEP 658 metadata for the wheel only, and pip installs the wheel."""
    _, token = hub.new_user()
    name = hub.unique("sdist-env")
    dist = tmp_path / "dist"
    sdist = make_sdist(dist, name, "1.0.0")
    wheel = make_wheel(dist, name, "1.0.0")
    r = twine_upload(f"{hub.url}/legacy/", token, sdist, wheel)  # sdist first: wheel wins
    assert r.returncode == 0, r.stdout + r.stderr
    owner = hub.api("GET", f"/projects?q={name}").json()["items"][0]["owner"]
    release = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0").json()
    assert release["entry_points"] == {name: f"{name.replace('-', '_')}:load_environment"}
    meta = {f["filename"]: f["metadata_sha256"] for f in release["files"]}
    assert meta[sdist.name] is None and meta[wheel.name]
    page = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON}).json()
    by_name = {f["filename"]: f for f in page["files"]}
    assert set(by_name) == {sdist.name, wheel.name}
    assert "core-metadata" not in by_name[sdist.name]
    assert "core-metadata" in by_name[wheel.name]
    html = httpx.get(f"{hub.url}/simple/{name}/").text
    (sdist_line,) = [line for line in html.splitlines() if sdist.name + "<" in line]
    assert "data-core-metadata" not in sdist_line
    assert httpx.get(hub.url + by_name[sdist.name]["url"] + ".metadata").status_code == 404
    got = httpx.get(hub.url + by_name[sdist.name]["url"])
    assert got.content == sdist.read_bytes()
    # uv publish of the same dist/ (both files already there): identical, so a success
    r = uv_publish(f"{hub.url}/legacy/", token, sdist, wheel)
    assert r.returncode == 0, r.stdout + r.stderr
    r = pip_install(f"{hub.url}/simple/", tmp_path / "t", name, "--no-deps")
    assert r.returncode == 0, r.stdout + r.stderr
    assert list((tmp_path / "t").glob("*.dist-info"))


def test_private_upload_to_a_public_project_is_refused(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("pub-env")
    assert hub.upload(hub.wheel(name), token).status_code == 200
    resp = hub.upload(hub.wheel(name, "2.0.0"), token, private="1")
    assert resp.status_code == 409
    assert "is public" in resp.json()["message"]
    page = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON}).json()
    assert page["versions"] == ["1.0.0"]


def test_name_taken_by_another_owner(hub: Hub) -> None:
    first, t1 = hub.new_user()
    _, t2 = hub.new_user()
    name = hub.unique("taken-env")
    assert hub.upload(hub.wheel(name), t1).status_code == 200
    resp = hub.upload(hub.wheel(name, "2.0.0"), t2)
    assert resp.status_code == 403
    assert "taken by another owner" in resp.json()["message"]
    assert first in resp.json()["message"]
    # a differently spelled but equivalent name is the same name
    resp = hub.upload(hub.wheel(name.replace("-", "_").upper(), "3.0.0"), t2)
    assert resp.status_code == 403


def test_upload_checksum_claim_must_match(hub: Hub) -> None:
    _, token = hub.new_user()
    resp = hub.upload(hub.wheel(hub.unique("sum-env")), token, sha256_digest="0" * 64)
    assert resp.status_code == 400
    assert "corrupted" in resp.json()["message"]


def test_direct_url_dependency_refused_on_public_project(hub: Hub) -> None:
    _, token = hub.new_user()
    wheel = hub.wheel(hub.unique("url-env"), requires_dist=["evil @ https://example.com/evil.whl"])
    resp = hub.upload(wheel, token)
    assert resp.status_code == 400
    assert "direct URL" in resp.json()["message"]


@pytest.mark.parametrize("pushers", [2, 6])
def test_concurrent_pushes_of_same_new_version(hub: Hub, pushers: int) -> None:
    _, token = hub.new_user()
    name = hub.unique("race-env")
    wheels = [hub.wheel(name, module_body=f"WHO = {i}\n") for i in range(pushers)]
    datas = [w.read_bytes() for w in wheels]
    barrier = threading.Barrier(pushers)
    results: dict[int, httpx.Response] = {}

    def push(i: int) -> None:
        barrier.wait()
        results[i] = httpx.post(
            f"{hub.url}/legacy/",
            data={":action": "file_upload"},
            files={"content": (wheels[i].name, datas[i])},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )

    threads = [threading.Thread(target=push, args=(i,)) for i in range(pushers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(r.status_code for r in results.values())
    assert codes == [200] + [409] * (pushers - 1), [r.text for r in results.values()]
    winner = next(i for i, r in results.items() if r.status_code == 200)
    assert all("bump the version" in r.json()["message"] for i, r in results.items() if i != winner)
    shas = [hashlib.sha256(d).hexdigest() for d in datas]
    with hub.service.session() as db:
        rows = db.execute(
            select(m.File.sha256)
            .join(m.Release)
            .join(m.Environment)
            .where(m.Environment.name == name)
        ).all()
        assert [r[0] for r in rows] == [shas[winner]]
        releases = db.scalar(
            select(func.count())
            .select_from(m.Release)
            .join(m.Environment)
            .where(m.Environment.name == name)
        )
        assert releases == 1
    # every published file has its blobs; the losers' blobs (if any were written before they
    # lost) are unreferenced and go with the next garbage collection
    storage = hub.service.storage
    with hub.service.session() as db:
        for blob, meta in db.execute(select(m.File.blob_key, m.File.metadata_key)):
            assert storage.exists(blob) and storage.exists(meta)
    hub.service.collect_garbage(grace_seconds=0)
    assert storage.exists(blob_key(shas[winner]))
    assert not any(storage.exists(blob_key(sha)) for i, sha in enumerate(shas) if i != winner)
    served = httpx.get(f"{hub.url}/files/{shas[winner][:2]}/{shas[winner]}/{wheels[0].name}")
    assert served.content == datas[winner]


def test_concurrent_uploads_of_one_new_release_seal_it_with_one_wheel(hub: Hub) -> None:
    """Different files (tags, sdist) of one new project version racing: one project, one
    release, exactly one wheel (the version is sealed by it) and the sdist."""
    _, token = hub.new_user()
    name = hub.unique("multi-env")
    base = hub.wheel(name)
    files = [base]
    for tag in ("py311-none-any", "py310-none-any", "py2.py3-none-any"):
        other = base.parent / base.name.replace("py3-none-any", tag)
        other.write_bytes(base.read_bytes())
        files.append(other)
    files.append(make_sdist(hub.tmp / hub.unique("sd"), name, "1.0.0"))
    barrier = threading.Barrier(len(files))
    codes: list[int] = []

    def push(path: Path) -> None:
        data = path.read_bytes()
        barrier.wait()
        r = httpx.post(
            f"{hub.url}/legacy/",
            files={"content": (path.name, data)},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        codes.append(r.status_code)

    threads = [threading.Thread(target=push, args=(f,)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [200, 200, 409, 409, 409]
    page = httpx.get(f"{hub.url}/simple/{name}/", headers={"Accept": JSON}).json()
    published = [f["filename"] for f in page["files"]]
    assert len(published) == 2 and files[-1].name in published  # one wheel and the sdist
    assert page["versions"] == ["1.0.0"]


def test_upload_needs_credentials(hub: Hub) -> None:
    resp = hub.upload(hub.wheel(hub.unique("anon-env")), None)
    assert resp.status_code == 401
    assert "WWW-Authenticate" in resp.headers or "www-authenticate" in resp.headers


def test_admin_delete_burns_the_filename(hub: Hub) -> None:
    owner, token = hub.new_user()
    name = hub.unique("burn-env")
    wheel = hub.wheel(name)
    sha = hub.upload(wheel, token).json()["sha256"]
    path = f"/projects/{owner}/{name}/versions/1.0.0"
    assert hub.api("DELETE", path, token).status_code == 403  # owners yank; admins delete
    r = hub.api("DELETE", path, hub.admin_token)
    assert r.status_code == 200 and r.json()["deleted"] == [wheel.name]
    assert blob_key(sha) in hub.service.collect_garbage(grace_seconds=0)
    assert not hub.service.storage.exists(blob_key(sha))
    page = httpx.get(
        f"{hub.url}/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    assert page.json()["files"] == []
    for again in (wheel, hub.wheel(name, module_body="NEW = 1\n")):
        resp = hub.upload(again, token)
        assert resp.status_code == 409
        assert "never reused" in resp.json()["message"]
    assert hub.upload(hub.wheel(name, "1.0.1"), token).status_code == 200


def test_uv_publish(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("uvpub-env")
    wheel = hub.wheel(name)
    r = uv_publish(f"{hub.url}/legacy/", token, wheel)
    assert r.returncode == 0, r.stderr
    assert httpx.get(f"{hub.url}/simple/{name}/").status_code == 200
    r = uv_publish(f"{hub.url}/legacy/", token, wheel)
    assert r.returncode == 0, r.stderr  # identical re-upload is fine


def test_size_limit_enforced_while_receiving(tmp_path: Path) -> None:
    from hub_server.app import create_app
    from hub_server.settings import Settings

    from .live import live_server
    from .wheelfactory import make_wheel

    app = create_app(Settings(data_dir=tmp_path / "data", max_upload_bytes=3000))
    _, token = app.state.service.create_user("limited")
    big = make_wheel(tmp_path, "big-env", "1.0", extra_members={"big_env/r.bin": os.urandom(8000)})
    assert big.stat().st_size > 3000
    with live_server(app) as url:

        def chunks() -> Iterator[bytes]:  # no Content-Length: only the streaming check can stop it
            boundary = b"XyZ"
            yield (
                b"--" + boundary + b'\r\nContent-Disposition: form-data; name="content"; filename="'
            )
            yield (
                big.name.encode()
                + b'"\r\n\r\n'
                + big.read_bytes()
                + b"\r\n--"
                + boundary
                + b"--\r\n"
            )

        r = httpx.post(
            f"{url}/legacy/",
            content=chunks(),
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "multipart/form-data; boundary=XyZ",
            },
        )
        assert r.status_code == 413 and "over the limit" in r.json()["message"]
        r = httpx.post(
            f"{url}/legacy/", json={"x": 1}, headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 400 and "multipart/form-data" in r.json()["message"]
        small = make_wheel(tmp_path / "s", "small-env", "1.0")
        with small.open("rb") as f:
            r = httpx.post(
                f"{url}/legacy/",
                files={"content": (small.name, f)},
                data={"md5_digest": "0" * 32},
                headers={"Authorization": f"Bearer {token}"},
            )
        assert r.status_code == 400 and "md5_digest" in r.json()["message"]

        def many_fields() -> Iterator[bytes]:  # small fields, but without end
            for i in range(100_000):
                yield (
                    f'--XyZ\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\n'.encode()
                    + b"x" * 1000
                    + b"\r\n"
                )

        def long_header() -> Iterator[bytes]:
            yield b'--XyZ\r\nContent-Disposition: form-data; name="a"; x="'
            for _ in range(1000):
                yield b"y" * 10_000

        for body, needle in ((many_fields, "exceed"), (long_header, "header size")):
            r = httpx.post(
                f"{url}/legacy/",
                content=body(),
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "multipart/form-data; boundary=XyZ",
                },
            )
            assert r.status_code == 400 and needle in r.json()["message"], r.text
    app.state.engine.dispose()


def test_equal_pep440_versions_are_one_release(hub: Hub) -> None:
    owner, token = hub.new_user()
    name = hub.unique("pep440-env")
    assert hub.upload(hub.wheel(name, "1.0"), token).status_code == 200
    resp = hub.upload(hub.wheel(name, "1.0.0", module_body="OTHER = 1\n"), token)
    assert resp.status_code == 409 and "bump the version" in resp.json()["message"]
    assert hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0").json()["version"] == "1.0"


def test_storage_failure_is_a_503_and_publishes_nothing(tmp_path: Path) -> None:
    from hub_server.app import create_app
    from hub_server.settings import Settings
    from hub_server.storage import LocalStorage

    from .live import live_server
    from .wheelfactory import make_wheel

    class FullDisk(LocalStorage):
        def put(self, key: str, data: object) -> None:
            raise OSError(28, "No space left on device")

    app = create_app(Settings(data_dir=tmp_path / "data"))
    app.state.service.storage = FullDisk(tmp_path / "data" / "blobs")
    _, token = app.state.service.create_user("diskfull")
    wheel = make_wheel(tmp_path, "full-env", "1.0")
    with live_server(app) as url:
        with wheel.open("rb") as f:
            r = httpx.post(
                f"{url}/legacy/",
                files={"content": (wheel.name, f)},
                headers={"Authorization": f"Bearer {token}"},
            )
        assert r.status_code == 503 and "nothing was published" in r.json()["message"]
        assert httpx.get(f"{url}/simple/full-env/").status_code == 404
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}

        class Down(LocalStorage):
            def open(self, key: str) -> Iterator[bytes]:
                raise ConnectionError("storage endpoint unreachable")

        app.state.service.storage = LocalStorage(tmp_path / "data" / "blobs")
        assert hub_upload(url, token, wheel).status_code == 200
        (f,) = httpx.get(f"{url}/simple/full-env/", headers={"Accept": JSON}).json()["files"]
        app.state.service.storage = Down(tmp_path / "data" / "blobs")
        for suffix in ("", ".metadata"):
            r = httpx.get(url + f["url"] + suffix)
            assert r.status_code == 503 and "blob storage failed" in r.json()["message"]
    app.state.engine.dispose()


def hub_upload(url: str, token: str, wheel: Path) -> httpx.Response:
    with wheel.open("rb") as f:
        return httpx.post(
            f"{url}/legacy/",
            files={"content": (wheel.name, f)},
            headers={"Authorization": f"Bearer {token}"},
        )
