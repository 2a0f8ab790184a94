"""The hub's web pages, server-rendered: environments list and search, an environment's page
(README, versions, install, files, leaderboard), a release's files (a tree, and each file
highlighted by :mod:`hub_server.highlight`), an owner's page, pushed runs, sign-in.

Browsers (``Accept: text/html``) get HTML; other clients asking the same URLs get JSON. The
pages need no script and load nothing from elsewhere. Register this router last: its
``/{owner}`` and ``/{owner}/{name}`` patterns would otherwise capture other routes.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool

from hub_server.auth import Principal
from hub_server.errors import BadRequest, Forbidden, HubError, NotFound
from hub_server.markdown import render_readme
from hub_server.services import HubService
from hub_server.services.lookups import RESERVED
from hub_server.services.queries import SORTS
from hub_server.websession import (
    SESSION_COOKIE,
    clear_session,
    client_of,
    csrf_ok,
    csrf_token,
    page_principal,
    remember_nonce,
    same_origin,
    set_session,
)
from verifiers.hub import schemas as s
from verifiers.web.pages import rollout_page, run_page
from verifiers.web.render import RunUrls, make_env, static_file

router = APIRouter(include_in_schema=False)
TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
PER_PAGE = 20
# The pages run no script at all; README images may come from any https URL.
PAGE_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' https: data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)


def wants_html(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/html" in accept or "application/xhtml+xml" in accept


def _env(request: Request) -> Any:
    state = request.app.state
    if getattr(state, "web_env", None) is None:
        state.web_env = make_env([TEMPLATES])
    return state.web_env


def _service(request: Request) -> HubService:
    return request.app.state.service  # type: ignore[no-any-return]


def _chrome(request: Request, who: Principal | None) -> dict[str, Any]:
    return {
        "site": "verifiers hub",
        "home": "/",
        "static": "/static",
        "nav": [("environments", "/")],
        "account": {"user": who.user_name if who else None, "csrf": csrf_token(request)},
    }


def _html(
    request: Request, who: Principal | None, template: str, status: int = 200, **ctx: Any
) -> Response:
    chrome = _chrome(request, who)
    body = _env(request).get_template(template).render(chrome=chrome, **ctx)
    return _page(request, body, status, private=who is not None)


def _page(request: Request, body: str, status: int = 200, *, private: bool) -> Response:
    resp = HTMLResponse(body, status_code=status)
    resp.headers["Vary"] = "Accept, Cookie"
    resp.headers["Cache-Control"] = ("private, " if private else "") + "no-cache"
    resp.headers["Content-Security-Policy"] = PAGE_CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    remember_nonce(request, resp)
    return resp


def error_page(request: Request, exc: HubError) -> Response:
    """A domain error as an HTML page (for browsers on page routes)."""
    who = None
    titles = {
        404: "Not found",
        401: "Sign in needed",
        403: "Not allowed",
        429: "Too many attempts",
    }
    resp = _html(
        request,
        who,
        "error.html",
        exc.status,
        code=exc.status,
        title=titles.get(exc.status, "Error"),
        message=plain_html(exc.message),
    )
    resp.headers.update(exc.http_headers() or {})
    return resp


def plain_html(message: str) -> Markup:
    """An error message written for terminals, as HTML: what it puts in backticks (commands,
    names) becomes ``<code>``, and no backtick is left on the page."""
    parts = message.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show the text as it is, less the mark
        return Markup.escape(message.replace("`", ""))
    return Markup("").join(
        Markup("<code>{}</code>").format(part) if i % 2 else Markup.escape(part)
        for i, part in enumerate(parts)
    )


def _guard(request: Request, fn: Any) -> Any:
    """Run a page handler; a domain error becomes an HTML page for browsers."""
    try:
        return fn()
    except HubError as exc:
        if wants_html(request):
            return error_page(request, exc)
        raise


# ---------------------------------------------------------------------------- static


@router.get("/static/{name}")
def static(name: str) -> Response:
    found = static_file(name)
    if found is None:
        raise NotFound(f"no static file {name}")
    return Response(found[0], media_type=found[1], headers={"Cache-Control": "max-age=3600"})


# ---------------------------------------------------------------------------- sign-in


@router.get("/-/signin")
def signin_form(request: Request, next: str = "/") -> Response:
    who = page_principal(request)
    return _html(
        request, who, "signin.html", csrf=csrf_token(request), next=_local(next), message=""
    )


@router.post("/-/signin")
def signin(
    request: Request,
    token: Annotated[str, Form(max_length=500)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
    next: Annotated[str, Form(max_length=2000)] = "/",
) -> Response:
    def again(message: str, status: int, headers: dict[str, str] | None = None) -> Response:
        resp = _html(
            request,
            None,
            "signin.html",
            status,
            csrf=csrf_token(request),
            next=_local(next),
            message=message,
        )
        resp.headers.update(headers or {})
        return resp

    if not same_origin(request):
        return again("this sign-in form was sent from another site; sign in here", 403)
    if not csrf_ok(request, csrf):
        return again("the form expired or came from another site; sign in again", 400)
    sessions = _service(request).web_sessions
    try:
        session_id, ttl = sessions.sign_in(token.strip(), client_of(request))
    except HubError as e:
        return again(f"sign-in failed: {e.message}", e.status, e.http_headers())
    old = request.cookies.get(SESSION_COOKIE)
    if old:  # a sign-in replaces this browser's earlier session, which ends here
        sessions.sign_out(old)
    resp = RedirectResponse(_local(next), status_code=303)
    set_session(request, resp, session_id, ttl)
    return resp


@router.post("/-/signout")
def signout(request: Request, csrf: Annotated[str, Form(max_length=200)] = "") -> Response:
    if not same_origin(request):
        raise Forbidden("this sign-out form was sent from another site; sign out on the hub")
    who = page_principal(request)
    if who is not None and not csrf_ok(request, csrf):
        raise BadRequest("the sign-out form expired; reload the page and try again")
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        _service(request).web_sessions.sign_out(session_id)
    resp = RedirectResponse("/", status_code=303)
    clear_session(resp)
    return resp


def _local(url: str) -> str:
    """Only same-site paths are followed after sign-in (no open redirect)."""
    return url if url.startswith("/") and not url.startswith(("//", "/\\")) else "/"


# ---------------------------------------------------------------------------- lists


def _listing(
    request: Request, owner: str | None, q: str, tag: str, sort: str, page: int
) -> Response:
    who = page_principal(request, cookie_ok=wants_html(request))
    svc = _service(request)
    result = svc.queries.list_projects(
        who,
        query=q or None,
        owner=owner,
        tag=tag or None,
        page=page,
        per_page=PER_PAGE,
        sort=sort if sort in SORTS else "recent",
    )
    if not wants_html(request):
        return JSONResponse(result.model_dump(mode="json"))
    items = result.items
    return _html(
        request,
        who,
        "projects.html",
        heading=f"{owner}'s environments" if owner else "Environments",
        action=f"/{owner}" if owner else "/",
        items=items,
        total=result.total,
        q=q,
        tag=tag,
        sort=sort if sort in SORTS else "recent",
        page=page,
        pages=max(1, math.ceil(result.total / PER_PAGE)),
    )


Q = Annotated[str, Query(max_length=200)]


@router.get("/")
def home(
    request: Request,
    q: Q = "",
    tag: Q = "",
    sort: Q = "recent",
    page: Annotated[int, Query(ge=1, le=2**31)] = 1,
) -> Response:
    return _guard(request, lambda: _listing(request, None, q, tag, sort, page))  # type: ignore[no-any-return]


@router.get("/{owner}")
def owner_page(
    request: Request,
    owner: str,
    q: Q = "",
    tag: Q = "",
    sort: Q = "recent",
    page: Annotated[int, Query(ge=1, le=2**31)] = 1,
) -> Response:
    def go() -> Response:
        if owner.lower() in RESERVED or not _service(request).accounts.namespace_exists(owner):
            raise NotFound(f"no user or organisation {owner!r} on this hub")
        if owner != owner.lower():
            return RedirectResponse(f"/{owner.lower()}", status_code=301)
        return _listing(request, owner, q, tag, sort, page)

    return _guard(request, go)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- one environment


@router.get("/{owner}/{name}")
def project_page(
    request: Request, owner: str, name: str, version: Q = "", gold: bool = False
) -> Response:
    if name == "simple":  # the scoped index lives at /OWNER/simple/
        return RedirectResponse(f"/{owner}/simple/", status_code=301)

    def go() -> Response:
        who = page_principal(request, cookie_ok=wants_html(request))
        svc = _service(request)
        p = svc.queries.get_project(who, owner, name)
        if (p.owner, p.name) != (owner, name):
            return RedirectResponse(f"/{p.owner}/{p.name}", status_code=301)
        if not wants_html(request):
            return JSONResponse(p.model_dump(mode="json"))
        rels = p.releases or []
        want = version or p.latest_version or (rels[0].version if rels else "")
        rel = next((r for r in rels if r.version == want), None)
        if version and rel is None:
            raise NotFound(f"{owner}/{name} has no version {version}")
        runs = _service(request).runs
        everything = (
            runs.leaderboard(who, owner, name, rel.version, include_gold=True) if rel else []
        )
        board = everything if gold else [row for row in everything if not row.gold]
        gold_runs = len(everything) - len([row for row in everything if not row.gold])
        ks = sorted({k for row in board for k in row.pass_at_k if k.isdigit()}, key=int)
        board_ks = [ks[0], ks[-1]] if len(ks) > 1 else ks
        validation = runs.validation(who, owner, name, rel.version) if rel else None
        return _html(
            request,
            who,
            "project.html",
            p=p,
            rel=rel,
            board=board,
            board_ks=board_ks,
            validation=validation,
            gold=gold,
            gold_runs=gold_runs,
            readme=Markup(render_readme(p.description)),
            base_url=str(request.base_url).rstrip("/"),
            pip_steps=pip_steps(str(request.base_url).rstrip("/"), p, rel),
        )

    return _guard(request, go)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- a release's files


def _files_base(owner: str, name: str, version: str) -> str:
    return f"/{quote(owner, safe='')}/{quote(name, safe='')}/files/{quote(version, safe='')}"


def tree_rows(owner: str, name: str, version: str, tree: s.ReleaseTree) -> list[dict[str, Any]]:
    """The archive's files as rows of a tree: each folder once, before what it holds
    (folders first, then files, by name), each row indented by its depth. The paths are the
    archive's checked member names; each is URL-quoted into its link and escaped by the
    template."""
    base = _files_base(owner, name, version)
    rows: list[dict[str, Any]] = []
    shown: set[str] = set()

    def folders_first(entry: s.ArchiveEntry) -> list[tuple[int, str]]:
        parts = entry.path.split("/")
        return [(0, p) for p in parts[:-1]] + [(1, parts[-1])]

    for entry in sorted(tree.files, key=folders_first):
        parts = entry.path.split("/")
        for depth in range(len(parts) - 1):
            folder = "/".join(parts[: depth + 1])
            if folder not in shown:
                shown.add(folder)
                rows.append({"label": parts[depth], "indent": _indent(depth), "href": None})
        rows.append(
            {
                "label": parts[-1],
                "indent": _indent(len(parts) - 1),
                "href": f"{base}/{quote(entry.path, safe='/')}",
                "size": entry.size,
            }
        )
    return rows


def _indent(depth: int) -> str:
    return "" if depth == 0 else (f"indent-{depth}" if depth <= 4 else "indent-deep")


@router.get("/{owner}/{name}/files/{version}/")
def release_files_page(request: Request, owner: str, name: str, version: str) -> Response:
    """The files of a release's stored archive (its sdist, else its wheel), as a tree."""

    def go() -> Response:
        who = page_principal(request, cookie_ok=wants_html(request))
        tree = _service(request).browse.tree(who, owner, name, version)
        if not wants_html(request):
            return JSONResponse(tree.model_dump(mode="json"))
        return _html(
            request,
            who,
            "release_files.html",
            owner=owner,
            name=name,
            version=version,
            tree=tree,
            rows=tree_rows(owner, name, version, tree),
        )

    return _guard(request, go)  # type: ignore[no-any-return]


@router.get("/{owner}/{name}/files/{version}")
def release_files_slash(owner: str, name: str, version: str) -> Response:
    return RedirectResponse(_files_base(owner, name, version) + "/", status_code=301)


@router.get("/{owner}/{name}/files/{version}/{path:path}")
def release_file_page(request: Request, owner: str, name: str, version: str, path: str) -> Response:
    """One file of a release's stored archive: text highlighted (bounded, escaped), binary
    content named as such, a long file cut at the service's limit."""
    from hub_server.highlight import render_source
    from hub_server.services.browse import MAX_SHOWN_BYTES

    def go() -> Response:
        who = page_principal(request, cookie_ok=wants_html(request))
        shown = _service(request).browse.file(who, owner, name, version, path)
        if not wants_html(request):
            return JSONResponse(shown.model_dump(mode="json"))
        return _html(
            request,
            who,
            "release_file.html",
            owner=owner,
            name=name,
            version=version,
            shown=shown,
            crumbs=shown.path.split("/"),
            tree_href=_files_base(owner, name, version) + "/",
            limit=MAX_SHOWN_BYTES,
            rendered=None if shown.text is None else render_source(shown.path, shown.text),
        )

    return _guard(request, go)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- pushed runs


def _run_chrome(request: Request, who: Principal | None) -> dict[str, Any]:
    return _chrome(request, who)


@router.get("/{owner}/{name}/runs/{run_id}/")
async def hub_run_page(request: Request, owner: str, name: str, run_id: str) -> Response:
    def go() -> Response:
        who = page_principal(request)
        run, info = _service(request).runs.open_run(who, owner, name, run_id)
        urls = RunUrls(f"/{quote(owner)}/{quote(name)}/runs/{quote(run_id)}")
        html = run_page(
            _env(request),
            run,
            urls,
            dict(request.query_params),
            _run_chrome(request, who),
            template="hub_run.html",
            owner=owner,
            name=name,
            info=info,
        )
        return _page(request, html, private=who is not None)

    return await run_in_threadpool(_guard, request, go)  # type: ignore[no-any-return]


@router.get("/{owner}/{name}/runs/{run_id}/rollouts/{i}")
async def hub_rollout_page(
    request: Request, owner: str, name: str, run_id: str, i: int
) -> Response:
    def go() -> Response:
        who = page_principal(request)
        run, _ = _service(request).runs.open_run(who, owner, name, run_id)
        urls = RunUrls(f"/{quote(owner)}/{quote(name)}/runs/{quote(run_id)}")
        raw = f"/{quote(owner)}/{quote(name)}/runs/{quote(run_id)}/raw/{i}"
        html = rollout_page(_env(request), run, urls, i, _run_chrome(request, who), raw)
        if html is None:
            raise NotFound(f"run {run_id} has no rollout {i}")
        return _page(request, html, private=who is not None)

    return await run_in_threadpool(_guard, request, go)  # type: ignore[no-any-return]


SDK_PLACEHOLDER = "/path/to/verifiers-checkout"


def pip_steps(base_url: str, p: s.ProjectOut, rel: s.ReleaseOut | None) -> list[str]:
    """Plain pip in two steps that work in a fresh venv: the verifiers SDK (from a checkout of
    this project: PyPI's ``verifiers`` is another project) with the release's other
    dependencies, then the environment alone (``--no-deps``) from its own index."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    others = []
    for line in rel.requires_dist if rel else []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == "verifiers" or "extra" in str(req.marker or ""):
            continue
        others.append(line)
    scheme, _, host = base_url.partition("://")
    auth = "__token__:TOKEN@" if p.private else ""
    index = f"{scheme}://{auth}{host}/{p.owner}/{p.name}/simple/"
    pin = f"{p.name}=={rel.version}" if rel else p.name
    return [
        shlex.join(["pip", "install", f"{SDK_PLACEHOLDER}[cli]", *others]),
        shlex.join(["pip", "install", "--no-deps", "--index-url", index, pin]),
    ]


@router.get("/{owner}/{name}/runs/{run_id}/raw/{i}")
async def hub_raw_rollout(request: Request, owner: str, name: str, run_id: str, i: int) -> Response:
    """One rollout's record as pushed (JSON), streamed from the run's file in chunks."""

    def find() -> tuple[Path, int, int]:
        return _service(request).runs.raw_record(page_principal(request), owner, name, run_id, i)  # type: ignore[no-any-return]

    path, offset, length = await run_in_threadpool(find)

    def chunks() -> Iterator[bytes]:
        with path.open("rb") as f:
            f.seek(offset)
            left = length
            while left > 0:
                data = f.read(min(1 << 20, left))
                if not data:
                    return
                left -= len(data)
                yield data

    return StreamingResponse(
        chunks(),
        media_type="application/json",
        headers={
            "Content-Length": str(length),
            "Content-Disposition": f'attachment; filename="{run_id}-rollout-{i}.json"',
            "X-Content-Type-Options": "nosniff",
        },
    )


def leaderboard_json(rows: list[s.LeaderboardRow]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in rows]
