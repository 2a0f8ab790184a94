"""Accounts API: ``whoami``, users (admin), organisations and their members."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from hub_server.auth import require_principal
from hub_server.deps import Auth, Service
from verifiers.hub import schemas as s

router = APIRouter(prefix="/api/v1")


@router.get("/whoami", response_model=s.WhoAmI)
def whoami(who: Auth, service: Service) -> s.WhoAmI:
    return service.accounts.whoami(require_principal(who))


@router.post("/users", response_model=s.UserCreated, status_code=201)
def create_user(body: s.UserCreate, who: Auth, service: Service) -> s.UserCreated:
    p = require_principal(who)
    p.require_scope("admin")
    name, token = service.accounts.create_user(body.name, admin=body.admin)
    return s.UserCreated(name=name, admin=body.admin, token=token)


@router.post("/orgs", status_code=201)
def create_org(body: s.UserCreate, who: Auth, service: Service) -> dict[str, str]:
    return {"name": service.accounts.create_org(require_principal(who), body.name)}


@router.post("/orgs/{org}/members", status_code=204)
def add_member(org: str, body: s.MemberAdd, who: Auth, service: Service) -> Response:
    service.accounts.add_member(require_principal(who), org, body.user, body.role)
    return Response(status_code=204)
