"""The audit log (admins): ``GET /api/v1/journal``, every change with its serial."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from hub_server.auth import require_principal
from hub_server.deps import BIG, Auth, Service
from verifiers.hub import schemas as s

router = APIRouter(prefix="/api/v1")


@router.get("/journal", response_model=list[s.JournalEntryOut])
def journal(
    who: Auth,
    service: Service,
    since: Annotated[int, Query(ge=0, le=BIG)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[s.JournalEntryOut]:
    return service.journal.entries(require_principal(who), since, limit)
