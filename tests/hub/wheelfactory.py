"""Build small, valid (or deliberately broken) wheels in memory for the hub tests."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def make_wheel(
    dest: Path,
    name: str,
    version: str,
    *,
    module_body: str | None = None,
    keywords: str | None = None,
    requires_dist: list[str] | None = None,
    metadata_name: str | None = None,
    metadata_version: str | None = None,
    omit_metadata: bool = False,
    extra_members: dict[str, bytes] | None = None,
    entry_point: bool = True,
    summary: str | None = None,
    description: str | None = None,
) -> Path:
    """Write ``{name}-{version}-py3-none-any.whl`` into ``dest`` and return its path."""
    dist = name.replace("-", "_")
    mod = dist
    dist_info = f"{dist}-{version}.dist-info"
    meta_lines = [
        "Metadata-Version: 2.1",
        f"Name: {metadata_name or name}",
        f"Version: {metadata_version or version}",
        f"Summary: {summary if summary is not None else f'test environment {name}'}",
        "Requires-Python: >=3.8",
    ]
    if keywords:
        meta_lines.append(f"Keywords: {keywords}")
    meta_lines += [f"Requires-Dist: {r}" for r in requires_dist or []]
    if description is not None:
        meta_lines.append("Description-Content-Type: text/markdown")
    body = description if description is not None else "A test environment.\n"
    metadata = ("\n".join(meta_lines) + "\n\n" + body).encode()
    files: dict[str, bytes] = {
        f"{mod}/__init__.py": (
            module_body
            if module_body is not None
            else f"VERSION = {version!r}\n\ndef load_environment(**kwargs):\n    return {{'name': {name!r}}}\n"
        ).encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if not omit_metadata:
        files[f"{dist_info}/METADATA"] = metadata
    if entry_point:
        files[f"{dist_info}/entry_points.txt"] = (
            f"[verifiers.environments]\n{name} = {mod}:load_environment\n".encode()
        )
    files.update(extra_members or {})
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in files.items())
    record += f"{dist_info}/RECORD,,\n"
    files[f"{dist_info}/RECORD"] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for p, d in files.items():
            zf.writestr(p, d)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{dist}-{version}-py3-none-any.whl"
    path.write_bytes(buf.getvalue())
    return path


def make_sdist(
    dest: Path,
    name: str,
    version: str,
    *,
    metadata_name: str | None = None,
    omit_pkg_info: bool = False,
    extra_members: dict[str, bytes] | None = None,
    symlinks: dict[str, str] | None = None,
    fifo: str | None = None,
    top: str | None = None,
    prefix: str = "",
) -> Path:
    """Write ``{name}-{version}.tar.gz`` (PEP 625 spelling) into ``dest`` and return its path.
    ``extra_members`` and ``symlinks`` take archive paths as given (not under the top dir);
    ``top`` names the top directory (default ``{dist}-{version}``), ``prefix`` goes before it."""
    import tarfile

    dist = name.replace("-", "_")
    filename = f"{dist}-{version}.tar.gz"
    top = prefix + (top or f"{dist}-{version}")
    pkg_info = (
        f"Metadata-Version: 2.2\nName: {metadata_name or name}\nVersion: {version}\n"
        f"Summary: test sdist {name}\nRequires-Python: >=3.8\n"
    ).encode()
    files = {f"{top}/pyproject.toml": b"[project]\n", f"{top}/{dist}/__init__.py": b"X = 1\n"}
    if not omit_pkg_info:
        files[f"{top}/PKG-INFO"] = pkg_info
    files.update(extra_members or {})
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for p, d in files.items():
            info = tarfile.TarInfo(p)
            info.size = len(d)
            tf.addfile(info, io.BytesIO(d))
        for p, target in (symlinks or {}).items():
            info = tarfile.TarInfo(p)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
        if fifo:
            info = tarfile.TarInfo(fifo)
            info.type = tarfile.FIFOTYPE
            tf.addfile(info)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / filename
    path.write_bytes(buf.getvalue())
    return path


def make_metadata_bomb(dest: Path, name: str, inflated: int) -> Path:
    """A wheel whose METADATA inflates to ``inflated`` bytes at about 30:1 (under the hub's
    ratio limit, so only a cap on what is read can stop it). Streamed: never held in memory."""
    import os

    dist = name.replace("-", "_")
    dist_info = f"{dist}-1.0.0.dist-info"
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{dist}-1.0.0-py3-none-any.whl"
    block = os.urandom(32 * 1024) + b"\0" * (1024 * 1024 - 32 * 1024)  # ~30:1 deflated
    head = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.0\nSummary: ".encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr(f"{dist}/__init__.py", b"")
        with zf.open(f"{dist_info}/METADATA", "w", force_zip64=True) as f:
            f.write(head)
            for _ in range(inflated // len(block)):
                f.write(block)
        zf.writestr(f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nTag: py3-none-any\n")
        zf.writestr(f"{dist_info}/RECORD", b"")
    return path
