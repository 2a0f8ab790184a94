"""Reading and checking an uploaded wheel: the server trusts the wheel, never the client."""

from __future__ import annotations

import configparser
import email.parser
import email.policy
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import IO

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    canonicalize_version,
    parse_wheel_filename,
)

from hub_server.errors import InvalidUpload, TooLarge

ENTRY_POINT_GROUP = "verifiers.environments"
_METADATA_LIMIT = 5 * 1024 * 1024
_CHUNK = 1024 * 1024


@dataclass
class WheelInfo:
    filename: str
    name: str  # as written in METADATA
    normalized_name: str
    version: str  # canonical
    wheel_tags: str
    metadata_bytes: bytes
    summary: str | None = None
    description: str | None = None
    requires_python: str | None = None
    requires_dist: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    entry_points: dict[str, str] = field(default_factory=dict)

    def direct_url_requirements(self) -> list[str]:
        out = []
        for spec in self.requires_dist:
            try:
                if Requirement(spec).url:
                    out.append(spec)
            except InvalidRequirement:
                continue
        return out


def parse_filename(filename: str) -> tuple[str, str, str]:
    """``(normalised name, canonical version, tag string)`` or :class:`InvalidUpload`."""
    if "/" in filename or "\\" in filename or filename.startswith("."):
        raise InvalidUpload(f"bad filename {filename!r}: give the bare wheel filename")
    if filename.endswith((".tar.gz", ".zip")):
        raise InvalidUpload(
            f"{filename}: only wheels (.whl) are accepted; upload the wheel "
            "(`python -m build --wheel` or `vf env build`)"
        )
    if not filename.endswith(".whl"):
        raise InvalidUpload(f"{filename}: not a wheel filename; only .whl files are accepted")
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as e:
        raise InvalidUpload(f"{filename}: invalid wheel filename ({e})") from None
    tag_str = "+".join(sorted(str(t) for t in tags))
    return (
        canonicalize_name(name),
        canonicalize_version(version, strip_trailing_zero=False),
        tag_str,
    )


def _check_member_name(name: str) -> None:
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise InvalidUpload(f"archive member {name!r} has an absolute path; wheels must not")
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ".." in parts:
        raise InvalidUpload(f"archive member {name!r} contains '..'; wheels must not")


def inspect_wheel(
    fileobj: IO[bytes],
    filename: str,
    *,
    max_uncompressed: int,
    max_ratio: float,
) -> WheelInfo:
    """Check the archive (paths, sizes, zip-bomb ratio, CRCs) and read its METADATA."""
    norm_name, version, tag_str = parse_filename(filename)
    try:
        zf = zipfile.ZipFile(fileobj)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise InvalidUpload(f"{filename} is not a valid zip archive ({e})") from None
    with zf:
        infos = zf.infolist()
        seen: set[str] = set()
        total_declared = 0
        for info in infos:
            _check_member_name(info.filename)
            if info.filename in seen:
                raise InvalidUpload(f"archive member {info.filename!r} appears twice")
            seen.add(info.filename)
            total_declared += info.file_size
            if info.file_size > 1024 * 1024 and info.file_size > max_ratio * max(
                info.compress_size, 1
            ):
                raise InvalidUpload(
                    f"archive member {info.filename!r} expands {info.file_size} bytes from "
                    f"{info.compress_size} (ratio over {max_ratio:g}): refused as a zip bomb"
                )
        if total_declared > max_uncompressed:
            raise TooLarge(
                f"{filename} expands to {total_declared} bytes, over the limit of "
                f"{max_uncompressed}: refused as a zip bomb"
            )
        _verify_members(zf, infos, max_uncompressed)

        dist_infos = {
            n.split("/", 1)[0]
            for n in seen
            if "/" in n and n.split("/", 1)[0].endswith(".dist-info")
        }
        if len(dist_infos) != 1:
            raise InvalidUpload(
                f"{filename} must contain exactly one .dist-info directory, found "
                f"{len(dist_infos)}; rebuild the wheel with a standard build backend"
            )
        dist_info = dist_infos.pop()
        meta_name = f"{dist_info}/METADATA"
        if meta_name not in seen:
            raise InvalidUpload(f"{filename} has no {meta_name}; rebuild the wheel")
        metadata_bytes = zf.read(meta_name)
        if len(metadata_bytes) > _METADATA_LIMIT:
            raise InvalidUpload(f"{meta_name} is larger than {_METADATA_LIMIT} bytes")
        ep_name = f"{dist_info}/entry_points.txt"
        entry_points = _read_entry_points(zf.read(ep_name)) if ep_name in seen else {}

    winfo = _parse_metadata(metadata_bytes, filename)
    if canonicalize_name(winfo.name) != norm_name:
        raise InvalidUpload(
            f"METADATA Name {winfo.name!r} does not match the filename {filename!r}; "
            "rebuild the wheel instead of renaming it"
        )
    if winfo.version != version:
        raise InvalidUpload(
            f"METADATA Version {winfo.version!r} does not match the filename {filename!r}; "
            "rebuild the wheel instead of renaming it"
        )
    winfo.filename = filename
    winfo.normalized_name = norm_name
    winfo.wheel_tags = tag_str
    winfo.entry_points = entry_points
    return winfo


def _verify_members(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limit: int) -> None:
    """Decompress everything once: catches lying size headers and CRC errors."""
    total = 0
    for info in infos:
        if info.is_dir():
            continue
        seen = 0
        try:
            with zf.open(info) as f:
                while chunk := f.read(_CHUNK):
                    seen += len(chunk)
                    total += len(chunk)
                    if seen > info.file_size or total > limit:
                        raise InvalidUpload(
                            f"archive member {info.filename!r} expands beyond its declared "
                            "size: refused as a zip bomb"
                        )
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as e:
            raise InvalidUpload(f"archive member {info.filename!r} is corrupt ({e})") from None


def _parse_metadata(raw: bytes, filename: str) -> WheelInfo:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidUpload(f"{filename}: METADATA is not UTF-8") from None
    msg = email.parser.Parser(policy=email.policy.compat32).parsestr(text)
    name = (msg.get("Name") or "").strip()
    version_raw = (msg.get("Version") or "").strip()
    if not name or not version_raw:
        raise InvalidUpload(f"{filename}: METADATA lacks Name or Version")
    try:
        version = canonicalize_version(version_raw, strip_trailing_zero=False)
        from packaging.version import Version

        Version(version_raw)
    except Exception:
        raise InvalidUpload(f"{filename}: METADATA Version {version_raw!r} is invalid") from None
    keywords_raw = msg.get("Keywords") or ""
    sep = "," if "," in keywords_raw else None
    keywords = sorted(
        {k.strip().lower() for k in keywords_raw.split(sep) if k.strip()} if keywords_raw else set()
    )
    body = msg.get_payload()
    description = (msg.get("Description") or (body if isinstance(body, str) else "") or "").strip()
    return WheelInfo(
        filename=filename,
        name=name,
        normalized_name=canonicalize_name(name),
        version=version,
        wheel_tags="",
        metadata_bytes=raw,
        summary=(msg.get("Summary") or "").strip() or None,
        description=description or None,
        requires_python=(msg.get("Requires-Python") or "").strip() or None,
        requires_dist=[r.strip() for r in msg.get_all("Requires-Dist") or []],
        keywords=keywords[:50],
    )


def _read_entry_points(raw: bytes) -> dict[str, str]:
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(raw.decode("utf-8"))
    except (configparser.Error, UnicodeDecodeError) as e:
        raise InvalidUpload(f"entry_points.txt is malformed ({e})") from None
    if not parser.has_section(ENTRY_POINT_GROUP):
        return {}
    return {k.strip(): v.strip() for k, v in parser.items(ENTRY_POINT_GROUP)}
