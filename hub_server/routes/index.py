"""The simple index (PEP 503 HTML / PEP 691 JSON by ``Accept``): the global ``/simple/``
views in ``router``, and the owner- and project-scoped views in ``scoped_router``, which
must be included last (their leading path parameter would capture ``/simple/`` etc.)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from packaging.utils import canonicalize_name

from hub_server.auth import Principal
from hub_server.deps import Auth, Fmt, HubSettings, Pages, Service
from hub_server.errors import NotFound, Unauthorized
from hub_server.index import HTML_V1, JSON_V1, PageCache, etag_matches, negotiate, render_root
from hub_server.services import HubService

router = APIRouter()
scoped_router = APIRouter()

_TEXT = {"schema": {"type": "string"}}
INDEX_DOC: dict[str, Any] = {
    "response_class": Response,
    "responses": {
        200: {
            "description": "PEP 503 HTML or PEP 691 JSON, chosen by Accept or ?format=",
            "content": {
                "text/html": _TEXT,
                JSON_V1: {"schema": {"type": "object"}},
                HTML_V1: _TEXT,
            },
        },
        301: {"description": "redirect to the normalised name"},
        304: {"description": "not modified (If-None-Match)"},
    },
}


def index_response(
    request: Request,
    body_fn: Callable[[str], str | bytes],
    etag_seed: str,
    fmt: str | None,
    private: bool = False,
) -> Response:
    """The negotiated page with ``Vary``, an ``ETag`` from ``etag_seed`` and revalidation
    caching; 304 when the client's copy is current, 406 when no offered type suits."""
    ctype = negotiate(request.headers.get("accept"), fmt)
    etag = f'"{hashlib.sha256(f"{etag_seed}|{ctype}".encode()).hexdigest()[:32]}"'
    cache = ("private, " if private else "") + "max-age=0, must-revalidate"
    headers = {"Vary": "Accept", "ETag": etag, "Cache-Control": cache}
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    media = ctype if ctype == JSON_V1 else f"{ctype}; charset=utf-8"
    return Response(body_fn(ctype), media_type=media, headers=headers)


def project_page(
    request: Request,
    service: HubService,
    pages: PageCache,
    name: str,
    owner: str | None,
    who: Principal | None,
    *,
    scoped: bool,
    fmt: str | None,
) -> Response:
    """A project's file list; private projects are 404 on the global index and 401 (so
    installers retry with credentials) on the scoped ones."""
    state = service.queries.project_state(name)
    if state is None or (owner is not None and state.owner != owner.lower()):
        raise NotFound("no such project on this index")
    if state.private and not (who and who.can_read(state.owner, name)):
        if not scoped:
            raise NotFound("no such project on this index")
        if who is None:
            raise Unauthorized(f"{state.owner}/{name} is private: authenticate with a read token")
        raise NotFound("no such project on this index")
    resp = index_response(
        request,
        lambda ct: pages.project(name, state.serial, ct),
        f"p{state.serial}|{name}",
        fmt,
        private=state.private,
    )
    resp.headers["X-PyPI-Last-Serial"] = str(state.serial)
    return resp


def normalised_redirect(request: Request, **parts: str) -> Response | None:
    """301 to the same URL with each raw path segment replaced by its normalised form."""
    path = request.url.path
    for raw, norm in parts.items():
        if raw != norm:
            path = path.replace(f"/{raw}/", f"/{norm}/", 1)
    if path != request.url.path:
        url = path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(url, status_code=301)
    return None


# -------------------------------------------------------------------- the global index


@router.api_route("/simple/", methods=["GET", "HEAD"], **INDEX_DOC)
def simple_root(request: Request, who: Auth, service: Service, fmt: Fmt = None) -> Response:
    names = service.queries.index_names(who, None, include_private=False)
    seed = f"r{service.journal.last_serial()}"
    return index_response(request, lambda ct: render_root(names, ct), seed, fmt)


@router.api_route("/simple/{name}/", methods=["GET", "HEAD"], **INDEX_DOC)
def simple_project(
    request: Request,
    name: str,
    who: Auth,
    service: Service,
    pages: Pages,
    settings: HubSettings,
    fmt: Fmt = None,
) -> Response:
    norm = canonicalize_name(name)
    if redirect := normalised_redirect(request, **{name: norm}):
        return redirect
    upstream = settings.upstream_index_url
    if upstream and service.queries.project_state(norm) is None:
        return RedirectResponse(f"{upstream.rstrip('/')}/{norm}/", status_code=302)
    return project_page(request, service, pages, norm, None, who, scoped=False, fmt=fmt)


# -------------------------------------------------------------------- scoped indexes


def _owner_or_404(service: HubService, owner: str) -> None:
    if not service.accounts.namespace_exists(owner):
        raise NotFound(f"no namespace {owner!r} on this hub")


@scoped_router.api_route("/{owner}/simple/", methods=["GET", "HEAD"], **INDEX_DOC)
def owner_root(
    request: Request, owner: str, who: Auth, service: Service, fmt: Fmt = None
) -> Response:
    if redirect := normalised_redirect(request, **{owner: owner.lower()}):
        return redirect
    _owner_or_404(service, owner)
    names = service.queries.index_names(who, owner, include_private=True)
    seed = f"o{service.journal.last_serial()}|{owner}|{who.token_id if who else 0}"
    return index_response(
        request, lambda ct: render_root(names, ct), seed, fmt, private=who is not None
    )


@scoped_router.api_route("/{owner}/simple/{name}/", methods=["GET", "HEAD"], **INDEX_DOC)
def owner_project(
    request: Request,
    owner: str,
    name: str,
    who: Auth,
    service: Service,
    pages: Pages,
    fmt: Fmt = None,
) -> Response:
    norm = canonicalize_name(name)
    if redirect := normalised_redirect(request, **{owner: owner.lower(), name: norm}):
        return redirect
    _owner_or_404(service, owner)
    return project_page(request, service, pages, norm, owner, who, scoped=True, fmt=fmt)


@scoped_router.api_route("/{owner}/{project}/simple/", methods=["GET", "HEAD"], **INDEX_DOC)
def project_root(
    request: Request, owner: str, project: str, who: Auth, service: Service, fmt: Fmt = None
) -> Response:
    norm = canonicalize_name(project)
    if redirect := normalised_redirect(request, **{owner: owner.lower(), project: norm}):
        return redirect
    state = service.queries.project_state(norm)
    if state is None or state.owner != owner.lower():
        raise NotFound(f"no environment {owner}/{norm} on this hub")
    if state.private and not (who and who.can_read(state.owner, norm)):
        if who is None:
            raise Unauthorized(f"{owner}/{norm} is private: authenticate with a read token")
        raise NotFound(f"no environment {owner}/{norm} on this hub")
    seed = f"x{state.serial}|{norm}"
    return index_response(
        request, lambda ct: render_root([norm], ct), seed, fmt, private=state.private
    )


@scoped_router.api_route("/{owner}/{project}/simple/{name}/", methods=["GET", "HEAD"], **INDEX_DOC)
def project_page_scoped(
    request: Request,
    owner: str,
    project: str,
    name: str,
    who: Auth,
    service: Service,
    pages: Pages,
    fmt: Fmt = None,
) -> Response:
    norm, pnorm = canonicalize_name(name), canonicalize_name(project)
    if redirect := normalised_redirect(
        request, **{owner: owner.lower(), project: pnorm, name: norm}
    ):
        return redirect
    if norm != pnorm:
        raise NotFound(
            f"this index serves only {owner}/{pnorm}; {norm} must come from another index"
        )
    return project_page(request, service, pages, norm, owner, who, scoped=True, fmt=fmt)
