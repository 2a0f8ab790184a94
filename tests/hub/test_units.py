"""In-process checks that need no server: settings, content negotiation, archive limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub_server.errors import InvalidUpload, TooLarge
from hub_server.index import HTML_V1, JSON_V1, NotAcceptable, etag_matches, negotiate
from hub_server.settings import Settings
from hub_server.wheels import inspect_wheel

from .clitools import vf
from .wheelfactory import make_wheel


def test_settings_from_env() -> None:
    s = Settings.from_env(
        {
            "VF_HUB_DATA_DIR": "/srv/hub",
            "VF_HUB_S3_BUCKET": "wheels",
            "VF_HUB_S3_ENDPOINT_URL": "http://127.0.0.1:9000",
            "VF_HUB_S3_REGION": "eu-west-1",
            "VF_HUB_MAX_UPLOAD_BYTES": "1000",
        }
    )
    assert s.storage == "s3" and s.s3_bucket == "wheels" and s.s3_region == "eu-west-1"
    assert s.resolved_database_url == "sqlite:////srv/hub/hub.db"
    assert s.max_upload_bytes == 1000
    assert Settings.from_env({}, data_dir=Path("/x")).resolved_storage_dir == Path("/x/blobs")
    with pytest.raises(ValueError, match="VF_HUB_MAX_UPLOAD_BYTES"):
        Settings.from_env({"VF_HUB_MAX_UPLOAD_BYTES": "lots"})
    with pytest.raises(ValueError, match="VF_HUB_S3_BUCKET"):
        Settings.from_env({"VF_HUB_STORAGE": "s3"})


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "text/html"),
        ("*/*", "text/html"),
        (f"{JSON_V1}, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01", JSON_V1),
        ("text/html,application/xhtml+xml,*/*;q=0.8", "text/html"),
        ("text/html;q=0, */*", JSON_V1),
        ("application/*", JSON_V1),
        ("application/vnd.pypi.simple.latest+json", JSON_V1),
        ("application/vnd.pypi.simple.latest+html", HTML_V1),
        ("application/vnd.pypi.simple.latest+json;q=0.5, text/html;q=0.4", JSON_V1),
    ],
)
def test_negotiate(accept: str | None, expected: str) -> None:
    assert negotiate(accept) == expected


def test_negotiate_format_parameter_accepts_latest() -> None:
    assert negotiate("text/html", "application/vnd.pypi.simple.latest+json") == JSON_V1
    assert negotiate(None, JSON_V1) == JSON_V1


@pytest.mark.parametrize(
    ("header", "matches"),
    [
        (None, False),
        ('"abc"', True),
        ('W/"abc"', True),
        ('"x", "abc"', True),
        ("*", True),
        ('"abcd"', False),
        ('"x", W/"y"', False),
    ],
)
def test_etag_matches(header: str | None, matches: bool) -> None:
    assert etag_matches(header, '"abc"') is matches


def test_negotiate_refuses_unknown() -> None:
    with pytest.raises(NotAcceptable):
        negotiate("image/png")
    with pytest.raises(NotAcceptable):
        negotiate(None, "application/xml")


def _inspect(path: Path, **kw: float) -> object:
    with path.open("rb") as f:
        return inspect_wheel(
            f,
            path.name,
            max_uncompressed=int(kw.get("max_uncompressed", 10**9)),
            max_ratio=kw.get("max_ratio", 100.0),
        )


def test_wheel_metadata_is_read_from_the_archive(tmp_path: Path) -> None:
    w = make_wheel(tmp_path, "meta-env", "1.0", keywords="b, a", requires_dist=["verifiers>=0.9"])
    info = _inspect(w)
    assert info.name == "meta-env" and info.version == "1.0"  # type: ignore[attr-defined]
    assert info.keywords == ["a", "b"]  # type: ignore[attr-defined]
    assert info.requires_dist == ["verifiers>=0.9"]  # type: ignore[attr-defined]
    assert info.entry_points == {"meta-env": "meta_env:load_environment"}  # type: ignore[attr-defined]


def test_total_uncompressed_limit(tmp_path: Path) -> None:
    w = make_wheel(tmp_path, "big-env", "1.0", extra_members={"big_env/x.txt": b"x" * 5000})
    with pytest.raises(TooLarge, match="zip bomb"):
        _inspect(w, max_uncompressed=4000)


def test_lying_size_header_is_caught(tmp_path: Path) -> None:
    w = make_wheel(tmp_path, "liar-env", "1.0", extra_members={"liar_env/data.txt": b"y" * 4096})
    raw = bytearray(w.read_bytes())
    # shrink the declared size in the central directory entry of data.txt
    import struct
    import zipfile

    with zipfile.ZipFile(w) as zf:
        info = zf.getinfo("liar_env/data.txt")
    cd = raw.rfind(b"PK\x01\x02", 0, raw.find(b"liar_env/data.txt", raw.find(b"PK\x01\x02")) + 1)
    struct.pack_into("<I", raw, cd + 24, 10)  # uncompressed size field
    assert info.file_size == 4096
    w.write_bytes(bytes(raw))
    with pytest.raises(InvalidUpload, match=r"declared size|corrupt"):
        _inspect(w)


def test_hub_commands_name_an_unusable_database_or_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for where, needle in (
        (["--database-url", "notadialect://x"], "invalid database URL notadialect://x"),
        (["--database-url", "postgresql://u:secret@127.0.0.1:1/x"], "cannot open the database"),
        (["--data-dir", str(blocker / "sub")], f"cannot use {blocker / 'sub'}"),
    ):
        for cmd in (["hub", "user", "create", "someone", "--init"], ["hub", "migrate", "--init"]):
            code, _, err = vf([*cmd, *where], {})
            assert code == 1, (cmd, where, err)
            assert needle in err and "Error:" not in err, (cmd, err)  # no exception class names
            assert "secret" not in err


def test_hub_url_without_scheme_is_named(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "VF_HUB_URL": "127.0.0.1:8000", "VF_HUB_TOKEN": ""}
    code, _, err = vf(["env", "info", "a/b"], env)
    assert code == 1
    assert "'127.0.0.1:8000' (from VF_HUB_URL) must start with http://" in err
    (tmp_path / "verifiers").mkdir()
    (tmp_path / "verifiers" / "config.toml").write_text('hub = "oops"\n')
    code, _, err = vf(["whoami"], {**env, "VF_HUB_URL": ""})
    assert code == 1 and "[hub] must be a table" in err


def test_member_count_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hub_server import wheels

    from .wheelfactory import make_sdist

    monkeypatch.setattr(wheels, "MAX_MEMBERS", 5)
    many = {f"many_env/m{i}.py": b"" for i in range(10)}
    with pytest.raises(InvalidUpload, match="archive members"):
        _inspect(make_wheel(tmp_path, "many-env", "1.0", extra_members=many))
    top = "many_env-1.0"
    sd = make_sdist(tmp_path, "many-env", "1.0", extra_members={f"{top}/{k}": b"" for k in many})
    with sd.open("rb") as f, pytest.raises(InvalidUpload, match="archive members"):
        wheels.inspect_sdist(f, sd.name, max_uncompressed=10**9, max_ratio=100.0)


@pytest.mark.parametrize(
    ("top", "prefix"),
    [(None, ""), (None, "./"), ("Mixed.Case_Env-1.0.0", ""), ("mixed-case-env-1.0", "")],
)
def test_sdist_top_directory_in_any_spelling(tmp_path: Path, top: str | None, prefix: str) -> None:
    from hub_server import wheels

    from .wheelfactory import make_sdist

    sd = make_sdist(tmp_path, "mixed-case-env", "1.0.0", top=top, prefix=prefix)
    with sd.open("rb") as f:
        info = wheels.inspect_sdist(f, sd.name, max_uncompressed=10**9, max_ratio=100.0)
    assert info.normalized_name == "mixed-case-env" and info.wheel_tags == wheels.SDIST_TAG
    other = make_sdist(tmp_path / "o", "mixed-case-env", "1.0.0", top="someone-else-1.0.0")
    with other.open("rb") as f, pytest.raises(InvalidUpload, match="outside the one"):
        wheels.inspect_sdist(f, other.name, max_uncompressed=10**9, max_ratio=100.0)
