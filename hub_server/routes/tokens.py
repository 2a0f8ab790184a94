"""API tokens: create, list and revoke (``/api/v1/tokens``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from hub_server.auth import require_principal
from hub_server.deps import BIG, Auth, Service
from verifiers.hub import schemas as s

router = APIRouter(prefix="/api/v1")


@router.post("/tokens", response_model=s.TokenCreated, status_code=201)
def create_token(body: s.TokenCreate, who: Auth, service: Service) -> s.TokenCreated:
    return service.accounts.create_token(require_principal(who), body)


@router.get("/tokens", response_model=list[s.TokenOut])
def list_tokens(who: Auth, service: Service) -> list[s.TokenOut]:
    return service.accounts.list_tokens(require_principal(who))


@router.delete("/tokens/{token_id}", response_model=s.TokenOut)
def revoke_token(
    token_id: Annotated[int, Path(ge=1, le=BIG)], who: Auth, service: Service
) -> s.TokenOut:
    return service.accounts.revoke_token(require_principal(who), token_id)
