"""Reading and checking an uploaded wheel: the server trusts the wheel, never the client."""

from __future__ import annotations

import configparser
import email.parser
import email.policy
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import IO

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    canonicalize_version,
    parse_sdist_filename,
    parse_wheel_filename,
)

from hub_server.errors import InvalidUpload, TooLarge
from hub_server.names import check_name

ENTRY_POINT_GROUP = "verifiers.environments"
SDIST_TAG = "sdist"  # the File.wheel_tags value of a source distribution
_METADATA_LIMIT = 5 * 1024 * 1024
MAX_MEMBERS = 100_000  # far above any environment package; bounds parsing work and memory
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
    """``(normalised name, canonical version, tag string)`` or :class:`InvalidUpload`; the tag
    string of a source distribution is :data:`SDIST_TAG`."""
    if "/" in filename or "\\" in filename or filename.startswith("."):
        raise InvalidUpload(f"bad filename {filename!r}: give the bare file name")
    if filename.endswith(".tar.gz"):
        try:
            name, version = parse_sdist_filename(filename)
        except InvalidSdistFilename as e:
            raise InvalidUpload(f"{filename}: invalid sdist filename ({e})") from None
        check_name(filename[: -len(".tar.gz")].rpartition("-")[0], f"the filename {filename!r}")
        return (
            canonicalize_name(name),
            canonicalize_version(version, strip_trailing_zero=False),
            SDIST_TAG,
        )
    if not filename.endswith(".whl"):
        raise InvalidUpload(
            f"{filename}: only wheels (.whl) and .tar.gz source distributions are accepted; "
            "build them with `python -m build` or `vf env build`"
        )
    check_name(filename.split("-", 1)[0], f"the filename {filename!r}")
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


def inspect_distribution(
    fileobj: IO[bytes], filename: str, *, max_uncompressed: int, max_ratio: float
) -> WheelInfo:
    """:func:`inspect_wheel` or :func:`inspect_sdist`, by the filename."""
    inspect = inspect_sdist if filename.endswith(".tar.gz") else inspect_wheel
    return inspect(fileobj, filename, max_uncompressed=max_uncompressed, max_ratio=max_ratio)


def _check_member_name(name: str) -> None:
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise InvalidUpload(f"archive member {name!r} has an absolute path; archives must not")
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ".." in parts:
        raise InvalidUpload(f"archive member {name!r} contains '..'; archives must not")


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
        if len(infos) > MAX_MEMBERS:
            raise InvalidUpload(
                f"{filename} has {len(infos)} archive members, over the limit of {MAX_MEMBERS}"
            )
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
        metadata_bytes = read_capped(zf, meta_name, _METADATA_LIMIT)
        ep_name = f"{dist_info}/entry_points.txt"
        entry_points = (
            _read_entry_points(read_capped(zf, ep_name, _METADATA_LIMIT)) if ep_name in seen else {}
        )

    winfo = _checked_metadata(metadata_bytes, filename, norm_name, version, "METADATA")
    winfo.wheel_tags = tag_str
    winfo.entry_points = entry_points
    return winfo


def _checked_metadata(
    raw: bytes, filename: str, norm_name: str, version: str, label: str
) -> WheelInfo:
    """Parse core metadata and require its name and version to match the filename's."""
    info = _parse_metadata(raw, filename)
    check_name(info.name, f"{label} Name of {filename}")
    for field_name, ours, theirs in (
        ("Name", canonicalize_name(info.name), norm_name),
        ("Version", info.version, version),
    ):
        if ours != theirs:
            raise InvalidUpload(
                f"{label} {field_name} {getattr(info, field_name.lower())!r} does not match the "
                f"filename {filename!r}; rebuild the distribution instead of renaming it"
            )
    info.filename = filename
    info.normalized_name = norm_name
    return info


def inspect_sdist(
    fileobj: IO[bytes],
    filename: str,
    *,
    max_uncompressed: int,
    max_ratio: float,
) -> WheelInfo:
    """Check a ``.tar.gz`` source distribution (gzip-bomb limits, member paths and types, one
    ``{name}-{version}/`` top directory) and read its ``PKG-INFO``. Entry points are read only
    from wheels: an sdist's are whatever its build produces."""
    norm_name, version, _ = parse_filename(filename)
    _check_gzip_size(fileobj, filename, max_uncompressed, max_ratio)
    fileobj.seek(0)
    top: str | None = None  # the one top directory, "{name}-{version}" in any spelling
    pkg_info: bytes | None = None
    try:
        with tarfile.open(fileobj=fileobj, mode="r:gz") as tf:
            for count, member in enumerate(tf, 1):
                if count > MAX_MEMBERS:
                    raise InvalidUpload(
                        f"{filename} has over {MAX_MEMBERS} archive members; refused"
                    )
                _check_member_name(member.name)
                name = member.name.removeprefix("./")
                if name in ("", "."):
                    continue
                head = name.split("/", 1)[0]
                if top is None and _is_dist_dir(head, norm_name, version):
                    top = head
                if head != top:
                    raise InvalidUpload(
                        f"archive member {member.name!r} is outside the one "
                        f"{{name}}-{{version}}/ directory a source distribution unpacks into"
                    )
                if member.issym() or member.islnk():
                    _check_member_name(member.linkname)
                elif not (member.isfile() or member.isdir()):
                    raise InvalidUpload(
                        f"archive member {member.name!r} is a device or FIFO; sdists must not "
                        "contain special files"
                    )
                if name == f"{top}/PKG-INFO" and member.isfile():
                    if member.size > _METADATA_LIMIT:
                        raise InvalidUpload(f"PKG-INFO is larger than {_METADATA_LIMIT} bytes")
                    extracted = tf.extractfile(member)
                    pkg_info = (
                        extracted.read(_METADATA_LIMIT + 1) if extracted is not None else None
                    )
                    if pkg_info is not None and len(pkg_info) > _METADATA_LIMIT:
                        raise InvalidUpload(f"PKG-INFO is larger than {_METADATA_LIMIT} bytes")
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise InvalidUpload(f"{filename} is not a valid .tar.gz archive ({e})") from None
    if pkg_info is None:
        raise InvalidUpload(f"{filename} has no {{name}}-{{version}}/PKG-INFO; rebuild the sdist")
    info = _checked_metadata(pkg_info, filename, norm_name, version, "PKG-INFO")
    info.wheel_tags = SDIST_TAG
    return info


def _is_dist_dir(head: str, norm_name: str, version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    name, _, ver = head.rpartition("-")
    try:
        return canonicalize_name(name) == norm_name and Version(ver) == Version(version)
    except InvalidVersion:
        return False


def _check_gzip_size(fileobj: IO[bytes], filename: str, limit: int, max_ratio: float) -> None:
    """Decompress once, counting (every gzip member, as tarfile would read them all): refuses
    gzip bombs before tarfile parses anything."""
    fileobj.seek(0)
    inflate = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    compressed = expanded = 0
    try:
        while chunk := fileobj.read(_CHUNK):
            compressed += len(chunk)
            data = chunk
            while data:
                if inflate.eof:  # another gzip member follows (tarfile reads them all)
                    if not data.strip(b"\0"):
                        break  # zero padding after the last member
                    inflate = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
                expanded += len(inflate.decompress(data, _CHUNK))
                if expanded > limit:
                    raise TooLarge(
                        f"{filename} expands beyond {limit} bytes: refused as a gzip bomb"
                    )
                if inflate.unconsumed_tail:
                    data = inflate.unconsumed_tail
                else:
                    data = inflate.unused_data if inflate.eof else b""
    except zlib.error as e:
        raise InvalidUpload(f"{filename} is not a valid gzip file ({e})") from None
    if expanded > 1024 * 1024 and expanded > max_ratio * max(compressed, 1):
        raise InvalidUpload(
            f"{filename} expands {expanded} bytes from {compressed} (ratio over {max_ratio:g}): "
            "refused as a gzip bomb"
        )


def read_capped(zf: zipfile.ZipFile, name: str, cap: int) -> bytes:
    """A member's bytes, decompressed in chunks and refused as soon as they pass ``cap``: what
    a member inflates to costs at most ``cap`` (plus one chunk) of memory, whatever its
    headers claim."""
    out = bytearray()
    try:
        with zf.open(name) as f:
            while chunk := f.read(min(_CHUNK, cap + 1 - len(out))):
                out += chunk
                if len(out) > cap:
                    raise InvalidUpload(
                        f"archive member {name!r} is larger than {cap} bytes; a wheel's "
                        "metadata files are small: rebuild the wheel"
                    )
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as e:
        raise InvalidUpload(f"archive member {name!r} is corrupt ({e})") from None
    return bytes(out)


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
    if "\x00" in text:
        raise InvalidUpload(f"{filename}: METADATA contains a NUL byte; rebuild the distribution")
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
