"""The hub's behaviour, independent of HTTP: every rule lives here and raises domain errors."""

from __future__ import annotations

import hashlib
import io
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO
from urllib.parse import quote

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from sqlalchemy import ColumnElement, Engine, and_, delete, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from hub_server import models as m
from hub_server.auth import Principal, hash_token, new_token_secret
from hub_server.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    Unauthorized,
    Unavailable,
)
from hub_server.names import normalised_filename
from hub_server.protected_names import check_not_protected, load_protected
from hub_server.sealing import check_sealed
from hub_server.settings import Settings
from hub_server.storage import Storage, blob_key
from hub_server.upstream import check_not_upstream
from hub_server.wheels import SDIST_TAG, WheelInfo, inspect_distribution
from verifiers.hub import schemas as s

log = logging.getLogger("hub_server")

RESERVED = frozenset(
    {"simple", "files", "api", "legacy", "healthz", "metrics", "docs", "redoc", "static", "admin"}
)
_NS_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,37}[a-z0-9])?$")


def normalise_owner(name: str) -> str:
    n = name.strip().lower()
    if not _NS_RE.match(n):
        raise BadRequest(
            f"invalid namespace name {name!r}: use 1-39 letters, digits or '-', "
            "not starting or ending with '-'"
        )
    return n


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class IndexFile:
    filename: str
    sha256: str
    size: int
    requires_python: str | None
    upload_time: datetime
    yanked: bool
    yanked_reason: str | None
    metadata_sha256: str | None  # None: no PEP 658 metadata file is offered (sdists)
    version: str

    @property
    def url(self) -> str:
        return file_url(self.sha256, self.filename)


@dataclass(frozen=True)
class IndexProject:
    owner: str
    name: str
    private: bool
    files: list[IndexFile]
    versions: list[str]


@dataclass(frozen=True)
class ProjectState:
    owner: str
    private: bool
    serial: int


def file_url(sha256: str, filename: str) -> str:
    return f"/files/{sha256[:2]}/{sha256}/{quote(filename, safe='')}"


class HubService:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        storage: Storage,
        settings: Settings,
        engine: Engine,
    ) -> None:
        self.engine = engine
        self.sessions = sessions
        self.storage = storage
        self.settings = settings

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.sessions() as db:
            yield db

    # ---------------------------------------------------------------- users and tokens

    def create_user(self, name: str, *, admin: bool = False) -> tuple[str, str]:
        """Create a user and its namespace; returns ``(name, token secret)``."""
        norm = normalise_owner(name)
        if norm in RESERVED:
            raise BadRequest(f"{norm!r} is a reserved name; choose another")
        with self.session() as db:
            if db.scalar(select(m.Namespace).where(m.Namespace.name == norm)):
                raise Conflict(f"namespace {norm!r} already exists; choose another name")
            ns = m.Namespace(name=norm, display_name=name.strip(), kind="user")
            db.add(ns)
            db.flush()
            user = m.User(namespace_id=ns.id, is_admin=admin)
            db.add(user)
            db.flush()
            db.add(m.Membership(user_id=user.id, namespace_id=ns.id, role="owner"))
            scopes = ["read", "upload", "yank", "manage"] + (["admin"] if admin else [])
            secret = new_token_secret()
            db.add(
                m.ApiToken(
                    user_id=user.id, name="initial", token_hash=hash_token(secret), scopes=scopes
                )
            )
            self._journal(db, "create_user", actor=norm)
            try:
                db.commit()
            except IntegrityError:
                raise Conflict(f"namespace {norm!r} already exists; choose another name") from None
        return norm, secret

    def create_org(self, principal: Principal, name: str) -> str:
        principal.require_unrestricted("manage", "create organisations")
        norm = normalise_owner(name)
        if norm in RESERVED:
            raise BadRequest(f"{norm!r} is a reserved name; choose another")
        with self.session() as db:
            ns = m.Namespace(name=norm, display_name=name.strip(), kind="org")
            db.add(ns)
            try:
                db.flush()
            except IntegrityError:
                raise Conflict(f"namespace {norm!r} already exists; choose another name") from None
            db.add(m.Membership(user_id=principal.user_id, namespace_id=ns.id, role="owner"))
            self._journal(db, "create_org", actor=principal.user_name)
            db.commit()
        return norm

    def add_member(self, principal: Principal, org: str, user: str, role: str = "member") -> None:
        """An org owner (or admin) adds a user to the org; members may publish under it."""
        principal.require_scope("manage")
        if role not in ("member", "owner"):
            raise BadRequest(f"role must be 'member' or 'owner', not {role!r}")
        org_n, user_n = normalise_owner(org), normalise_owner(user)
        if principal.restrict_projects is not None or not principal.token_allows(org_n, None):
            raise Forbidden(
                f"this token is restricted to {principal.describe_restriction()} and cannot "
                f"manage the members of {org_n!r}"
            )
        with self.session() as db:
            ns = db.scalar(select(m.Namespace).where(m.Namespace.name == org_n))
            if ns is None or ns.kind != "org":
                raise NotFound(f"no organisation {org_n!r}")
            mine = db.scalar(
                select(m.Membership).where(
                    m.Membership.namespace_id == ns.id, m.Membership.user_id == principal.user_id
                )
            )
            if not principal.is_admin and (mine is None or mine.role != "owner"):
                raise Forbidden(f"only owners of {org_n!r} can add members")
            member = db.scalar(
                select(m.User)
                .join(m.Namespace, m.User.namespace_id == m.Namespace.id)
                .where(m.Namespace.name == user_n)
            )
            if member is None:
                raise NotFound(f"no user {user_n!r}")
            existing = db.scalar(
                select(m.Membership).where(
                    m.Membership.namespace_id == ns.id, m.Membership.user_id == member.id
                )
            )
            if existing is None:
                db.add(m.Membership(user_id=member.id, namespace_id=ns.id, role=role))
            else:
                existing.role = role
            self._journal(db, "add_member", actor=principal.user_name)
            db.commit()

    def authenticate(self, secret: str) -> Principal:
        now = _now()
        with self.session() as db:
            token = db.scalar(select(m.ApiToken).where(m.ApiToken.token_hash == hash_token(secret)))
            if token is None:
                raise Unauthorized("unknown token; log in again with a valid token (vf login)")
            if token.revoked_at is not None:
                raise Unauthorized("this token was revoked; create a new one (vf token create)")
            if token.expires_at is not None and token.expires_at <= now:
                raise Unauthorized("this token has expired; create a new one (vf token create)")
            if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
                token.last_used_at = now
                db.commit()
            names = db.scalars(
                select(m.Namespace.name)
                .join(m.Membership, m.Membership.namespace_id == m.Namespace.id)
                .where(m.Membership.user_id == token.user_id)
            ).all()
            user = token.user
            return Principal(
                user_id=user.id,
                user_name=user.namespace.name,
                # admin powers come with the admin scope: an admin's read or upload token (a
                # CI secret, say) acts as an ordinary user's
                is_admin=user.is_admin and "admin" in token.scopes,
                namespaces=frozenset(names),
                token_id=token.id,
                token_name=token.name,
                scopes=frozenset(token.scopes),
                restrict_owner=token.restrict_owner,
                restrict_projects=frozenset(token.restrict_projects)
                if token.restrict_projects is not None
                else None,
                expires_at=token.expires_at,
            )

    def whoami(self, principal: Principal) -> s.WhoAmI:
        with self.session() as db:
            token = db.get(m.ApiToken, principal.token_id)
            assert token is not None
            return s.WhoAmI(
                user=principal.user_name,
                admin=principal.is_admin,
                namespaces=sorted(principal.namespaces),
                token_name=principal.token_name,
                scopes=sorted(principal.scopes),
                token_owner=principal.restrict_owner,
                token_projects=sorted(principal.restrict_projects)
                if principal.restrict_projects is not None
                else None,
                expires_at=token.expires_at,
            )

    def create_token(self, principal: Principal, req: s.TokenCreate) -> s.TokenCreated:
        principal.require_scope("manage")
        scopes = sorted(set(req.scopes))
        if not scopes:
            raise BadRequest("a token needs at least one scope")
        extra = [sc for sc in scopes if not principal.has_scope(sc)]
        if extra:
            raise Forbidden(f"cannot grant scopes this token does not have: {', '.join(extra)}")
        owner = normalise_owner(req.owner) if req.owner else principal.restrict_owner
        if principal.restrict_owner and owner != principal.restrict_owner:
            raise Forbidden(f"this token is restricted to owner {principal.restrict_owner}")
        if owner and not (principal.is_admin or owner in principal.namespaces):
            raise Forbidden(f"you are not a member of namespace {owner!r}")
        projects = (
            sorted({canonicalize_name(p) for p in req.projects})
            if req.projects is not None
            else (
                sorted(principal.restrict_projects)
                if principal.restrict_projects is not None
                else None
            )
        )
        if principal.restrict_projects is not None and projects is not None:
            outside = set(projects) - principal.restrict_projects
            if outside:
                raise Forbidden(f"this token cannot grant access to {', '.join(sorted(outside))}")
        expires = _now() + timedelta(days=req.expires_in_days) if req.expires_in_days else None
        if principal.expires_at is not None:  # a token cannot outlive the one that made it
            expires = min(expires or principal.expires_at, principal.expires_at)
        secret = new_token_secret()
        with self.session() as db:
            tok = m.ApiToken(
                user_id=principal.user_id,
                name=req.name,
                token_hash=hash_token(secret),
                scopes=scopes,
                restrict_owner=owner,
                restrict_projects=projects,
                expires_at=expires,
            )
            db.add(tok)
            self._journal(db, "create_token", actor=principal.user_name)
            db.commit()
            return s.TokenCreated(**_token_out(tok).model_dump(), token=secret)

    def list_tokens(self, principal: Principal) -> list[s.TokenOut]:
        principal.require_scope("manage")
        with self.session() as db:
            toks = db.scalars(
                select(m.ApiToken)
                .where(m.ApiToken.user_id == principal.user_id)
                .order_by(m.ApiToken.id)
            ).all()
            # a restricted token sees only the tokens within its own restriction
            return [
                _token_out(t)
                for t in toks
                if principal.covers(t.restrict_owner, t.restrict_projects)
            ]

    def revoke_token(self, principal: Principal, token_id: int) -> s.TokenOut:
        principal.require_scope("manage")
        with self.session() as db:
            tok = db.get(m.ApiToken, token_id)
            reach = principal.is_admin and not principal.restricted
            if (
                tok is None
                or (tok.user_id != principal.user_id and not reach)
                or not principal.covers(tok.restrict_owner, tok.restrict_projects)
            ):
                raise NotFound(f"no token with id {token_id}; list yours with `vf token list`")
            if tok.revoked_at is None:
                tok.revoked_at = _now()
                self._journal(db, "revoke_token", actor=principal.user_name)
                db.commit()
            return _token_out(tok)

    # ---------------------------------------------------------------- uploads

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
    ) -> s.UploadResult:
        """Publish one wheel or sdist. ``fileobj`` holds the received bytes; ``sha256``/``size``
        were computed while receiving them."""
        principal.require_scope("upload")
        fileobj.seek(0)
        info = inspect_distribution(
            fileobj,
            filename,
            max_uncompressed=self.settings.max_uncompressed_bytes,
            max_ratio=self.settings.max_compression_ratio,
        )
        metadata_sha = hashlib.sha256(info.metadata_bytes).hexdigest()
        owner_norm = normalise_owner(owner) if owner else None
        if self.project_state(info.normalized_name) is None:
            self.check_new_project_name(info.normalized_name)
        args = (principal, info, sha256, size, metadata_sha, owner_norm, private)
        # Check everything first, so refused and identical uploads store nothing.
        try:
            early = self._record_upload(*args, publish=False)
        except IntegrityError:  # a concurrent upload is creating the project: decide below
            early = None
        if early is not None:
            return early
        # The blobs go next; the database commit is the publish point. Blobs are always
        # written (content addressed, so a rewrite is identical): that refreshes their age,
        # which protects them from a concurrent garbage collection.
        for key, data in (
            (blob_key(sha256), fileobj),
            (blob_key(metadata_sha), io.BytesIO(info.metadata_bytes)),
        ):
            try:
                data.seek(0)
                self.storage.put(key, data)
            except Exception as e:
                log.exception("blob storage failed")
                raise Unavailable(
                    f"blob storage failed ({type(e).__name__}); nothing was published, try again"
                ) from None
        # A concurrent upload may win in between: unique constraints decide, and the retry
        # then answers as if this upload had come second. Its blobs, if unreferenced, are
        # left for `vf hub gc`.
        for _attempt in range(3):
            try:
                result = self._record_upload(*args, publish=True)
                assert result is not None
                return result
            except IntegrityError:
                continue
        raise Conflict(f"{filename}: concurrent uploads changed this project; try again")

    def check_new_project_name(self, name: str) -> None:
        """A new project may not take a well-known public name (dependency confusion)."""
        check_not_protected(name, load_protected(self.settings.protected_names_file))
        if self.settings.upstream_index_url:
            check_not_upstream(name, self.settings.upstream_index_url)

    def _record_upload(
        self,
        principal: Principal,
        info: WheelInfo,
        sha256: str,
        size: int,
        metadata_sha: str,
        owner: str | None,
        private: bool,
        *,
        publish: bool,
    ) -> s.UploadResult | None:
        """Apply every rule; with ``publish`` commit the file, else roll back and return None
        (or the no-op result of an identical re-upload)."""
        with self.session() as db:
            env = db.scalar(select(m.Environment).where(m.Environment.name == info.normalized_name))
            if env is not None:
                env_owner = env.namespace.name
                if (owner and owner != env_owner) or not (
                    principal.is_admin or env_owner in principal.namespaces
                ):
                    # a private project's owner is named only to those who may read it
                    shown = (
                        ""
                        if env.private and not principal.can_read(env_owner, env.name)
                        else f" ({env_owner})"
                    )
                    raise Forbidden(
                        f"the name {info.normalized_name!r} is taken by another owner{shown}; "
                        "rename your package (the distribution name is unique hub-wide)"
                    )
                principal.require_project("upload", env_owner, env.name)
                if private and not env.private:
                    raise Conflict(
                        f"{env_owner}/{env.name} is public: its files stay public, so a private "
                        "upload to it is refused; upload without private, or publish the "
                        "private version under a new name"
                    )
            else:
                target = owner or principal.restrict_owner or principal.user_name
                if info.normalized_name in RESERVED:
                    raise BadRequest(f"{info.normalized_name!r} is a reserved name; rename it")
                principal.require_project("upload", target, info.normalized_name)
                ns = db.scalar(select(m.Namespace).where(m.Namespace.name == target))
                if ns is None:
                    raise NotFound(f"namespace {target!r} does not exist")
                env = m.Environment(
                    namespace_id=ns.id,
                    name=info.normalized_name,
                    display_name=info.name,
                    private=private,
                )
                db.add(env)
                db.flush()
                env_owner = target
            if not env.private and info.direct_url_requirements():
                raise BadRequest(
                    f"public projects cannot depend on direct URLs: "
                    f"{', '.join(info.direct_url_requirements())}; publish the dependency to an "
                    "index and depend on it by name"
                )
            existing = db.scalar(select(m.File).where(m.File.filename == info.filename))
            if existing is not None:
                if existing.sha256 == sha256:
                    return s.UploadResult(
                        owner=env_owner,
                        name=env.name,
                        version=info.version,
                        filename=info.filename,
                        sha256=sha256,
                        created=False,
                    )
                raise Conflict(
                    f"{info.filename} already exists with different contents; published files "
                    "never change: bump the version and upload again"
                )
            burned_as = normalised_filename(info.filename)
            if (
                db.get(m.BurnedFilename, info.filename) is not None
                or db.get(m.BurnedFilename, burned_as) is not None
            ):
                raise Conflict(
                    f"{info.filename} was published before and removed; filenames are never "
                    "reused: bump the version and upload again"
                )
            release = _find_release(db, env.id, info.version)
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
            else:
                if info.wheel_tags != SDIST_TAG and not _has_wheel(db, release.id):
                    # The release came from an sdist: its first wheel's metadata is authoritative.
                    release.requires_python = info.requires_python
                    release.requires_dist = info.requires_dist
                    release.entry_points = info.entry_points
                    release.summary = info.summary
                check_sealed(db, release, info, env.name)
                clash = db.scalar(
                    select(m.File).where(
                        m.File.release_id == release.id, m.File.wheel_tags == info.wheel_tags
                    )
                )
                if clash is not None:
                    raise Conflict(
                        f"version {info.version} of {env.name} already has {clash.filename} for "
                        f"the same tags with different contents: bump the version and upload again"
                    )
            if not publish:
                db.rollback()
                return None
            db.add(
                m.File(
                    release_id=release.id,
                    filename=info.filename,
                    sha256=sha256,
                    size=size,
                    wheel_tags=info.wheel_tags,
                    blob_key=blob_key(sha256),
                    metadata_sha256=metadata_sha,
                    metadata_key=blob_key(metadata_sha),
                    requires_python=info.requires_python,
                    uploaded_by=principal.user_id,
                    wheel_slot=None if info.wheel_tags == SDIST_TAG else 1,
                )
            )
            db.add(m.BurnedFilename(filename=info.filename))
            if burned_as != info.filename:
                db.add(m.BurnedFilename(filename=burned_as))
            if _is_latest(db, env.id, info.version):
                env.summary = info.summary
                env.description = info.description
                env.display_name = info.name
                db.execute(delete(m.Tag).where(m.Tag.environment_id == env.id))
                for tag in info.keywords:
                    db.add(m.Tag(environment_id=env.id, tag=tag))
            env.updated_at = _now()
            self._journal(
                db,
                "add_file",
                project=env.name,
                version=info.version,
                filename=info.filename,
                actor=principal.user_name,
            )
            db.commit()
            return s.UploadResult(
                owner=env_owner,
                name=env.name,
                version=info.version,
                filename=info.filename,
                sha256=sha256,
                created=True,
            )

    def collect_garbage(self, grace_seconds: float = 3600.0, dry_run: bool = False) -> list[str]:
        """Delete blobs that no published file references and unfinished blob writes (an
        upload killed while storing), when older than the grace period (in-flight uploads
        write their blobs just before committing)."""
        cutoff = _now() - timedelta(seconds=grace_seconds)
        candidates = [k for k, mtime in self.storage.list("sha256/") if mtime < cutoff]
        with self.session() as db:  # read after listing: anything committed since is kept
            used = {
                k for pair in db.execute(select(m.File.blob_key, m.File.metadata_key)) for k in pair
            }
        deleted = []
        for handle, started in list(self.storage.partials()):  # killed uploads' leftovers
            if started < cutoff:
                if not dry_run:
                    self.storage.drop_partial(handle)
                deleted.append(f"partial:{handle}")
        for key in candidates:
            if key in used:
                continue
            mtime = self.storage.mtime(key)
            if mtime is None or mtime >= cutoff:  # rewritten by an upload meanwhile
                continue
            if not dry_run:
                self.storage.delete(key)
            deleted.append(key)
        return deleted

    # ---------------------------------------------------------------- yanking

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
            env = self._env_for(db, principal, owner, name)
            principal.require_project("yank", env.namespace.name, env.name)
            rel = self._release(db, env, version)
            rel.yanked = yanked
            rel.yanked_reason = (reason or None) if yanked else None
            env.updated_at = _now()
            self._journal(
                db,
                "yank" if yanked else "unyank",
                project=env.name,
                version=rel.version,
                actor=principal.user_name,
            )
            db.commit()
            return self._release_out(db, rel)

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
            env = self._env_for(db, principal, owner, name)
            principal.require_project("admin", env.namespace.name, env.name)
            rel = self._release(db, env, version)
            files = db.scalars(select(m.File).where(m.File.release_id == rel.id)).all()
            names = [f.filename for f in files]
            for f in files:
                db.delete(f)
            db.execute(delete(m.EvalResult).where(m.EvalResult.release_id == rel.id))
            db.delete(rel)
            env.updated_at = _now()
            self._journal(
                db,
                "delete_release",
                project=env.name,
                version=rel.version,
                actor=principal.user_name,
            )
            db.commit()
        return names

    # ---------------------------------------------------------------- reading

    def _env_for(
        self, db: Session, principal: Principal | None, owner: str, name: str
    ) -> m.Environment:
        env = db.scalar(
            select(m.Environment)
            .join(m.Namespace, m.Environment.namespace_id == m.Namespace.id)
            .where(m.Namespace.name == owner.lower(), m.Environment.name == canonicalize_name(name))
        )
        if env is None or (
            env.private and not (principal and principal.can_read(env.namespace.name, env.name))
        ):
            raise NotFound(f"no environment {owner}/{name}; search with `vf env search`")
        return env

    def _release(self, db: Session, env: m.Environment, version: str) -> m.Release:
        rel = _find_release(db, env.id, version)
        if rel is None:
            raise NotFound(f"{env.namespace.name}/{env.name} has no version {version}")
        return rel

    def _release_out(self, db: Session, rel: m.Release) -> s.ReleaseOut:
        files = db.scalars(
            select(m.File).where(m.File.release_id == rel.id).order_by(m.File.id)
        ).all()
        return s.ReleaseOut(
            version=rel.version,
            yanked=rel.yanked,
            yanked_reason=rel.yanked_reason,
            created_at=rel.created_at,
            requires_python=rel.requires_python,
            requires_dist=rel.requires_dist,
            entry_points=rel.entry_points,
            files=[
                s.FileOut(
                    filename=f.filename,
                    url=file_url(f.sha256, f.filename),
                    sha256=f.sha256,
                    size=f.size,
                    requires_python=f.requires_python,
                    upload_time=f.upload_time,
                    metadata_sha256=None if f.wheel_tags == SDIST_TAG else f.metadata_sha256,
                )
                for f in files
            ],
        )

    def _project_out(self, db: Session, env: m.Environment, *, with_releases: bool) -> s.ProjectOut:
        rels = db.scalars(select(m.Release).where(m.Release.environment_id == env.id)).all()
        rels = sorted(rels, key=lambda r: _version_key(r.version), reverse=True)
        latest = next((r.version for r in rels if not r.yanked), None)
        tags = db.scalars(
            select(m.Tag.tag).where(m.Tag.environment_id == env.id).order_by(m.Tag.tag)
        ).all()
        return s.ProjectOut(
            owner=env.namespace.name,
            name=env.name,
            summary=env.summary,
            description=env.description if with_releases else None,
            private=env.private,
            tags=list(tags),
            latest_version=latest,
            created_at=env.created_at,
            updated_at=env.updated_at,
            releases=[self._release_out(db, r) for r in rels] if with_releases else None,
        )

    def get_project(self, principal: Principal | None, owner: str, name: str) -> s.ProjectOut:
        with self.session() as db:
            return self._project_out(
                db, self._env_for(db, principal, owner, name), with_releases=True
            )

    def get_release(
        self, principal: Principal | None, owner: str, name: str, version: str
    ) -> s.ReleaseOut:
        with self.session() as db:
            env = self._env_for(db, principal, owner, name)
            return self._release_out(db, self._release(db, env, version))

    def list_projects(
        self,
        principal: Principal | None,
        *,
        query: str | None = None,
        owner: str | None = None,
        tag: str | None = None,
        page: int = 1,
        per_page: int = 20,
    ) -> s.ProjectList:
        if page < 1 or not 1 <= per_page <= 100:
            raise BadRequest("page must be >= 1 and per_page between 1 and 100")
        with self.session() as db:
            stmt = select(m.Environment).join(
                m.Namespace, m.Environment.namespace_id == m.Namespace.id
            )
            if owner:
                stmt = stmt.where(m.Namespace.name == owner.lower())
            if tag:
                stmt = stmt.where(
                    m.Environment.id.in_(
                        select(m.Tag.environment_id).where(m.Tag.tag == tag.lower())
                    )
                )
            if query:
                like = f"%{query.lower()}%"
                stmt = stmt.where(
                    or_(
                        m.Environment.name.like(like),
                        func.lower(m.Environment.summary).like(like),
                        m.Environment.id.in_(
                            select(m.Tag.environment_id).where(m.Tag.tag.like(like))
                        ),
                    )
                )
            stmt = stmt.where(
                or_(m.Environment.private.is_(False), *self._private_filter(principal))
            )
            total = db.scalar(select(func.count()).select_from(stmt.subquery())) or 0
            envs = db.scalars(
                stmt.order_by(m.Environment.updated_at.desc(), m.Environment.name)
                .offset((page - 1) * per_page)
                .limit(per_page)
            ).all()
            return s.ProjectList(
                items=[self._project_out(db, e, with_releases=False) for e in envs],
                total=total,
                page=page,
                per_page=per_page,
            )

    @staticmethod
    def _private_filter(principal: Principal | None) -> list[ColumnElement[bool]]:
        """SQL conditions under which ``principal`` sees a private project."""
        if principal is None or not principal.has_scope("read"):
            return []
        conds: list[ColumnElement[bool]] = [m.Environment.private.is_(True)]
        if not principal.is_admin:
            conds.append(m.Namespace.name.in_(principal.namespaces))
        if principal.restrict_owner is not None:
            conds.append(m.Namespace.name == principal.restrict_owner)
        if principal.restrict_projects is not None:
            conds.append(m.Environment.name.in_(principal.restrict_projects))
        return [and_(*conds)]

    # ---------------------------------------------------------------- the simple index

    def index_names(
        self, principal: Principal | None, owner: str | None, include_private: bool
    ) -> list[str]:
        with self.session() as db:
            stmt = select(m.Environment.name, m.Environment.private, m.Namespace.name).join(
                m.Namespace, m.Environment.namespace_id == m.Namespace.id
            )
            if owner is not None:
                stmt = stmt.where(m.Namespace.name == owner.lower())
            rows = db.execute(stmt.order_by(m.Environment.name)).all()
            return [
                name
                for name, private, ns in rows
                if not private
                or (include_private and principal is not None and principal.can_read(ns, name))
            ]

    def namespace_exists(self, owner: str) -> bool:
        with self.session() as db:
            return (
                db.scalar(select(m.Namespace.id).where(m.Namespace.name == owner.lower()))
                is not None
            )

    def project_state(self, name: str) -> ProjectState | None:
        """Owner, visibility and journal serial of a project in one query (the cache key)."""
        serial = (
            select(func.max(m.JournalEntry.id))
            .where(m.JournalEntry.project == m.Environment.name)
            .scalar_subquery()
        )
        with self.session() as db:
            row = db.execute(
                select(m.Namespace.name, m.Environment.private, serial)
                .join(m.Namespace, m.Environment.namespace_id == m.Namespace.id)
                .where(m.Environment.name == name)
            ).first()
        if row is None:
            return None
        return ProjectState(owner=row[0], private=bool(row[1]), serial=int(row[2] or 0))

    def index_project(self, name: str) -> IndexProject | None:
        """The project's files for the simple index, or None; access is checked by the caller."""
        with self.session() as db:
            env = db.scalar(select(m.Environment).where(m.Environment.name == name))
            if env is None:
                return None
            rows = db.execute(
                select(m.File, m.Release)
                .join(m.Release, m.File.release_id == m.Release.id)
                .where(m.Release.environment_id == env.id)
                .order_by(m.File.filename)
            ).all()
            files = [
                IndexFile(
                    filename=f.filename,
                    sha256=f.sha256,
                    size=f.size,
                    requires_python=f.requires_python,
                    upload_time=f.upload_time,
                    yanked=r.yanked,
                    yanked_reason=r.yanked_reason,
                    metadata_sha256=None if f.wheel_tags == SDIST_TAG else f.metadata_sha256,
                    version=r.version,
                )
                for f, r in rows
            ]
            versions = sorted({f.version for f in files}, key=_version_key)
            return IndexProject(env.namespace.name, env.name, env.private, files, versions)

    def find_file(self, sha256: str, filename: str) -> tuple[m.File, str, str, bool] | None:
        """``(file, owner, project, private)`` for a download URL, or None."""
        with self.session() as db:
            row = db.execute(
                select(m.File, m.Environment)
                .join(m.Release, m.File.release_id == m.Release.id)
                .join(m.Environment, m.Release.environment_id == m.Environment.id)
                .where(m.File.sha256 == sha256, m.File.filename == filename)
            ).first()
            if row is None:
                return None
            f, env = row
            return f, env.namespace.name, env.name, env.private

    def last_serial(self) -> int:
        with self.session() as db:
            return db.scalar(select(func.max(m.JournalEntry.id))) or 0

    # ---------------------------------------------------------------- eval results

    def add_eval_result(
        self, principal: Principal, owner: str, name: str, version: str, req: s.EvalResultIn
    ) -> s.EvalResultOut:
        with self.session() as db:
            env = self._env_for(db, principal, owner, name)
            principal.require_project("upload", env.namespace.name, env.name)
            rel = self._release(db, env, version)
            shas = set(db.scalars(select(m.File.sha256).where(m.File.release_id == rel.id)).all())
            if req.wheel_sha256 not in shas:
                raise BadRequest(
                    f"wheel_sha256 {req.wheel_sha256} is not a file of {env.name} {rel.version}; "
                    "evaluate the published wheel and send its sha256"
                )
            row = m.EvalResult(
                release_id=rel.id,
                wheel_sha256=req.wheel_sha256,
                model=req.model,
                num_examples=req.num_examples,
                rollouts_per_example=req.rollouts_per_example,
                metrics=req.metrics,
                details=req.details,
                submitted_by=principal.user_id,
            )
            db.add(row)
            self._journal(
                db, "add_eval", project=env.name, version=rel.version, actor=principal.user_name
            )
            db.commit()
            return _eval_out(row, rel.version, principal.user_name)

    def list_eval_results(
        self, principal: Principal | None, owner: str, name: str, version: str
    ) -> list[s.EvalResultOut]:
        with self.session() as db:
            env = self._env_for(db, principal, owner, name)
            rel = self._release(db, env, version)
            rows = db.execute(
                select(m.EvalResult, m.Namespace.name)
                .join(m.User, m.EvalResult.submitted_by == m.User.id)
                .join(m.Namespace, m.User.namespace_id == m.Namespace.id)
                .where(m.EvalResult.release_id == rel.id)
                .order_by(m.EvalResult.id)
            ).all()
            return [_eval_out(r, rel.version, who) for r, who in rows]

    # ---------------------------------------------------------------- helpers

    @staticmethod
    def _journal(db: Session, action: str, **fields: str | None) -> None:
        db.add(m.JournalEntry(action=action, **fields))

    def journal(
        self, principal: Principal, since: int = 0, limit: int = 100
    ) -> list[s.JournalEntryOut]:
        """The audit log: every change with its serial, oldest first (admins only)."""
        principal.require_unrestricted("admin", "read the journal")
        if not principal.is_admin:
            raise Forbidden("only hub admins can read the journal")
        if not 1 <= limit <= 1000:
            raise BadRequest("limit must be between 1 and 1000")
        with self.session() as db:
            rows = db.scalars(
                select(m.JournalEntry)
                .where(m.JournalEntry.id > since)
                .order_by(m.JournalEntry.id)
                .limit(limit)
            ).all()
            return [
                s.JournalEntryOut(
                    serial=r.id,
                    action=r.action,
                    project=r.project,
                    version=r.version,
                    filename=r.filename,
                    actor=r.actor,
                    created_at=r.created_at,
                )
                for r in rows
            ]

    def counts(self) -> dict[str, int]:
        with self.session() as db:
            # public projects only: /metrics is unauthenticated, private projects are invisible
            public = select(m.Environment.id).where(m.Environment.private.is_(False))
            releases = select(m.Release.id).where(m.Release.environment_id.in_(public))
            return {
                "users": db.scalar(select(func.count()).select_from(m.User)) or 0,
                "environments": db.scalar(select(func.count()).select_from(public.subquery())) or 0,
                "releases": db.scalar(select(func.count()).select_from(releases.subquery())) or 0,
                "files": db.scalar(
                    select(func.count()).select_from(m.File).where(m.File.release_id.in_(releases))
                )
                or 0,
            }


def _version_key(v: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(v))
    except InvalidVersion:
        return (0, v)


def _has_wheel(db: Session, release_id: int) -> bool:
    return (
        db.scalar(
            select(m.File.id)
            .where(m.File.release_id == release_id, m.File.wheel_tags != SDIST_TAG)
            .limit(1)
        )
        is not None
    )


def _find_release(db: Session, env_id: int, version: str) -> m.Release | None:
    """The release whose version equals ``version`` under PEP 440 (1.0 == 1.0.0)."""
    try:
        want: Version | str = Version(version)
    except InvalidVersion:
        want = version
    for rel in db.scalars(select(m.Release).where(m.Release.environment_id == env_id)).all():
        if _version_key(rel.version)[1] == want:
            return rel
    return None


def _is_latest(db: Session, env_id: int, version: str) -> bool:
    versions = db.scalars(select(m.Release.version).where(m.Release.environment_id == env_id)).all()
    return _version_key(version) >= max((_version_key(v) for v in versions), default=(0, ""))


def _token_out(t: m.ApiToken) -> s.TokenOut:
    return s.TokenOut(
        id=t.id,
        name=t.name,
        scopes=list(t.scopes),
        owner=t.restrict_owner,
        projects=list(t.restrict_projects) if t.restrict_projects is not None else None,
        created_at=t.created_at,
        expires_at=t.expires_at,
        last_used_at=t.last_used_at,
        revoked=t.revoked_at is not None,
    )


def _eval_out(r: m.EvalResult, version: str, who: str) -> s.EvalResultOut:
    return s.EvalResultOut(
        id=r.id,
        version=version,
        submitted_by=who,
        created_at=r.created_at,
        wheel_sha256=r.wheel_sha256,
        model=r.model,
        num_examples=r.num_examples,
        rollouts_per_example=r.rollouts_per_example,
        metrics=r.metrics,
        details=r.details,
    )
