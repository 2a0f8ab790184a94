"""Artifacts: files a solver leaves in its runtime that travel to a grader's fresh runtime.

:func:`collect` archives each declared path (plus :data:`ARTIFACTS_DIR`, swept when present) out
of a runtime as one tar per path; :func:`restore` puts them back at the same absolute paths in
another runtime. The archives are written by model-controlled code, so :func:`restore` checks
every one on the host before touching the grading runtime: members stay under their root, links
stay inside it and nothing is extracted through a link; FIFOs and device nodes are dropped at
collection (they carry no content).
"""

from __future__ import annotations

import io
import logging
import shlex
import tarfile
import uuid
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from verifiers.v1.runtimes import Runtime

__all__ = [
    "ARTIFACTS_DIR",
    "MAX_ARTIFACT_BYTES",
    "Artifact",
    "ArtifactError",
    "collect",
    "restore",
    "runtime_workdir",
]

logger = logging.getLogger(__name__)

ARTIFACTS_DIR = "/logs/artifacts"
"""Collected without being declared whenever it exists (a missing one is no error)."""

MAX_ARTIFACT_BYTES = 32 * 1024 * 1024
"""Default limit on the archives of one collection, all together."""


class ArtifactError(RuntimeError):
    """An artifact could not be collected or restored (missing, too large, unsafe)."""


class Artifact(BaseModel):
    """A path (a file or a directory) to carry to the same place in another runtime."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str
    """Absolute, or relative to the runtime's work dir."""
    exclude: list[str] = Field(default_factory=list)
    """``tar --exclude`` patterns for a directory ``source``."""
    required: bool = True
    """A missing required path fails the collection (its grading would be wrong)."""


def runtime_workdir(runtime_or_config: Any) -> str:
    """The work dir relative paths resolve against: a config's ``workdir`` where it has one,
    the sandbox's own where it runs, else ``/home/user`` (bwrap's and docker's)."""
    from verifiers.sandbox.base import WORKDIR

    config = getattr(runtime_or_config, "config", runtime_or_config)
    named = getattr(config, "workdir", None)
    if named:
        return str(named)
    sandbox = getattr(runtime_or_config, "_sandbox", None)
    inside = getattr(sandbox, "workdir", None) if sandbox is not None else None
    return str(inside) if isinstance(inside, str) and inside else WORKDIR


def _entries(runtime: Runtime, artifacts: list[Artifact], sweep: bool) -> list[Artifact]:
    workdir = PurePosixPath(runtime_workdir(runtime))
    declared = [a.model_copy(update={"source": str(workdir / a.source)}) for a in artifacts]
    convention = PurePosixPath(ARTIFACTS_DIR)
    paths = [PurePosixPath(a.source) for a in declared]
    entries: list[Artifact] = []
    if sweep and convention not in paths:
        inner = [str(p).lstrip("/") for p in paths if p.is_relative_to(convention)]
        entries.append(Artifact(source=ARTIFACTS_DIR, exclude=inner, required=False))
        # a declared parent of the convention dir leaves it to the sweep
        declared = [
            a.model_copy(update={"exclude": [*a.exclude, ARTIFACTS_DIR.lstrip("/")]})
            if convention.is_relative_to(p)
            else a
            for a, p in zip(declared, paths, strict=True)
        ]
    entries += declared
    seen: set[str] = set()
    for entry in entries:
        if entry.source in seen:
            raise ArtifactError(f"artifact {entry.source!r} is declared more than once")
        seen.add(entry.source)
    return entries


async def collect(
    runtime: Runtime,
    artifacts: list[Artifact] | None = None,
    *,
    max_bytes: int = MAX_ARTIFACT_BYTES,
    sweep: bool = True,
) -> dict[str, bytes | None]:
    """Archive each declared path (and :data:`ARTIFACTS_DIR` when ``sweep``) out of
    ``runtime``: ``{absolute path: tar bytes}``, in declaration order; an optional path that
    is missing maps to None. Raises :class:`ArtifactError` for a missing required path or
    archives over ``max_bytes`` together."""
    out: dict[str, bytes | None] = {}
    budget = max_bytes
    for entry in _entries(runtime, list(artifacts or []), sweep):
        quoted = shlex.quote(entry.source)
        probe = await _sh(runtime, f"test -e {quoted} || test -L {quoted}", check=False)
        if probe.exit_code != 0:
            if entry.required:
                raise ArtifactError(
                    f"declared artifact {entry.source!r} does not exist in the solver's runtime"
                )
            out[entry.source] = None
            continue
        archive = await _archive(runtime, entry, budget)
        budget -= len(archive)
        out[entry.source] = archive
    return out


async def _archive(runtime: Runtime, entry: Artifact, budget: int) -> bytes:
    path = f"/tmp/vf-artifact-{uuid.uuid4().hex}.tar"
    excludes = " ".join(f"--exclude={shlex.quote(p)}" for p in entry.exclude)
    try:
        await _sh(
            runtime,
            f"tar -cf {shlex.quote(path)} {excludes} -C / -- {shlex.quote(entry.source[1:])}",
            action=f"archive artifact {entry.source!r}",
        )
        size = await _sh(runtime, f"wc -c < {shlex.quote(path)}", action="size the archive")
        if int(size.stdout.strip() or 0) > budget:
            raise ArtifactError(_too_big(entry.source, budget))
        data = await runtime.read(path)
        if len(data) > budget:  # grown since it was measured
            raise ArtifactError(_too_big(entry.source, budget))
    finally:
        try:
            await runtime.run(["rm", "-f", path])
        except Exception:  # the runtime is about to go; a leftover temp file is harmless
            logger.debug("could not remove %s", path, exc_info=True)
    return _drop_special(data, entry.source)


def _too_big(source: str, budget: int) -> str:
    return (
        f"artifact {source!r} is over the {budget} bytes left of the collection's limit; "
        "declare a smaller path, exclude what grading does not need, or raise the task's "
        "artifact_max_bytes"
    )


def _drop_special(archive: bytes, source: str) -> bytes:
    """The archive without FIFOs and device nodes (and hard links to them)."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        members = tar.getmembers()
        special = {m.name for m in members if m.isfifo() or m.ischr() or m.isblk()}
        if not special:
            return archive
        dropped = special | {m.name for m in members if m.islnk() and m.linkname in special}
        logger.warning("artifact %r: dropped %d special file(s)", source, len(dropped))
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:", format=tar.format) as clean:
            for member in members:
                if member.name not in dropped:
                    clean.addfile(member, tar.extractfile(member) if member.isfile() else None)
    return buffer.getvalue()


async def restore(runtime: Runtime, collected: dict[str, bytes | None]) -> None:
    """Put ``collected`` (from :func:`collect`) back at its absolute paths in ``runtime``:
    every root is cleared first (a missing optional one stays absent), then each archive is
    extracted. Every archive is checked before the runtime is touched; refused in the
    ``subprocess`` runtime, where absolute paths are the host's."""
    if not collected:
        return
    if getattr(runtime.config, "type", None) == "subprocess":
        raise ArtifactError(
            "refusing to restore artifacts into the subprocess runtime: its absolute paths "
            "are this host's; grade in a sandbox (bwrap or docker)"
        )
    for root, archive in collected.items():
        check_archive(root, archive)
    roots = " ".join(shlex.quote(root) for root in collected)
    workdir = shlex.quote(runtime_workdir(runtime))
    await _sh(runtime, f"rm -rf -- {roots} && mkdir -p -- {workdir}", action="clear the roots")
    for root, archive in collected.items():
        if archive is None:
            continue
        path = f"/tmp/vf-artifact-{uuid.uuid4().hex}.tar"
        await runtime.write(path, archive)
        quoted = shlex.quote(path)
        await _sh(
            runtime,
            f"tar -xf {quoted} -C / && rm -f {quoted}",
            action=f"restore artifact {root!r}",
        )


def check_archive(root: str, archive: bytes | None) -> None:
    """Raise :class:`ArtifactError` unless ``archive`` only holds ``root`` and what is under
    it: regular files, directories, hard links to its own earlier files, and symbolic links
    whose relative targets stay under ``root`` without passing through another link."""
    base = PurePosixPath(root)
    if not base.is_absolute() or ".." in base.parts or base == PurePosixPath("/"):
        raise ArtifactError(f"artifact root {root!r} must be an absolute path below '/'")
    if archive is None:
        return
    inside = base.relative_to("/")
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
            members = tar.getmembers()
    except tarfile.TarError as exc:
        raise ArtifactError(f"artifact {root!r}: unreadable archive ({exc})") from exc
    names: set[PurePosixPath] = set()
    files: set[PurePosixPath] = set()
    links: dict[PurePosixPath, str] = {}
    for member in members:
        path = PurePosixPath(member.name)
        if (
            not member.name
            or path.is_absolute()
            or ".." in path.parts
            or not path.is_relative_to(inside)
        ):
            raise ArtifactError(f"artifact {root!r}: member {member.name!r} is outside it")
        if path in names:
            raise ArtifactError(f"artifact {root!r}: member {member.name!r} appears twice")
        names.add(path)
        if member.issym():
            links[path] = member.linkname
        elif member.islnk():
            target = PurePosixPath(member.linkname)
            if target not in files or target == path:
                raise ArtifactError(
                    f"artifact {root!r}: hard link {member.name!r} -> {member.linkname!r} "
                    "does not name a file of the archive"
                )
        elif member.isfile():
            files.add(path)
        elif not member.isdir():
            raise ArtifactError(f"artifact {root!r}: {member.name!r} is not a file or directory")
    for path in names:
        if any(parent in links for parent in path.parents):
            raise ArtifactError(f"artifact {root!r}: {str(path)!r} lies behind a symbolic link")
    for link, pointee in links.items():
        _check_link(root, inside, link, pointee, links)


def _check_link(
    root: str,
    inside: PurePosixPath,
    path: PurePosixPath,
    target: str,
    links: dict[PurePosixPath, str],
) -> None:
    bad = ArtifactError(f"artifact {root!r}: symbolic link {str(path)!r} -> {target!r} leaves it")
    if not target or PurePosixPath(target).is_absolute():
        raise bad
    at = path.parent
    for part in PurePosixPath(target).parts:
        at = at.parent if part == ".." else at / part
        if not at.is_relative_to(inside) or at in links:
            raise bad


async def _sh(runtime: Runtime, command: str, *, action: str = "", check: bool = True) -> Any:
    result = await runtime.run(["sh", "-c", command])
    if check and result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip()[-500:]
        raise ArtifactError(f"could not {action}: {detail}")
    return result
