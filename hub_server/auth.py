"""Tokens (only a hash is stored), credentials parsing and the permission checks."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from hub_server.errors import Forbidden, Unauthorized

TOKEN_PREFIX = "vfh_"
SCOPE_ORDER = ("read", "upload", "yank", "manage", "admin")


def new_token_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(secret: str) -> str:
    # Secrets are 256 random bits, so a fast hash is enough (no dictionary to attack).
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def token_from_headers(authorization: str | None) -> str | None:
    """Bearer TOKEN, or Basic with password TOKEN (username ``__token__`` or anything), or
    Basic with the token as the username and no password."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    scheme = scheme.lower()
    value = value.strip()
    if scheme == "bearer":
        if not value:
            raise Unauthorized("empty Bearer token; send 'Authorization: Bearer vfh_...'")
        return value
    if scheme == "basic" and value:
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):  # binascii.Error, or non-ASCII input
            raise Unauthorized("malformed Basic credentials") from None
        user, sep, password = decoded.partition(":")
        if not password and user.startswith(TOKEN_PREFIX):  # http://vfh_...@host/ URLs
            return user
        if not sep or not password:
            raise Unauthorized("Basic credentials need a token as the password (user __token__)")
        return password
    raise Unauthorized(f"unsupported Authorization scheme {scheme!r}; use Bearer or Basic")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the user, their namespaces and what the token allows."""

    user_id: int
    user_name: str
    is_admin: bool  # an admin user AND a token with the admin scope
    namespaces: frozenset[str]  # names the user may act for
    token_id: int
    token_name: str
    scopes: frozenset[str]
    restrict_owner: str | None
    restrict_projects: frozenset[str] | None
    expires_at: datetime | None = None  # the token's; tokens it creates expire no later

    def has_scope(self, scope: str) -> bool:
        if "admin" in self.scopes:
            return True
        if scope == "read":
            return bool(self.scopes)  # every token can read what its user can read
        return scope in self.scopes

    def require_scope(self, scope: str) -> None:
        if not self.has_scope(scope):
            raise Forbidden(
                f"this token lacks the {scope!r} scope (it has: {', '.join(sorted(self.scopes))}); "
                f"create one with `vf token create --scope {scope}`"
            )

    def token_allows(self, owner: str, project: str | None) -> bool:
        if self.restrict_owner is not None and self.restrict_owner != owner:
            return False
        return not (
            self.restrict_projects is not None
            and (project is None or project not in self.restrict_projects)
        )

    def require_project(self, scope: str, owner: str, project: str | None) -> None:
        """The token has ``scope`` and may act on ``owner/project``; the user is a member."""
        self.require_scope(scope)
        if not self.token_allows(owner, project):
            what = f"{owner}/{project}" if project else owner
            raise Forbidden(
                f"this token is restricted to {self.describe_restriction()} and cannot act on "
                f"{what}"
            )
        if not (self.is_admin or owner in self.namespaces):
            raise Forbidden(
                f"you ({self.user_name}) are not a member of namespace {owner!r}; "
                f"push under your own namespace with --owner {self.user_name}"
            )

    @property
    def restricted(self) -> bool:
        return self.restrict_owner is not None or self.restrict_projects is not None

    def require_unrestricted(self, scope: str, action: str) -> None:
        """Hub-wide actions (users, orgs, the journal, other users' tokens) need ``scope`` on
        a token without owner or project restrictions: a restriction bounds every operation."""
        self.require_scope(scope)
        if self.restricted:
            raise Forbidden(
                f"this token is restricted ({self.describe_restriction()}) and cannot {action}; "
                "use a token without owner or project restrictions"
            )

    def describe_restriction(self) -> str:
        limits = []
        if self.restrict_owner is not None:
            limits.append(f"owner {self.restrict_owner}")
        if self.restrict_projects is not None:
            limits.append(f"projects {', '.join(sorted(self.restrict_projects)) or '(none)'}")
        return " and ".join(limits) or "none"

    def covers(self, owner: str | None, projects: list[str] | None) -> bool:
        """Whether a token restricted to ``owner``/``projects`` is within this token's reach
        (so this token may see or revoke it)."""
        if self.restrict_owner is not None and owner != self.restrict_owner:
            return False
        return self.restrict_projects is None or (
            projects is not None and set(projects) <= self.restrict_projects
        )

    def can_read(self, owner: str, project: str) -> bool:
        if not self.has_scope("read") or not self.token_allows(owner, project):
            return False
        return self.is_admin or owner in self.namespaces


def require_principal(principal: Principal | None) -> Principal:
    if principal is None:
        raise Unauthorized("authentication required: pass a token (vf login, or Bearer/Basic)")
    return principal
