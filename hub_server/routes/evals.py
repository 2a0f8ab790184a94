"""Evaluation results of a release: ``/api/v1/projects/<owner>/<name>/versions/<v>/evals``."""

from __future__ import annotations

from fastapi import APIRouter

from hub_server.auth import require_principal
from hub_server.deps import Auth, Service
from verifiers.hub import schemas as s

router = APIRouter(prefix="/api/v1/projects/{owner}/{name}/versions/{version}")


@router.post("/evals", response_model=s.EvalResultOut, status_code=201)
def add_eval(
    owner: str, name: str, version: str, body: s.EvalResultIn, who: Auth, service: Service
) -> s.EvalResultOut:
    return service.evals.add_result(require_principal(who), owner, name, version, body)


@router.get("/evals", response_model=list[s.EvalResultOut])
def list_evals(
    owner: str, name: str, version: str, who: Auth, service: Service
) -> list[s.EvalResultOut]:
    return service.evals.list_results(who, owner, name, version)
