"""Publishing: recording uploads (write-once files), yanking, admin deletes and collecting
unreferenced blobs."""

from __future__ import annotations

import hashlib
import io
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import IO

from packaging.utils import canonicalize_name
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hub_server import models as m
from hub_server.auth import Principal
from hub_server.errors import BadRequest, Conflict, Forbidden, NotFound, Unavailable
from hub_server.names import normalised_filename
from hub_server.protected_names import check_new_project_name
from hub_server.sealing import check_sealed
from hub_server.services.context import Part, now
from hub_server.services.jobs import check_quota, enqueue
from hub_server.services.journal import record
from hub_server.services.lookups import (
    RESERVED,
    find_release,
    fork_source,
    normalise_owner,
    release_of,
    release_out,
    version_key,
    visible_environment,
)
from hub_server.storage import blob_key, drop_partials
from hub_server.wheels import SDIST_TAG, WheelInfo, inspect_distribution
from verifiers.hub import schemas as s

log = logging.getLogger("hub_server")


@dataclass(frozen=True)
class _Upload:
    """One inspected upload: who sends it, what the archive says, and its hashes."""

    principal: Principal
    info: WheelInfo
    sha256: str
    size: int
    metadata_sha: str
    owner: str | None
    private: bool
    forked_from: ForkClaim | None = None

    def result(
        self, owner: str, name: str, *, created: bool, forked_from: s.ProjectRef | None = None
    ) -> s.UploadResult:
        return s.UploadResult(
            owner=owner,
            name=name,
            version=self.info.version,
            filename=self.info.filename,
            sha256=self.sha256,
            created=created,
            forked_from=forked_from,
        )


@dataclass(frozen=True)
class ForkClaim:
    """An upload's ``forked_from`` field, parsed: ``OWNER/NAME@VERSION``."""

    owner: str
    name: str
    version: str

    @classmethod
    def parse(cls, text: str) -> ForkClaim:
        spec, at, version = text.strip().partition("@")
        owner, slash, name = spec.partition("/")
        if (
            len(text) > MAX_FORK_CLAIM_CHARS
            or not (at and slash and owner and name and version)
            or "/" in name
            or any(c.isspace() for c in text.strip())
        ):
            raise BadRequest(
                f"forked_from must be OWNER/NAME@VERSION (at most {MAX_FORK_CLAIM_CHARS} "
                f"characters), not {text[:MAX_FORK_CLAIM_CHARS]!r}"
            )
        return cls(normalise_owner(owner), canonicalize_name(name), version)


MAX_FORK_CLAIM_CHARS = 300


class PublishingService(Part):
    def upload(
        self,
        principal: Principal,
        fileobj: IO[bytes],
        filename: str,
        *,
        sha256: str,
        size: int,
        owner: str | None = None,
        private: bool = False,
        forked_from: str | None = None,
    ) -> s.UploadResult:
        """Publish one wheel or sdist. ``fileobj`` holds the received bytes; ``sha256``/``size``
        were computed while receiving them. ``forked_from`` (``OWNER/NAME@VERSION``) records,
        when this upload creates the project, that it is a copy of that release: the release
        must exist and the uploader must be able to read it; on an existing project it must
        name the release already recorded."""
        principal.require_scope("upload")
        claim = ForkClaim.parse(forked_from) if forked_from else None
        fileobj.seek(0)
        info = inspect_distribution(
            fileobj,
            filename,
            max_uncompressed=self.ctx.settings.max_uncompressed_bytes,
            max_ratio=self.ctx.settings.max_compression_ratio,
        )
        metadata_sha = hashlib.sha256(info.metadata_bytes).hexdigest()
        owner_norm = normalise_owner(owner) if owner else None
        with self.session() as db:
            is_new = (
                db.scalar(
                    select(m.Environment.id).where(m.Environment.name == info.normalized_name)
                )
                is None
            )
        if is_new:  # a new name may not stand in for a well-known public package
            check_new_project_name(info.normalized_name, self.ctx.settings)
        up = _Upload(principal, info, sha256, size, metadata_sha, owner_norm, private, claim)
        # Check everything first, so refused and identical uploads store nothing.
        try:
            early = self._record_upload(up, publish=False)
        except IntegrityError:  # a concurrent upload is creating the project: decide below
            early = None
        if early is not None:
            return early
        self._store_blobs(up, fileobj)
        # A concurrent upload may win in between: unique constraints decide, and the retry
        # then answers as if this upload had come second. Its blobs, if unreferenced, are
        # left for `vf hub gc`.
        for _attempt in range(3):
            try:
                result = self._record_upload(up, publish=True)
                assert result is not None
                return result
            except IntegrityError:
                continue
        raise Conflict(f"{filename}: concurrent uploads changed this project; try again")

    def _store_blobs(self, up: _Upload, fileobj: IO[bytes]) -> None:
        """Write the file and its METADATA; the database commit that follows publishes them.
        Blobs are always written (content addressed, so a rewrite is identical): that
        refreshes their age, which protects them from a concurrent garbage collection."""
        for key, data in (
            (blob_key(up.sha256), fileobj),
            (blob_key(up.metadata_sha), io.BytesIO(up.info.metadata_bytes)),
        ):
            try:
                data.seek(0)
                self.ctx.storage.put(key, data)
            except Exception as e:
                log.exception("blob storage failed")
                raise Unavailable(
                    f"blob storage failed ({type(e).__name__}); nothing was published, try again"
                ) from None

    def _record_upload(self, up: _Upload, *, publish: bool) -> s.UploadResult | None:
        """Apply every rule; with ``publish`` commit the file, else roll back and return None
        (or the no-op result of an identical re-upload)."""
        with self.session() as db:
            env, env_owner, created = _resolve_project(db, up)
            fork = _fork_record(db, up, env, created=created)
            identical = _check_file_is_new(db, up, env, env_owner)
            if identical is not None:
                return identical.model_copy(update={"forked_from": fork})
            release = _find_or_create_release(db, up, env)
            if up.info.wheel_tags != SDIST_TAG and release.entry_points:  # it queues a job
                check_quota(db, self.ctx.settings, user_id=up.principal.user_id,
                            environment_id=env.id, what=f"publishing {up.info.filename}")  # fmt: skip
            if not publish:
                db.rollback()
                return None
            _add_file(db, up, env, release)
            db.commit()
            return up.result(env_owner, env.name, created=True, forked_from=fork)

    def collect_garbage(self, grace_seconds: float = 3600.0, dry_run: bool = False) -> list[str]:
        """Delete blobs that no published file references and unfinished blob writes (an
        upload killed while storing), when older than the grace period (in-flight uploads
        write their blobs just before committing)."""
        storage = self.ctx.storage
        cutoff = now() - timedelta(seconds=grace_seconds)
        deleted = drop_partials(storage, cutoff, dry_run=dry_run)
        candidates = [k for k, mtime in storage.list("sha256/") if mtime < cutoff]
        with self.session() as db:  # read after listing: anything committed since is kept
            used = {
                k for pair in db.execute(select(m.File.blob_key, m.File.metadata_key)) for k in pair
            }
        for key in candidates:
            if key in used:
                continue
            mtime = storage.mtime(key)
            if mtime is None or mtime >= cutoff:  # rewritten by an upload meanwhile
                continue
            if not dry_run:
                storage.delete(key)
            deleted.append(key)
        return deleted

    # ---------------------------------------------------------------- yanking and deleting

    def set_yanked(
        self,
        principal: Principal,
        owner: str,
        name: str,
        version: str,
        yanked: bool,
        reason: str | None,
    ) -> s.ReleaseOut:
        with self.session() as db:
            env = visible_environment(db, principal, owner, name)
            principal.require_project("yank", env.namespace.name, env.name)
            rel = release_of(db, env, version)
            rel.yanked = yanked
            rel.yanked_reason = (reason or None) if yanked else None
            env.updated_at = now()
            record(
                db,
                "yank" if yanked else "unyank",
                project=env.name,
                version=rel.version,
                actor=principal.user_name,
            )
            db.commit()
            return release_out(db, rel)

    def delete_release(
        self, principal: Principal, owner: str, name: str, version: str
    ) -> list[str]:
        """Admin only: remove a release and its files. Their filenames stay burned, so the
        same filename can never be published again; their blobs go with the next
        :meth:`collect_garbage`. Returns the deleted filenames."""
        principal.require_scope("admin")
        if not principal.is_admin:
            raise Forbidden("only hub admins can delete releases; yank it instead (vf env yank)")
        with self.session() as db:
            env = visible_environment(db, principal, owner, name)
            principal.require_project("admin", env.namespace.name, env.name)
            rel = release_of(db, env, version)
            files = db.scalars(select(m.File).where(m.File.release_id == rel.id)).all()
            names = [f.filename for f in files]
            for f in files:
                db.delete(f)
            db.execute(delete(m.EvalResult).where(m.EvalResult.release_id == rel.id))
            db.delete(rel)
            env.updated_at = now()
            record(
                db,
                "delete_release",
                project=env.name,
                version=rel.version,
                actor=principal.user_name,
            )
            db.commit()
        return names


# -------------------------------------------------------------------- the steps of an upload


def _resolve_project(db: Session, up: _Upload) -> tuple[m.Environment, str, bool]:
    """The project the upload belongs to, created (flushed, uncommitted) when new, with its
    owner's name and whether it was created; refuses names owned elsewhere and private
    uploads to public projects."""
    info, principal, owner = up.info, up.principal, up.owner
    env = db.scalar(select(m.Environment).where(m.Environment.name == info.normalized_name))
    created = env is None
    if env is not None:
        env_owner = env.namespace.name
        if (owner and owner != env_owner) or not (
            principal.is_admin or env_owner in principal.namespaces
        ):
            # a private project's owner is named only to those who may read it
            hide = env.private and not principal.can_read(env_owner, env.name)
            shown = "" if hide else f" ({env_owner})"
            raise Forbidden(
                f"the name {info.normalized_name!r} is taken by another owner{shown}; "
                "rename your package (the distribution name is unique hub-wide)"
            )
        principal.require_project("upload", env_owner, env.name)
        if up.private and not env.private:
            raise Conflict(
                f"{env_owner}/{env.name} is public: its files stay public, so a private "
                "upload to it is refused; upload without private, or publish the "
                "private version under a new name"
            )
    else:
        env_owner = owner or principal.restrict_owner or principal.user_name
        if info.normalized_name in RESERVED:
            raise BadRequest(f"{info.normalized_name!r} is a reserved name; rename it")
        principal.require_project("upload", env_owner, info.normalized_name)
        ns = db.scalar(select(m.Namespace).where(m.Namespace.name == env_owner))
        if ns is None:
            raise NotFound(f"namespace {env_owner!r} does not exist")
        env = m.Environment(
            namespace_id=ns.id,
            name=info.normalized_name,
            display_name=info.name,
            private=up.private,
        )
        db.add(env)
        db.flush()
    if not env.private and info.direct_url_requirements():
        raise BadRequest(
            f"public projects cannot depend on direct URLs: "
            f"{', '.join(info.direct_url_requirements())}; publish the dependency to an "
            "index and depend on it by name"
        )
    return env, env_owner, created


def _fork_record(
    db: Session, up: _Upload, env: m.Environment, *, created: bool
) -> s.ProjectRef | None:
    """Check the upload's fork claim against the hub and record it on a project this upload
    creates (flushed, uncommitted); the project's fork record as the uploader may see it.

    The claimed release must exist and be readable by the uploader (else the same
    :class:`NotFound` as for a missing one); a project that exists already keeps its record,
    and a claim that differs from it is refused."""
    claim = up.forked_from
    if claim is not None:
        source = visible_environment(db, up.principal, claim.owner, claim.name)
        version = release_of(db, source, claim.version).version
        if created:
            env.forked_from_id, env.forked_from_version = source.id, version
            db.flush()
        elif (env.forked_from_id, env.forked_from_version) != (source.id, version):
            raise Conflict(
                f"{env.namespace.name}/{env.name} exists already: a fork record is set only "
                "by the upload that creates a project; push without forked_from"
            )
    return fork_source(db, env, up.principal)


def _check_file_is_new(
    db: Session, up: _Upload, env: m.Environment, env_owner: str
) -> s.UploadResult | None:
    """None for a filename never used; the no-op result for an identical re-upload;
    :class:`Conflict` for other bytes under a published or removed filename."""
    filename = up.info.filename
    existing = db.scalar(select(m.File).where(m.File.filename == filename))
    if existing is not None:
        if existing.sha256 == up.sha256:
            return up.result(env_owner, env.name, created=False)
        raise Conflict(
            f"{filename} already exists with different contents; published files "
            "never change: bump the version and upload again"
        )
    if (
        db.get(m.BurnedFilename, filename) is not None
        or db.get(m.BurnedFilename, normalised_filename(filename)) is not None
    ):
        raise Conflict(
            f"{filename} was published before and removed; filenames are never "
            "reused: bump the version and upload again"
        )
    return None


def _find_or_create_release(db: Session, up: _Upload, env: m.Environment) -> m.Release:
    """The release for the upload's version (created when new); refuses a second file for
    the same tags."""
    info = up.info
    release = find_release(db, env.id, info.version)
    if release is None:
        release = m.Release(
            environment_id=env.id,
            version=info.version,
            requires_python=info.requires_python,
            requires_dist=info.requires_dist,
            entry_points=info.entry_points,
            summary=info.summary,
        )
        db.add(release)
        db.flush()
        return release
    if info.wheel_tags != SDIST_TAG and not _has_wheel(db, release.id):
        # The release came from an sdist: its first wheel's metadata is authoritative.
        release.requires_python = info.requires_python
        release.requires_dist = info.requires_dist
        release.entry_points = info.entry_points
        release.summary = info.summary
    check_sealed(db, release, info, env.name)
    clash = db.scalar(
        select(m.File).where(m.File.release_id == release.id, m.File.wheel_tags == info.wheel_tags)
    )
    if clash is not None:
        raise Conflict(
            f"version {info.version} of {env.name} already has {clash.filename} for "
            f"the same tags with different contents: bump the version and upload again"
        )
    return release


def _add_file(db: Session, up: _Upload, env: m.Environment, release: m.Release) -> None:
    """Add the file (its name burned for good), refresh the project's metadata and tags
    from the latest version, and journal the change; the caller commits."""
    info = up.info
    db.add(
        m.File(
            release_id=release.id,
            filename=info.filename,
            sha256=up.sha256,
            size=up.size,
            wheel_tags=info.wheel_tags,
            blob_key=blob_key(up.sha256),
            metadata_sha256=up.metadata_sha,
            metadata_key=blob_key(up.metadata_sha),
            requires_python=info.requires_python,
            uploaded_by=up.principal.user_id,
            wheel_slot=None if info.wheel_tags == SDIST_TAG else 1,
        )
    )
    db.add(m.BurnedFilename(filename=info.filename))
    if info.wheel_tags != SDIST_TAG and release.entry_points:
        # the release's wheel: a hub worker validates it in a sandbox (`vf env validate`)
        release.validation_status = "pending"
        enqueue(db, "validate", release.id, user_id=up.principal.user_id, environment_id=env.id)
    if (burned_as := normalised_filename(info.filename)) != info.filename:
        db.add(m.BurnedFilename(filename=burned_as))
    if _is_latest(db, env.id, info.version):
        env.summary = info.summary
        env.description = info.description
        env.display_name = info.name
        db.execute(delete(m.Tag).where(m.Tag.environment_id == env.id))
        for tag in info.keywords:
            db.add(m.Tag(environment_id=env.id, tag=tag))
    env.updated_at = now()
    record(
        db,
        "add_file",
        project=env.name,
        version=info.version,
        filename=info.filename,
        actor=up.principal.user_name,
    )


def _has_wheel(db: Session, release_id: int) -> bool:
    return (
        db.scalar(
            select(m.File.id)
            .where(m.File.release_id == release_id, m.File.wheel_tags != SDIST_TAG)
            .limit(1)
        )
        is not None
    )


def _is_latest(db: Session, env_id: int, version: str) -> bool:
    versions = db.scalars(select(m.Release.version).where(m.Release.environment_id == env_id)).all()
    return version_key(version) >= max((version_key(v) for v in versions), default=(0, ""))
