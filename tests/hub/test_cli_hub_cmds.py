"""``vf env pull|inspect`` and several installs at once, against the hub as its own server
process (``vf hub serve``) on both backends (SQLite + local blobs, PostgreSQL + S3)."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hub_server.storage import blob_key
from verifiers.hub.archive import ArchiveError, extract

from .clitools import fresh_venv, vf, vf_in
from .conftest import Hub
from .procserver import hub_process
from .wheelfactory import make_sdist


@pytest.fixture(scope="module")
def served(hub: Hub) -> Iterator[str]:
    """The same backend as ``hub``, served by a separate ``vf hub serve`` process."""
    with hub_process(hub.settings) as proc:
        yield proc.url


@pytest.fixture
def cfg(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "VF_HUB_URL": "", "VF_HUB_TOKEN": ""}


def test_pull_bump_push_round_trips(
    hub: Hub, served: str, cfg: dict[str, str], tmp_path: Path
) -> None:
    user, token = hub.new_user()
    env = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": token}
    name = hub.unique("pulled")
    assert vf(["env", "init", name, "--path", str(tmp_path / "src")], env)[0] == 0
    code, out, err = vf(["env", "push", str(tmp_path / "src" / name)], env)
    assert code == 0, err

    dest = tmp_path / "work"
    code, out, err = vf(["env", "pull", f"{user}/{name}", str(dest)], env)
    assert code == 0, err
    assert f"pulled {user}/{name}@0.1.0 into {dest}" in out
    module = name.replace("-", "_")
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        [f"{module}.py", "pyproject.toml", "README.md"]
    )
    assert (dest / "README.md").read_text() == (tmp_path / "src" / name / "README.md").read_text()
    original = (tmp_path / "src" / name / f"{module}.py").read_text()
    assert (dest / f"{module}.py").read_text() == original
    # the pyproject.toml the wheel carries, as written (not one rebuilt from METADATA)
    assert (dest / "pyproject.toml").read_text() == (
        tmp_path / "src" / name / "pyproject.toml"
    ).read_text()

    code, _, err = vf(["env", "pull", f"{user}/{name}", str(dest)], env)
    assert code == 1 and "not an empty folder" in err  # never overwrites

    pp = dest / "pyproject.toml"
    pp.write_text(pp.read_text().replace('version = "0.1.0"', 'version = "0.2.0"'))
    code, out, err = vf(["env", "push", str(dest)], env)
    assert code == 0, err
    assert f"published {user}/{name}@0.2.0" in out
    code, out, err = vf(["env", "pull", f"{user}/{name}@0.2.0", str(tmp_path / "again")], env)
    assert code == 0, err
    assert (tmp_path / "again" / f"{module}.py").read_text() == original
    assert 'version = "0.2.0"' in (tmp_path / "again" / "pyproject.toml").read_text()


def test_pull_of_a_wheel_without_pyproject_rebuilds_one_that_builds(
    hub: Hub, served: str, cfg: dict[str, str], tmp_path: Path
) -> None:
    import tomllib

    from cli.packaging import build_wheel

    user, token = hub.new_user()
    env = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": token}
    name = hub.unique("bare")
    wheel = hub.wheel(name, "1.0.0", requires_dist=["packaging>=20"], summary="a bare one")
    assert hub.upload(wheel, token).status_code == 200
    code, _, err = vf(["env", "pull", f"{user}/{name}", str(tmp_path / "p")], env)
    assert code == 0, err
    meta = tomllib.loads((tmp_path / "p" / "pyproject.toml").read_text())
    assert meta["project"]["name"] == name and meta["project"]["version"] == "1.0.0"
    assert meta["project"]["dependencies"] == ["packaging>=20"]
    eps = meta["project"]["entry-points"]["verifiers.environments"]
    assert list(eps) == [name]
    rebuilt = build_wheel(tmp_path / "p", tmp_path / "dist")
    with zipfile.ZipFile(rebuilt) as zf, zipfile.ZipFile(wheel) as orig:
        dist = name.replace("-", "_")
        assert zf.read(f"{dist}/__init__.py") == orig.read(f"{dist}/__init__.py")


def test_pull_prefers_the_sdist_and_checks_its_hash(
    hub: Hub, served: str, cfg: dict[str, str], tmp_path: Path
) -> None:
    user, token = hub.new_user()
    env = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": token}
    name = hub.unique("withsrc")
    assert hub.upload(hub.wheel(name, "1.0.0"), token).status_code == 200
    sdist = make_sdist(tmp_path / "sd", name, "1.0.0", extra_members={})
    assert hub.upload(sdist, token).status_code == 200, hub.upload(sdist, token).text
    code, out, err = vf(["env", "pull", f"{user}/{name}@1.0.0", str(tmp_path / "a")], env)
    assert code == 0, err
    assert sdist.name in out
    dist = name.replace("-", "_")
    assert (tmp_path / "a" / "PKG-INFO").is_file()  # the sdist's top folder is stripped
    assert (tmp_path / "a" / dist / "__init__.py").read_text() == "X = 1\n"

    # the stored blob altered behind the hub's back: refused, nothing written
    rel = hub.api("GET", f"/projects/{user}/{name}/versions/1.0.0").json()
    f = next(f for f in rel["files"] if f["filename"] == sdist.name)
    hub.tamper(blob_key(f["sha256"]), b"not the sdist")
    code, _, err = vf(["env", "pull", f"{user}/{name}@1.0.0", str(tmp_path / "b")], env)
    assert code == 1 and "sha256" in err, err
    assert not (tmp_path / "b").exists()


def _tar(members: list[tarfile.TarInfo], data: bytes = b"x") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for info in members:
            tf.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buf.getvalue()


def _entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, 1 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_entry("../evil.py"), "outside"),
        (_entry("/etc/evil"), "outside"),
        (_entry("p-1/link", tarfile.SYMTYPE, "/etc/passwd"), "link pointing outside"),
        (_entry("p-1/link", tarfile.SYMTYPE, "../../x"), "link pointing outside"),
        (_entry("p-1/hard", tarfile.LNKTYPE, "../x"), "link pointing outside"),
        (_entry("p-1/dangling", tarfile.SYMTYPE, "nothing"), "links to none"),
        (_entry("p-1/fifo", tarfile.FIFOTYPE), "special file"),
    ],
)
def test_extract_refuses_hostile_sdist_members(
    tmp_path: Path, member: tarfile.TarInfo, message: str
) -> None:
    archive = tmp_path / "p-1.tar.gz"
    archive.write_bytes(_tar([_entry("p-1/a"), member]))
    (tmp_path / "out").mkdir()
    with pytest.raises(ArchiveError, match=message):
        extract(archive, archive.name, tmp_path / "out", strip_top=True)
    assert not (tmp_path / "evil.py").exists()


def test_extract_copies_links_to_other_members(tmp_path: Path) -> None:
    archive = tmp_path / "p-1.tar.gz"
    archive.write_bytes(
        _tar(
            [
                _entry("p-1/a"),
                _entry("p-1/sub/link", tarfile.SYMTYPE, "../a"),
                _entry("p-1/hard", tarfile.LNKTYPE, "p-1/a"),
            ]
        )
    )
    out = tmp_path / "out"
    out.mkdir()
    assert sorted(extract(archive, archive.name, out, strip_top=True)) == [
        "a",
        "hard",
        "sub/link",
    ]
    for name in ("a", "hard", "sub/link"):
        assert not (out / name).is_symlink() and (out / name).read_bytes() == b"x"


def test_extract_refuses_zip_links_traversal_and_oversized_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def wheel(name: str, data: bytes = b"x", mode: int | None = None) -> Path:
        path = tmp_path / "w-1-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as zf:
            info = zipfile.ZipInfo(name)
            if mode is not None:
                info.external_attr = mode << 16
            zf.writestr(info, data)
        return path

    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ArchiveError, match="outside"):
        extract(wheel("a/../../evil"), "w-1-py3-none-any.whl", out)
    with pytest.raises(ArchiveError, match="symbolic link"):
        extract(wheel("a/link", b"/etc", 0o120777), "w-1-py3-none-any.whl", out)
    import verifiers.hub.archive as archive_mod

    monkeypatch.setattr(archive_mod, "MAX_MEMBER_BYTES", 1000)
    with pytest.raises(ArchiveError, match="larger than 1000 bytes"):
        # the size is counted while reading, not taken from the header
        extract(wheel("a/big", b"0" * 5000), "w-1-py3-none-any.whl", out)
    assert list(out.iterdir()) == []  # nothing written from a refused archive


def test_inspect_lists_and_prints_files_from_the_stored_archive(
    hub: Hub, served: str, cfg: dict[str, str], tmp_path: Path
) -> None:
    user, token = hub.new_user()
    env = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": token}
    name = hub.unique("browse")
    dist = name.replace("-", "_")
    assert hub.upload(hub.wheel(name, "1.0.0"), token).status_code == 200
    code, out, err = vf(["env", "inspect", f"{user}/{name}"], env)
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.split()[-1] == f"{dist}/__init__.py" for line in lines), out
    assert lines[-1].endswith(f"files in {dist}-1.0.0-py3-none-any.whl)")
    code, out, err = vf(["env", "inspect", f"{user}/{name}@1.0.0", f"{dist}/__init__.py"], env)
    assert code == 0, err
    assert "def load_environment" in out

    # with an sdist, the sdist is browsed, its top folder left out of the paths
    sdist = make_sdist(tmp_path / "sd", name, "1.0.0")
    assert hub.upload(sdist, token).status_code == 200
    code, out, err = vf(["env", "inspect", f"{user}/{name}", "--json"], env)
    tree = json.loads(out)
    assert tree["filename"] == sdist.name
    assert sorted(f["path"] for f in tree["files"]) == [
        "PKG-INFO",
        f"{dist}/__init__.py",
        "pyproject.toml",
    ]
    code, out, err = vf(["env", "inspect", f"{user}/{name}", f"{dist}/__init__.py"], env)
    assert code == 0 and out == "X = 1\n", (out, err)
    code, _, err = vf(["env", "inspect", f"{user}/{name}", "nope.py"], env)
    assert code == 1 and "no file 'nope.py'" in err and "vf env inspect" in err
    # traversal in the path names nothing in the archive
    r = hub.api("GET", f"/projects/{user}/{name}/versions/1.0.0/tree/..%2F..%2Fetc%2Fpasswd")
    assert r.status_code == 404
    r = hub.api("GET", f"/projects/{user}/{name}/versions/1.0.0/tree/{'a' * 2000}")
    assert r.status_code == 400 and "1 to 1024 characters" in r.json()["message"]
    # a private environment's files are hidden from others like the environment itself
    other = hub.unique("secret")
    assert hub.upload(hub.wheel(other, "1.0.0"), token, private="true").status_code == 200
    code, _, err = vf(["env", "inspect", f"{user}/{other}@1.0.0"], {**env, "VF_HUB_TOKEN": ""})
    assert code == 1 and "no environment" in err
    code, out, err = vf(["env", "inspect", f"{user}/{other}@1.0.0"], env)
    assert code == 0, err


def test_install_several_at_once_all_or_nothing(
    hub: Hub, served: str, cfg: dict[str, str], tmp_path: Path
) -> None:
    owner, token = hub.new_user()
    a, b, c, d = (hub.unique(p) for p in ("many-a", "many-b", "many-c", "many-d"))
    for wheel in (
        hub.wheel(a, "1.0.0"),
        hub.wheel(b, "1.0.0", requires_dist=[f"{a}>=1.0"]),
        hub.wheel(c, "1.0.0"),
        hub.wheel(d, "1.0.0", requires_dist=[f"{a}>=2.0"]),
    ):
        assert hub.upload(wheel, token).status_code == 200
    py = fresh_venv(tmp_path / "venv")
    env = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": token}

    def installed() -> dict[str, str]:
        probe = (
            "import importlib.metadata as m, json, sys\n"
            "out = {}\n"
            "for n in sys.argv[1:]:\n"
            "    try: out[n] = m.version(n)\n"
            "    except m.PackageNotFoundError: pass\n"
            "print(json.dumps(out))"
        )
        r = subprocess.run([str(py), "-c", probe, a, b, c, d], capture_output=True, text=True)
        return dict(json.loads(r.stdout))

    # one spec that cannot be resolved: nothing is installed
    r = vf_in(py, ["env", "install", f"{owner}/{c}", f"{owner}/{a}@9.9"], env)
    assert r.returncode == 1 and "no version 9.9" in r.stderr, r.stderr
    # a named environment's version that a dependency of another one refuses: nothing
    r = vf_in(py, ["env", "install", f"{owner}/{a}@1.0.0", f"{owner}/{d}"], env)
    assert r.returncode == 1 and f"{a} 1.0.0 was asked for" in r.stderr, r.stderr
    assert installed() == {}

    r = vf_in(py, ["env", "install", f"{owner}/{b}", f"{owner}/{a}@1.0.0", f"{owner}/{c}"], env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:3] == [f"installed {owner}/{x}==1.0.0" for x in (b, a, c)]
    assert installed() == {a: "1.0.0", b: "1.0.0", c: "1.0.0"}


def test_json_listings_follow_the_documented_schemas(
    hub: Hub, served: str, cfg: dict[str, str]
) -> None:
    from pydantic import TypeAdapter

    from verifiers.hub import schemas as s

    owner, token = hub.new_user()
    env = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": token}
    name = hub.unique("jsonl")
    assert hub.upload(hub.wheel(name, "1.0.0"), token).status_code == 200
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    cases: list[tuple[list[str], Any, str]] = [
        (["env", "list", "--owner", owner], s.ProjectList, "`vf env list|search` a `ProjectList`"),
        (["env", "search", name], s.ProjectList, "`vf env list|search` a `ProjectList`"),
        (["env", "info", f"{owner}/{name}"], s.ProjectOut, "`vf env info` a `ProjectOut`"),
        (["env", "inspect", f"{owner}/{name}"], s.ReleaseTree, "a `ReleaseTree`"),
        (["token", "list"], list[s.TokenOut], "`vf token list` a list of `TokenOut`"),
    ]
    for args, model, doc in cases:
        code, out, err = vf([*args, "--json"], env)
        assert code == 0, (args, err)
        raw = json.loads(out)
        TypeAdapter(model).validate_python(raw, strict=False)
        assert doc in " ".join(readme.split()), doc
        if model is s.ProjectList:
            assert set(raw) == {"items", "total", "page", "per_page"}
            assert [p["name"] for p in raw["items"]] == [name]


def test_fork_writes_a_renamed_copy_that_push_publishes_as_a_fork(
    hub: Hub, served: str, cfg: dict[str, str], tmp_path: Path
) -> None:
    import httpx

    alice, alice_token = hub.new_user("alice")
    bob, bob_token = hub.new_user("bob")
    name, copy = hub.unique("orig"), hub.unique("copy")
    env_a = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": alice_token}
    env_b = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": bob_token}
    assert vf(["env", "init", name, "--path", str(tmp_path / "src")], env_a)[0] == 0
    assert vf(["env", "push", str(tmp_path / "src" / name)], env_a)[0] == 0

    code, out, err = vf(
        ["env", "fork", f"{alice}/{name}", copy, "--dir", str(tmp_path / "f")], env_b
    )
    assert code == 0, err
    assert f"forked {alice}/{name}@0.1.0 as {copy} into {tmp_path / 'f'}" in out
    assert f"vf env push {tmp_path / 'f'}" in out
    # fork publishes nothing: the user's own push builds and publishes it
    assert hub.api("GET", f"/projects/{bob}/{copy}").status_code == 404
    code, out, err = vf(["env", "push", str(tmp_path / "f")], env_b)
    assert code == 0, err
    assert f"published {bob}/{copy}@0.1.0" in out
    assert f"the hub records {bob}/{copy} as a fork of {alice}/{name}@0.1.0" in out
    module = name.replace("-", "_")
    new_module = copy.replace("-", "_")
    code, out, _ = vf(["env", "info", f"{bob}/{copy}", "--json"], env_b)
    info = json.loads(out)
    assert info["owner"] == bob and info["releases"][0]["entry_points"] == {
        copy: f"{new_module}:load_environment"
    }
    # the record travels in the published wheel's pyproject.toml
    dist_info = f"{copy.replace('-', '_')}-0.1.0.dist-info/extra_metadata/pyproject.toml"
    code, out, err = vf(["env", "inspect", f"{bob}/{copy}", dist_info], env_b)
    assert code == 0, err
    assert f'[tool.verifiers.fork]\nfrom = "{alice}/{name}@0.1.0"' in out
    # ... and on the hub, shown on both environments' pages
    code, out, _ = vf(["env", "info", f"{bob}/{copy}", "--json"], env_b)
    assert json.loads(out)["forked_from"] == {"owner": alice, "name": name, "version": "0.1.0"}
    code, out, _ = vf(["env", "info", f"{alice}/{name}", "--json"], env_b)
    original = json.loads(out)
    assert original["forks"] == 1 and original["forked_from"] is None
    assert original["fork_list"] == [{"owner": bob, "name": copy, "version": "0.1.0"}]
    code, out, _ = vf(["env", "info", f"{bob}/{copy}"], env_b)
    assert f"forked from: {alice}/{name}@0.1.0" in out
    html = {"Accept": "text/html"}
    page = httpx.get(f"{served}/{bob}/{copy}", headers=html).text
    assert f'href="/{alice}/{name}?version=0.1.0">{alice}/{name}@0.1.0</a>' in page
    page = httpx.get(f"{served}/{alice}/{name}", headers=html).text
    forks = page.split('id="fork-list">', 1)[1].split("</ul>", 1)[0]
    assert f'<a href="/{bob}/{copy}">{bob}/{copy}</a>' in forks and 'id="forks"' in page
    # the original is untouched; a taken name is refused by the hub, and no token: refused
    code, out, _ = vf(["env", "info", f"{alice}/{name}", "--json"], env_b)
    assert json.loads(out)["releases"][0]["entry_points"] == {name: f"{module}:load_environment"}
    taken = tmp_path / "taken"
    code, _, err = vf(["env", "fork", f"{alice}/{name}", name, "--dir", str(taken)], env_b)
    assert code == 0, err
    code, _, err = vf(["env", "push", str(taken)], env_b)
    assert code == 1 and "Traceback" not in err
    # forking needs no token (it only reads); publishing the fork does
    anon = cfg | {"VF_HUB_URL": served}
    other = tmp_path / "anon"
    code, _, err = vf(
        ["env", "fork", f"{alice}/{name}", hub.unique("x"), "--dir", str(other)], anon
    )
    assert code == 0, err
    code, _, err = vf(["env", "push", str(other)], anon)
    assert code == 1 and "no hub token" in err


def test_downloads_are_counted_once_per_client_and_day(
    hub: Hub, served: str, cfg: dict[str, str]
) -> None:
    import httpx

    owner, token = hub.new_user()
    _, other = hub.new_user()
    name = hub.unique("counted")
    for v in ("1.0.0", "2.0.0"):
        assert hub.upload(hub.wheel(name, v), token).status_code == 200
    rel = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0").json()
    url = served + rel["files"][0]["url"]

    def get(tok: str | None, suffix: str = "") -> None:
        headers = {"Authorization": f"Bearer {tok}"} if tok else {}
        assert httpx.get(url + suffix, headers=headers, timeout=30).status_code == 200

    for _ in range(3):
        get(token)  # the same user, the same day: once
    get(token, ".metadata")  # metadata is not a download
    httpx.head(url, timeout=30)  # nor a HEAD
    get(other)
    get(None)  # anonymous: counted by address
    get(None)
    env = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": token}
    code, out, err = vf(["env", "info", f"{owner}/{name}", "--json"], env)
    assert code == 0, err
    info = json.loads(out)
    by_version = {r["version"]: r["downloads"] for r in info["releases"]}
    assert by_version == {"1.0.0": 3, "2.0.0": 0}
    assert info["downloads"] == 3


def test_downloads_show_on_the_pages_and_sort_search(
    hub: Hub, served: str, cfg: dict[str, str]
) -> None:
    import re

    import httpx

    owner, token = hub.new_user("popular")
    _, other = hub.new_user()
    names = {n: hub.unique(n) for n in ("aaa", "bbb", "ccc")}
    tag = hub.unique("poptag")
    for name in names.values():
        assert hub.upload(hub.wheel(name, "1.0.0", keywords=tag), token).status_code == 200
    # bbb: three clients, ccc: one, aaa: none
    for name, clients in ((names["bbb"], [token, other, None]), (names["ccc"], [other])):
        rel = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0").json()
        for tok in clients:
            headers = {"Authorization": f"Bearer {tok}"} if tok else {}
            url = served + rel["files"][0]["url"]
            assert httpx.get(url, headers=headers, timeout=30).status_code == 200
    want = [names["bbb"], names["ccc"], names["aaa"]]

    env = {**cfg, "VF_HUB_URL": served, "VF_HUB_TOKEN": token}
    code, out, err = vf(["env", "list", "--owner", owner, "--sort", "downloads", "--json"], env)
    assert code == 0, err
    items = json.loads(out)["items"]
    assert [(p["name"], p["downloads"]) for p in items] == list(zip(want, [3, 1, 0], strict=True))
    code, out, err = vf(["env", "search", tag, "--sort", "downloads"], env)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()[2:5]]
    assert [(r[0], r[3]) for r in rows] == [
        (f"{owner}/{n}", d) for n, d in zip(want, "310", strict=True)
    ]
    code, _, err = vf(["env", "list", "--sort", "stars"], env)
    assert code == 2 and "stars" in err

    api = hub.api("GET", "/projects", params={"owner": owner, "sort": "downloads"}).json()
    assert [p["name"] for p in api["items"]] == want
    assert hub.api("GET", "/projects", params={"sort": "stars"}).status_code == 400

    html = {"Accept": "text/html"}
    page = httpx.get(f"{served}/{owner}", params={"sort": "downloads"}, headers=html).text
    assert re.findall(rf'href="/{owner}/((?:aaa|bbb|ccc)-[0-9a-f]+)"', page) == want
    assert '<option value="downloads" selected>' in page
    counts = re.findall(r'<td class="num downloads">(\d+)</td>', page)
    assert counts == ["3", "1", "0"]
    page = httpx.get(f"{served}/{owner}/{names['bbb']}", headers=html).text
    assert "3 downloads · 3 of 1.0.0" in page


def test_the_hub_records_only_forks_of_releases_the_uploader_can_read(hub: Hub) -> None:
    """``forked_from`` is recorded by the upload that creates a project, after checking the
    release exists and the uploader can read it; it never changes afterwards, and a private
    source is named only to those who may read it."""
    alice, alice_token = hub.new_user("alice")
    bob, bob_token = hub.new_user("bob")
    src, secret = hub.unique("src"), hub.unique("secret")
    assert hub.upload(hub.wheel(src, "1.0.0"), alice_token).status_code == 200
    assert hub.upload(hub.wheel(secret, "1.0.0"), alice_token, private="1").status_code == 200

    def fork(token: str, name: str, claim: str, version: str = "1.0.0", **kw: str) -> int:
        r = hub.upload(hub.wheel(name, version), token, forked_from=claim, **kw)
        return r.status_code

    # a missing release, a bad claim, and another's private project (the same 404 as missing)
    assert fork(bob_token, hub.unique("c"), f"{alice}/{src}@9.9.9") == 404
    assert fork(bob_token, hub.unique("c"), f"{alice}/no-such-env@1.0.0") == 404
    assert fork(bob_token, hub.unique("c"), f"{alice}/{secret}@1.0.0") == 404
    for bad in (f"{alice}/{src}", src, f"{alice}/{src}@ 1.0.0", "x" * 400):
        assert fork(bob_token, hub.unique("c"), bad) == 400, bad
    # none of those created a project
    mine = hub.api("GET", "/projects", params={"owner": bob}).json()
    assert mine["total"] == 0

    copy = hub.unique("copy")
    r = hub.upload(hub.wheel(copy, "1.0.0"), bob_token, forked_from=f"{alice}/{src}@1.0")
    assert r.status_code == 200, r.text
    assert r.json()["forked_from"] == {"owner": alice, "name": src, "version": "1.0.0"}
    # a later version keeps the record; a different claim on it is refused
    assert hub.upload(hub.wheel(copy, "1.1.0"), bob_token).status_code == 200
    assert fork(bob_token, copy, f"{alice}/{src}@1.0.0", "1.2.0") == 200
    other = hub.unique("other")
    assert hub.upload(hub.wheel(other, "1.0.0"), bob_token).status_code == 200
    assert fork(bob_token, other, f"{alice}/{src}@1.0.0", "1.1.0") == 409
    assert fork(bob_token, copy, f"{bob}/{other}@1.0.0", "1.3.0") == 409
    got = hub.api("GET", f"/projects/{bob}/{copy}").json()
    assert got["forked_from"] == {"owner": alice, "name": src, "version": "1.0.0"}
    assert hub.api("GET", f"/projects/{bob}/{other}").json()["forked_from"] is None

    # a private fork of a private source: its owner sees both sides; others see neither
    private_copy = hub.unique("pcopy")
    assert fork(alice_token, private_copy, f"{alice}/{secret}@1.0.0", private="1") == 200
    assert hub.api("GET", f"/projects/{alice}/{secret}", alice_token).json()["forks"] == 1
    assert hub.api("GET", f"/projects/{alice}/{secret}").status_code == 404
    # a public fork of a private source: the record is not shown to those who cannot read it
    public_copy = hub.unique("pubcopy")
    assert fork(alice_token, public_copy, f"{alice}/{secret}@1.0.0") == 200
    assert hub.api("GET", f"/projects/{alice}/{public_copy}").json()["forked_from"] is None
    shown = hub.api("GET", f"/projects/{alice}/{public_copy}", alice_token).json()
    assert shown["forked_from"]["name"] == secret
    listed = hub.api("GET", "/projects", params={"q": public_copy}).json()["items"]
    assert [p["forked_from"] for p in listed] == [None]
    # private forks of a public source are counted only for those who can read them
    hidden_copy = hub.unique("hidden")
    assert fork(bob_token, hidden_copy, f"{alice}/{src}@1.0.0", private="1") == 200
    public = hub.api("GET", f"/projects/{alice}/{src}").json()
    assert public["forks"] == 1 and [f["name"] for f in public["fork_list"]] == [copy]
    as_bob = hub.api("GET", f"/projects/{alice}/{src}", bob_token).json()
    assert as_bob["forks"] == 2
    assert {f["name"] for f in as_bob["fork_list"]} == {copy, hidden_copy}
