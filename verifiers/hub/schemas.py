"""Pydantic models of the hub's JSON API (``/api/v1``).

The server builds its responses from these models and the CLI parses responses with them.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, FiniteFloat, field_validator

Scope = Literal["read", "upload", "yank", "manage", "admin"]
SCOPES: tuple[str, ...] = ("read", "upload", "yank", "manage", "admin")


class ErrorBody(BaseModel):
    """Every non-2xx response of the hub has this body."""

    error: str = Field(description="machine-readable code, e.g. 'conflict', 'not_found'")
    message: str = Field(description="what went wrong and what to do next")


class FileOut(BaseModel):
    filename: str
    url: str
    sha256: str
    size: int
    requires_python: str | None = None
    upload_time: datetime
    metadata_sha256: str | None = None


class ReleaseOut(BaseModel):
    version: str
    yanked: bool = False
    yanked_reason: str | None = None
    created_at: datetime
    requires_python: str | None = None
    requires_dist: list[str] = Field(default_factory=list)
    entry_points: dict[str, str] = Field(
        default_factory=dict, description="the verifiers.environments entry points"
    )
    files: list[FileOut] = Field(default_factory=list)
    downloads: int = Field(default=0, description="downloads counted once per client and day")


class ArchiveEntry(BaseModel):
    path: str = Field(description="relative POSIX path (an sdist's top folder removed)")
    size: int


class ReleaseTree(BaseModel):
    """The files of a release's archive: its sdist when it has one, else its wheel."""

    filename: str = Field(description="the archive the listing was read from")
    sha256: str
    files: list[ArchiveEntry]


class ArchiveFile(BaseModel):
    """One file of a release's archive. ``text`` is None for binary content; at most
    ``limit`` bytes are served (``truncated`` says more exist)."""

    filename: str
    path: str
    size: int
    text: str | None = None
    binary: bool = False
    truncated: bool = False


class ProjectRef(BaseModel):
    """Another project, as a fork record names it."""

    owner: str
    name: str
    version: str | None = Field(
        default=None, description="the version forked (of the source, for both directions)"
    )


FORKED_FROM_DOC = (
    "the release this project was created as a copy of: declared by the upload that created "
    "the project (`vf env fork` does), the hub having checked then that the release existed "
    "and that the uploader could read it. It does not prove the code derives from it. Shown "
    "only to those who can read the source"
)


class ProjectOut(BaseModel):
    owner: str
    name: str
    summary: str | None = None
    description: str | None = None
    private: bool = False
    tags: list[str] = Field(default_factory=list)
    latest_version: str | None = None
    created_at: datetime
    updated_at: datetime
    releases: list[ReleaseOut] | None = None
    downloads: int = Field(default=0, description="all releases' counted downloads")
    forked_from: ProjectRef | None = Field(default=None, description=FORKED_FROM_DOC)
    forks: int = Field(default=0, description="forks of this project that the caller can see")
    fork_list: list[ProjectRef] | None = Field(
        default=None,
        description="on a single project's view: its forks the caller can see, newest first "
        "(at most 100), each with the version of this project it copied",
    )


class ProjectList(BaseModel):
    items: list[ProjectOut]
    total: int
    page: int
    per_page: int


class YankRequest(BaseModel):
    reason: str | None = Field(default=None, max_length=1000)


class TokenCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    scopes: list[Scope] = Field(
        default_factory=lambda: list[Scope](["read", "upload"]), min_length=1
    )
    owner: str | None = Field(default=None, description="restrict the token to this namespace")
    projects: list[str] | None = Field(
        default=None, description="restrict the token to these projects (may not exist yet)"
    )
    expires_in_days: float | None = Field(
        default=None, gt=0, le=36500, description="lifetime in days (at most 100 years)"
    )


class TokenOut(BaseModel):
    id: int
    name: str
    scopes: list[str]
    owner: str | None = None
    projects: list[str] | None = None
    created_at: datetime
    expires_at: datetime | None = None
    last_used_at: datetime | None = None
    revoked: bool = False


class TokenCreated(TokenOut):
    token: str = Field(description="the secret; shown once, only its hash is stored")


# Documented, not enforced here: the service's own check gives the clearer message.
_NAMESPACE_DOC: dict[str, Any] = {"pattern": "^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$"}


class UserCreate(BaseModel):
    name: str = Field(
        description="1-39 letters, digits or '-', not starting or ending with '-'",
        json_schema_extra=_NAMESPACE_DOC,
    )
    admin: bool = False


class UserCreated(BaseModel):
    name: str
    admin: bool
    token: str


class OrgCreate(BaseModel):
    name: str = Field(
        description="1-39 letters, digits or '-', not starting or ending with '-'",
        json_schema_extra=_NAMESPACE_DOC,
    )


class MemberAdd(BaseModel):
    user: str = Field(json_schema_extra=_NAMESPACE_DOC)
    role: Literal["member", "owner"] = "member"


class WhoAmI(BaseModel):
    user: str
    admin: bool
    namespaces: list[str]
    token_name: str
    scopes: list[str]
    token_owner: str | None = None
    token_projects: list[str] | None = None
    expires_at: datetime | None = None


class UploadResult(BaseModel):
    owner: str
    name: str
    version: str
    filename: str
    sha256: str
    created: bool = Field(description="false when the same bytes were already published")
    forked_from: ProjectRef | None = Field(default=None, description=FORKED_FROM_DOC)


class JournalEntryOut(BaseModel):
    serial: int
    action: str
    project: str | None = None
    version: str | None = None
    filename: str | None = None
    actor: str | None = None
    created_at: datetime


class EvalResultIn(BaseModel):
    wheel_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    model: str = Field(min_length=1, max_length=200)
    num_examples: int = Field(ge=0, le=2**31 - 1)
    rollouts_per_example: int = Field(default=1, ge=1, le=2**31 - 1)
    metrics: dict[str, FiniteFloat] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)

    @field_validator("details")
    @classmethod
    def _finite_details(cls, v: dict[str, Any]) -> dict[str, Any]:
        """NaN and infinities are not JSON: every backend must refuse them alike."""
        stack: list[Any] = [v]
        while stack:
            item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError("NaN and infinite numbers are not allowed; send finite values")
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        return v


class EvalResultOut(EvalResultIn):
    id: int
    version: str
    submitted_by: str
    created_at: datetime


class RunPushed(BaseModel):
    """The answer to ``PUT /api/v1/runs/{run_id}`` (``vf eval push``)."""

    run_id: str
    owner: str
    name: str
    version: str
    model: str
    pinned: bool = Field(
        default=False, description="the run's wheel sha256 is a file of this release"
    )
    verified: bool = Field(
        default=False,
        deprecated=True,
        description="deprecated alias of ``pinned`` (kept for one release): it never meant "
        "that the hub checked the results; read ``provenance`` for that",
    )
    created: bool = Field(description="false when this run was already pushed (a no-op)")
    provenance: str = Field(
        default="self-reported",
        description="what the hub knows of the results: self-reported (pinned to the release's "
        "wheel), unpinned, re-scored (a hub worker recomputed every record's reward and each "
        "agreed), re-score mismatch, not re-scorable, or gold (re-scored, and the worker's own "
        "oracle rollouts earned the same rewards)",
    )
    num_rollouts: int
    avg_reward: float | None = None
    url: str = Field(description="the run's page on the hub")


class LeaderboardRow(BaseModel):
    run_id: str | None = None
    model: str
    num_examples: int
    rollouts_per_example: int
    avg_reward: float | None = None
    reward_stderr: float | None = None
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    pinned: bool = Field(default=True, description="pinned to the release's wheel sha256")
    verified: bool = Field(
        default=True,
        deprecated=True,
        description="deprecated alias of ``pinned`` (kept for one release)",
    )
    provenance: str = Field(
        default="self-reported",
        description="self-reported (pinned to the release's wheel), unpinned, re-scored (a hub "
        "worker recomputed every record's reward in a sandbox and each agreed), re-score "
        "mismatch, not re-scorable (some reward could not be recomputed), re-score "
        "pending/failed, or gold (re-scored, and the worker's own oracle rollouts of the "
        "release earned the same rewards: off the model ranking)",
    )
    gold: bool = Field(default=False, description="provenance is gold (earned, never claimed)")
    hidden: bool = False
    rescore: dict[str, Any] | None = Field(default=None, description="the re-scoring outcome")
    submitted_by: str
    created_at: datetime
    url: str | None = None


class RunList(BaseModel):
    """``vf eval runs list --json``: the pushed runs of one version of an environment, as the
    hub lists them (best first; gold runs unless ``--no-gold``; hidden ones only to the
    environment's owners and admins)."""

    owner: str
    name: str
    version: str = Field(description="the version listed (the latest when none was named)")
    items: list[LeaderboardRow]
