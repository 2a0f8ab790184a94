"""Accounts: users, organisations, memberships and API tokens (and authenticating them)."""

from __future__ import annotations

from datetime import datetime, timedelta

from packaging.utils import canonicalize_name
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hub_server import models as m
from hub_server.auth import Principal, hash_token, new_token_secret
from hub_server.errors import BadRequest, Conflict, Forbidden, NotFound, Unauthorized
from hub_server.services.context import Part, now
from hub_server.services.journal import record
from hub_server.services.lookups import RESERVED, normalise_owner
from verifiers.hub import schemas as s


def _new_namespace_name(name: str) -> str:
    norm = normalise_owner(name)
    if norm in RESERVED:
        raise BadRequest(f"{norm!r} is a reserved name; choose another")
    return norm


class AccountService(Part):
    # ---------------------------------------------------------------- users and orgs

    def create_user(self, name: str, *, admin: bool = False) -> tuple[str, str]:
        """Create a user and its namespace; returns ``(name, token secret)``."""
        norm = _new_namespace_name(name)
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
            record(db, "create_user", actor=norm)
            try:
                db.commit()
            except IntegrityError:
                raise Conflict(f"namespace {norm!r} already exists; choose another name") from None
        return norm, secret

    def create_org(self, principal: Principal, name: str) -> str:
        principal.require_unrestricted("manage", "create organisations")
        norm = _new_namespace_name(name)
        with self.session() as db:
            ns = m.Namespace(name=norm, display_name=name.strip(), kind="org")
            db.add(ns)
            try:
                db.flush()
            except IntegrityError:
                raise Conflict(f"namespace {norm!r} already exists; choose another name") from None
            db.add(m.Membership(user_id=principal.user_id, namespace_id=ns.id, role="owner"))
            record(db, "create_org", actor=principal.user_name)
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
            record(db, "add_member", actor=principal.user_name)
            db.commit()

    def namespace_exists(self, owner: str) -> bool:
        with self.session() as db:
            return (
                db.scalar(select(m.Namespace.id).where(m.Namespace.name == owner.lower()))
                is not None
            )

    # ---------------------------------------------------------------- tokens

    def authenticate(self, secret: str, client: str | None = None) -> Principal:
        """The principal a token secret stands for, or :class:`Unauthorized`.

        ``client`` (the caller's address) is held to the failed-authentication limit: past
        it, every unknown token from there is refused with :class:`TooManyRequests` until the
        oldest failure leaves the window. A valid token is never refused by it (someone who
        floods an address with bad tokens locks nobody out); guessing a token is hopeless
        anyway (256 random bits), the limit only keeps the noise bounded."""
        when = now()
        with self.session() as db:
            token = db.scalar(select(m.ApiToken).where(m.ApiToken.token_hash == hash_token(secret)))
            if token is not None:
                return principal_of(db, token, when)
        if client is not None:
            limiter = self.ctx.auth_limiter
            limiter.check(client)
            limiter.failed(client)
        raise Unauthorized("unknown token; log in again with a valid token (vf login)")

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
        """A new token for the caller, never broader, wider or longer-lived than the one used."""
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
        expires = now() + timedelta(days=req.expires_in_days) if req.expires_in_days else None
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
            record(db, "create_token", actor=principal.user_name)
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
                tok.revoked_at = now()
                # the browser sessions signed in with it end now, server-side
                db.execute(delete(m.WebSession).where(m.WebSession.token_id == tok.id))
                record(db, "revoke_token", actor=principal.user_name)
                db.commit()
            return _token_out(tok)


def principal_of(db: Session, token: m.ApiToken, when: datetime) -> Principal:
    """The principal of a stored token, or :class:`Unauthorized` when it is revoked or
    expired (the one place these rules live, for tokens and browser sessions alike)."""
    if token.revoked_at is not None:
        raise Unauthorized("this token was revoked; create a new one (vf token create)")
    if token.expires_at is not None and token.expires_at <= when:
        raise Unauthorized("this token has expired; create a new one (vf token create)")
    if token.last_used_at is None or when - token.last_used_at > timedelta(minutes=1):
        token.last_used_at = when
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
