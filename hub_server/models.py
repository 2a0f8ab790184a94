"""Database tables (SQLAlchemy 2 typed models). Schema changes go through Alembic."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    pass


class Namespace(Base):
    """Users and organisations share one namespace of owner names."""

    __tablename__ = "namespaces"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)  # normalised
    display_name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(10))  # "user" | "org"
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id"), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    namespace: Mapped[Namespace] = relationship(lazy="joined")

    @property
    def name(self) -> str:
        return self.namespace.name


class Membership(Base):
    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("user_id", "namespace_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    namespace_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id"))
    role: Mapped[str] = mapped_column(String(20), default="member")  # "owner" | "member"


class Environment(Base):
    """A project: ``owner/name``; the name is unique hub-wide (PEP 503 normalised)."""

    __tablename__ = "environments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id"), index=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)  # normalised
    display_name: Mapped[str] = mapped_column(String(200))
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Set once, when the project is created by an upload that declares it a fork of an
    # existing release (``vf env fork``) which the uploader could read then; never changed.
    forked_from_id: Mapped[int | None] = mapped_column(
        ForeignKey("environments.id", ondelete="SET NULL"), index=True, nullable=True
    )
    forked_from_version: Mapped[str | None] = mapped_column(String(100), nullable=True)
    namespace: Mapped[Namespace] = relationship(lazy="joined")


class Tag(Base):
    __tablename__ = "tags"
    __table_args__ = (UniqueConstraint("environment_id", "tag"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"), index=True)
    tag: Mapped[str] = mapped_column(String(100), index=True)


class Release(Base):
    __tablename__ = "releases"
    __table_args__ = (UniqueConstraint("environment_id", "version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"), index=True)
    version: Mapped[str] = mapped_column(String(100))  # canonical
    requires_python: Mapped[str | None] = mapped_column(String(200), nullable=True)
    requires_dist: Mapped[list[str]] = mapped_column(JSON, default=list)
    entry_points: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    yanked: Mapped[bool] = mapped_column(Boolean, default=False)
    yanked_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # `vf env validate` of the release's wheel, run by a hub worker in a sandbox:
    # "pending" | "passed" | "failed" | "error" (the worker could not run it), and its report
    validation_status: Mapped[str | None] = mapped_column(String(20), nullable=True)
    validation: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class File(Base):
    __tablename__ = "files"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    filename: Mapped[str] = mapped_column(String(300), unique=True)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    wheel_tags: Mapped[str] = mapped_column(String(300))  # "py3-none-any"
    blob_key: Mapped[str] = mapped_column(String(300))
    metadata_sha256: Mapped[str] = mapped_column(String(64))
    metadata_key: Mapped[str] = mapped_column(String(300))
    requires_python: Mapped[str | None] = mapped_column(String(200), nullable=True)
    uploaded_by: Mapped[int] = mapped_column(ForeignKey("users.id"))
    upload_time: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # 1 for a release's wheel, NULL for its sdist: unique per release, so a version is sealed
    # by its first wheel even under concurrent uploads (NULLs never collide)
    wheel_slot: Mapped[int | None] = mapped_column(Integer, nullable=True)

    __table_args__ = (Index("uq_files_release_wheel", "release_id", "wheel_slot", unique=True),)


class BurnedFilename(Base):
    """Every filename ever published; never reused, even after an admin delete."""

    __tablename__ = "burned_filenames"
    filename: Mapped[str] = mapped_column(String(300), primary_key=True)
    burned_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[str]] = mapped_column(JSON)
    restrict_owner: Mapped[str | None] = mapped_column(String(100), nullable=True)
    restrict_projects: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    user: Mapped[User] = relationship(lazy="joined")


class EvalResult(Base):
    __tablename__ = "eval_results"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    wheel_sha256: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(200))
    num_examples: Mapped[int] = mapped_column(Integer)
    rollouts_per_example: Mapped[int] = mapped_column(Integer)
    metrics: Mapped[dict[str, float]] = mapped_column(JSON)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    submitted_by: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # pushed runs (``vf eval push``): the run's id, its results blob, and whether the run's
    # wheel sha256 is a file of the release (False only when pushed with --allow-unverified)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True, unique=True)
    verified: Mapped[bool] = mapped_column(Boolean, default=True)
    results_key: Mapped[str | None] = mapped_column(String(300), nullable=True)
    results_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    results_size: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # what the hub knows (DESIGN 4.4): ``verified`` above means only "pinned to the release's
    # wheel sha256" (self-reported); re-scoring by a hub worker sets ``rescore_status``:
    # "pending" | "agree" | "mismatch" | "failed" | "skipped"; gold runs (the oracle model)
    # stay off the model ranking
    gold: Mapped[bool] = mapped_column(Boolean, default=False)
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    rescore_status: Mapped[str | None] = mapped_column(String(20), nullable=True)
    rescore_detail: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # hash of the run's records (not its metadata): identical results are one run per release
    content_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)

    __table_args__ = (
        Index("uq_eval_results_release_content", "release_id", "content_sha256", unique=True),
    )


class Job(Base):
    """Background work for `vf hub worker`: re-scoring a pushed run (``subject_id``: the
    eval result) or validating a release (``subject_id``: the release)."""

    __tablename__ = "hub_jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))  # "rescore" | "validate"
    subject_id: Mapped[int] = mapped_column(Integer)
    # who pushed the subject and its environment: the quotas and the fair claim count by them
    user_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    environment_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(20))  # queued | running | done | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    run_after: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    locked_by: Mapped[str | None] = mapped_column(String(100), nullable=True)
    locked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    log: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (
        Index("ix_hub_jobs_status_run_after", "status", "run_after"),
        Index("ix_hub_jobs_subject", "kind", "subject_id"),
        Index("ix_hub_jobs_user", "user_id", "status"),
        Index("ix_hub_jobs_environment", "environment_id", "status"),
    )


class JournalEntry(Base):
    """One row per change; its id is the serial behind ETags and the audit log."""

    __tablename__ = "journal"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    action: Mapped[str] = mapped_column(String(50))
    project: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)
    version: Mapped[str | None] = mapped_column(String(100), nullable=True)
    filename: Mapped[str | None] = mapped_column(String(300), nullable=True)
    actor: Mapped[str | None] = mapped_column(String(100), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebSession(Base):
    """A browser's sign-in: only the hash of its random id is stored. It acts for the token it
    was created from and ends at ``expires_at``, at sign-out (the row is deleted) or when the
    token is revoked or expires."""

    __tablename__ = "web_sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_hash: Mapped[str] = mapped_column(String(64), unique=True)
    token_id: Mapped[int] = mapped_column(
        ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class HubSecret(Base):
    """Server-side keys the hub makes for itself on first use (the CSRF key), shared by every
    process that uses the same database."""

    __tablename__ = "hub_secrets"
    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    value: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Download(Base):
    """One client's downloads of one release's files on one day count once: ``client`` is the
    sha256 of the user (signed in) or the address (anonymous), never the raw value."""

    __tablename__ = "downloads"
    __table_args__ = (UniqueConstraint("release_id", "client", "day", name="uq_downloads"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    release_id: Mapped[int] = mapped_column(
        ForeignKey("releases.id", ondelete="CASCADE"), index=True
    )
    client: Mapped[str] = mapped_column(String(64))
    day: Mapped[date] = mapped_column(Date)
