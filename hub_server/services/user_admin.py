"""Server-side user administration (``vf hub user list|delete``): the operator's tools, used
directly on the database, outside the HTTP API."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from hub_server import models as m
from hub_server.errors import NotFound
from hub_server.services.context import HubContext, now
from hub_server.services.journal import record
from hub_server.services.lookups import normalise_owner

__all__ = ["UserSummary", "delete_user", "list_users"]


@dataclass(frozen=True, slots=True)
class UserSummary:
    """One user, as an operator lists them."""

    name: str
    admin: bool
    created_at: datetime
    active_tokens: int
    projects: int


def list_users(ctx: HubContext) -> list[UserSummary]:
    """Every user, by name, with their live tokens and the projects in their namespace."""
    current = now()
    with ctx.session() as db:
        users = db.scalars(select(m.User)).all()
        out = []
        for user in users:
            tokens = db.scalar(
                select(func.count(m.ApiToken.id)).where(
                    m.ApiToken.user_id == user.id,
                    m.ApiToken.revoked_at.is_(None),
                    (m.ApiToken.expires_at.is_(None)) | (m.ApiToken.expires_at > current),
                )
            )
            projects = db.scalar(
                select(func.count(m.Environment.id)).where(
                    m.Environment.namespace_id == user.namespace_id
                )
            )
            out.append(
                UserSummary(user.name, user.is_admin, user.created_at, tokens or 0, projects or 0)
            )
    return sorted(out, key=lambda u: u.name)


def delete_user(ctx: HubContext, name: str) -> str:
    """Remove a user; returns ``"deleted"`` or ``"disabled"``.

    A user who never published anything (no project in their namespace, no uploaded file, no
    eval result) is deleted with their namespace, memberships and tokens. A user whose name is
    on published files is disabled instead: every token revoked and every org membership
    removed, while their namespace and files stay, so that nothing installed elsewhere breaks
    and the name is never handed to someone else.
    """
    norm = normalise_owner(name)
    with ctx.session() as db:
        user = db.scalar(select(m.User).join(m.Namespace).where(m.Namespace.name == norm))
        if user is None:
            raise NotFound(f"no user {norm!r}; list them with `vf hub user list`")
        published = (
            db.scalar(
                select(func.count(m.Environment.id)).where(
                    m.Environment.namespace_id == user.namespace_id
                )
            )
            or db.scalar(select(func.count(m.File.id)).where(m.File.uploaded_by == user.id))
            or db.scalar(
                select(func.count(m.EvalResult.id)).where(m.EvalResult.submitted_by == user.id)
            )
        )
        for token in db.scalars(select(m.ApiToken).where(m.ApiToken.user_id == user.id)):
            if published:
                if token.revoked_at is None:
                    token.revoked_at = now()
            else:
                db.delete(token)
        for membership in db.scalars(select(m.Membership).where(m.Membership.user_id == user.id)):
            if published and membership.namespace_id == user.namespace_id:
                continue  # keeps owning their own (published) namespace
            db.delete(membership)
        outcome = "disabled" if published else "deleted"
        if not published:
            namespace = db.get(m.Namespace, user.namespace_id)
            db.flush()
            db.delete(user)
            db.flush()
            if namespace is not None:
                db.delete(namespace)
        record(db, f"{outcome[:-1]}_user", actor=norm)
        db.commit()
    return outcome
