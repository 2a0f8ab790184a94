"""``create_app(settings)``: the hub's HTTP surface. Thin handlers over :class:`HubService`."""

from __future__ import annotations

import functools
import hashlib
import logging
import warnings
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from packaging.utils import canonicalize_name
from sqlalchemy import text
from sqlalchemy.exc import DataError, InterfaceError, OperationalError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from hub_server.auth import Principal, require_principal, token_from_headers
from hub_server.db import make_engine, make_sessionmaker
from hub_server.docs import mount_docs
from hub_server.errors import (
    BadRequest,
    Forbidden,
    HubError,
    NotFound,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from hub_server.index import (
    HTML_V1,
    JSON_V1,
    NotAcceptable,
    etag_matches,
    negotiate,
    render_project,
    render_root,
)
from hub_server.limits import BodyLimit
from hub_server.metrics import Metrics, MetricsMiddleware
from hub_server.privacy import hidden
from hub_server.receive import receive_upload as receive_form
from hub_server.security_headers import SecurityHeaders
from hub_server.service import HubService
from hub_server.settings import Settings
from hub_server.storage import BlobNotFound, make_storage
from hub_server.wheels import SDIST_TAG
from verifiers.hub import schemas as s

log = logging.getLogger("hub_server")
REALM = 'Basic realm="verifiers hub", charset="UTF-8"'
_CHUNK = 1024 * 1024


def _principal(request: Request) -> Principal | None:
    secret = token_from_headers(request.headers.get("authorization"))
    service: HubService = request.app.state.service
    return service.authenticate(secret) if secret else None


Auth = Annotated[Principal | None, Depends(_principal)]
Fmt = Annotated[
    str | None,
    Query(
        alias="format",
        description="overrides Accept (else 406 Not Acceptable)",
        json_schema_extra={"enum": ["text/html", JSON_V1, HTML_V1]},
    ),
]
_BIG = 2**62  # under every database's BIGINT, so no bound parameter can overflow
Page = Annotated[int, Query(ge=1, le=2**31)]
PerPage = Annotated[int, Query(ge=1, le=100)]


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
FILE_DOC: dict[str, Any] = {
    "response_class": Response,
    "responses": {
        200: {
            "description": "the wheel or sdist, or (for NAME.metadata) a wheel's METADATA",
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                "text/plain": _TEXT,
            },
        },
        304: {"description": "not modified (If-None-Match)"},
    },
}
UPLOAD_DOC: dict[str, Any] = {
    "openapi_extra": {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["content"],
                        "properties": {
                            ":action": {"type": "string", "enum": ["file_upload"]},
                            "content": {"type": "string", "format": "binary"},
                            "sha256_digest": {"type": "string"},
                            "owner": {"type": "string"},
                            "private": {"type": "string", "enum": ["0", "1", "true", "false"]},
                        },
                    }
                }
            },
        }
    }
}


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema, less the 422 responses it assumes (this app answers every invalid
    request with a 400 ErrorBody, documented as each operation's default response), with one
    operation id per method."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        with warnings.catch_warnings():  # GET+HEAD routes: the ids are made unique below
            warnings.filterwarnings("ignore", "Duplicate Operation ID", UserWarning)
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
        for ops in schema.get("paths", {}).values():
            for method, op in ops.items():
                op.get("responses", {}).pop("422", None)
                # GET+HEAD routes share one generated id; give each operation its own
                base, _, _ = op.get("operationId", "").rpartition("_")
                if base:
                    op["operationId"] = f"{base}_{method}"
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema


class RejectNul:
    """Pure ASGI guard: no name, query or version here may contain NUL, and PostgreSQL
    cannot store one, so such requests are a 400 before any handler runs."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (
            "\x00" in scope["path"] or b"%00" in scope.get("query_string", b"")
        ):
            response = JSONResponse(
                s.ErrorBody(
                    error="bad_request", message="the request URL contains a NUL character"
                ).model_dump(),
                status_code=400,
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def open_service(settings: Settings) -> HubService:
    """Engine (migrated when ``settings.auto_migrate``), storage and the service over them."""
    settings.validate()
    if settings.database_url is None or settings.storage == "local":
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.resolved_database_url)
    if settings.auto_migrate:
        from hub_server.migrate import upgrade

        upgrade(engine)
    return HubService(make_sessionmaker(engine), make_storage(settings), settings, engine)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    service = open_service(settings)
    engine = service.engine
    metrics = Metrics()

    app = FastAPI(
        title="verifiers hub",
        version="1",
        docs_url=None,  # self-hosted below: no CDN
        redoc_url=None,
        openapi_url="/api/openapi.json",
        responses={"default": {"model": s.ErrorBody, "description": "an error, explained"}},
    )
    app.openapi = functools.partial(_openapi, app)  # type: ignore[method-assign]
    app.state.service = service
    app.state.settings = settings
    app.state.engine = engine
    app.state.metrics = metrics
    app.add_middleware(RejectNul)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(SecurityHeaders)
    # outermost: bodies are bounded before routing, authentication or parsing
    app.add_middleware(
        BodyLimit, upload_limit=settings.max_upload_bytes, json_limit=settings.max_json_bytes
    )
    _install_error_handlers(app)
    mount_docs(app, openapi_url="/api/openapi.json", title="verifiers hub")

    # ------------------------------------------------------------------ health and metrics

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> JSONResponse:
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as e:
            log.error("health check: database unavailable: %s", e)
            return JSONResponse({"status": "unavailable", "database": str(e)[:200]}, 503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics", include_in_schema=False)
    def metrics_view() -> PlainTextResponse:
        return PlainTextResponse(
            metrics.render(service.counts()), media_type="text/plain; version=0.0.4"
        )

    # ------------------------------------------------------------------ simple index

    def index_response(
        request: Request, body_fn: Any, etag_seed: str, fmt: str | None, private: bool = False
    ) -> Response:
        try:
            ctype = negotiate(request.headers.get("accept"), fmt)
        except NotAcceptable:
            return JSONResponse(
                {"error": "not_acceptable", "message": f"offered: {JSON_V1}, text/html"},
                status_code=406,
                headers={"Vary": "Accept"},
            )
        etag = f'"{hashlib.sha256(f"{etag_seed}|{ctype}".encode()).hexdigest()[:32]}"'
        cache = ("private, " if private else "") + "max-age=0, must-revalidate"
        headers = {"Vary": "Accept", "ETag": etag, "Cache-Control": cache}
        if etag_matches(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        media = ctype if ctype == JSON_V1 else f"{ctype}; charset=utf-8"
        return Response(body_fn(ctype), media_type=media, headers=headers)

    @functools.lru_cache(maxsize=512)
    def rendered(name: str, serial: int, ctype: str) -> bytes:
        """Index pages change only with the project's journal serial: render once per serial."""
        project = service.index_project(name)
        if project is None:  # deleted between the state lookup and now
            raise NotFound("no such project on this index")
        return render_project(project, ctype).encode()

    def project_page(
        request: Request,
        name: str,
        owner: str | None,
        who: Principal | None,
        scoped: bool,
        fmt: str | None,
    ) -> Response:
        state = service.project_state(name)
        if (
            state is None
            or (owner is not None and state.owner != owner.lower())
            or (state.private and not (who and who.can_read(state.owner, name)))
        ):
            raise hidden(who, f"project {name} on this index", scoped=scoped)
        resp = index_response(
            request,
            lambda ct: rendered(name, state.serial, ct),
            f"p{state.serial}|{name}",
            fmt,
            private=state.private,
        )
        resp.headers["X-PyPI-Last-Serial"] = str(state.serial)
        return resp

    def normalised_redirect(request: Request, **parts: str) -> Response | None:
        path = request.url.path
        for raw, norm in parts.items():
            if raw != norm:
                path = path.replace(f"/{raw}/", f"/{norm}/", 1)
        if path != request.url.path:
            url = path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(url, status_code=301)
        return None

    @app.api_route("/simple/", methods=["GET", "HEAD"], **INDEX_DOC)
    def simple_root(request: Request, who: Auth, fmt: Fmt = None) -> Response:
        names = service.index_names(who, None, include_private=False)
        return index_response(
            request, lambda ct: render_root(names, ct), f"r{service.last_serial()}", fmt
        )

    @app.api_route("/simple/{name}/", methods=["GET", "HEAD"], **INDEX_DOC)
    def simple_project(request: Request, name: str, who: Auth, fmt: Fmt = None) -> Response:
        norm = canonicalize_name(name)
        if redirect := normalised_redirect(request, **{name: norm}):
            return redirect
        upstream = settings.upstream_index_url
        state = service.project_state(norm)
        if upstream and (
            state is None or (state.private and not (who and who.can_read(state.owner, norm)))
        ):
            return RedirectResponse(f"{upstream.rstrip('/')}/{norm}/", status_code=302)
        return project_page(request, norm, None, who, scoped=False, fmt=fmt)

    @app.api_route("/files/{prefix}/{sha256}/{filename}", methods=["GET", "HEAD"], **FILE_DOC)
    def download(prefix: str, sha256: str, filename: str, request: Request, who: Auth) -> Response:
        is_meta = filename.endswith(".metadata")
        wheel_name = filename[: -len(".metadata")] if is_meta else filename
        found = service.find_file(sha256, wheel_name) if prefix == sha256[:2] else None
        if found is None or (found[3] and not (who and who.can_read(found[1], found[2]))):
            raise hidden(who, f"file {filename}")
        f, _, _, private = found
        if is_meta and f.wheel_tags == SDIST_TAG:
            raise NotFound(f"no file {filename}: metadata files are served for wheels only")
        digest = f.metadata_sha256 if is_meta else f.sha256
        etag = f'"{digest}"'
        headers = {
            "ETag": etag,
            "Cache-Control": ("private" if private else "public") + ", max-age=31536000, immutable",
        }
        if etag_matches(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        key = f.metadata_key if is_meta else f.blob_key
        try:
            if is_meta:  # small (capped at upload): read it whole, so its length is known
                data = b"".join(service.storage.open(key))
                return Response(
                    b"" if request.method == "HEAD" else data,
                    media_type="text/plain; charset=utf-8",
                    headers={**headers, "Content-Length": str(len(data))},
                )
            if request.method == "HEAD":
                headers["Content-Length"] = str(f.size)
                return Response(headers=headers, media_type="application/octet-stream")
            # Streamed without a length: a blob altered behind the hub's back then reaches
            # the client whole, and fails the client's hash check rather than the transfer.
            chunks = service.storage.open(key)
        except BlobNotFound:
            log.error("blob %s of %s is missing from storage", key, f.filename)
            return JSONResponse(
                {"error": "storage", "message": f"{filename} is missing from blob storage"},
                status_code=503,
            )
        except Exception as e:  # the store is down or refusing: not this request's fault
            log.exception("blob storage failed reading %s", key)
            raise Unavailable(
                f"blob storage failed ({type(e).__name__}) reading {filename}; try again"
            ) from None
        metrics.inc("downloads")
        return StreamingResponse(chunks, media_type="application/octet-stream", headers=headers)

    # ------------------------------------------------------------------ uploads

    async def receive_upload(request: Request, who: Principal | None) -> s.UploadResult:
        who = require_principal(who)
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > settings.max_upload_bytes + _CHUNK:
            raise TooLarge(
                f"upload is {length} bytes, over the limit of {settings.max_upload_bytes}"
            )
        got = await receive_form(request, settings.max_upload_bytes)
        try:
            action = got.fields.get(":action")
            if action not in (None, "file_upload"):
                raise BadRequest(f"unsupported :action {action!r}; only file_upload is supported")
            got.check_claims()
            private = got.fields.get("private", "").lower() in ("1", "true", "yes", "on")
            file, filename = got.file, got.filename or ""
            assert file is not None
            result = await run_in_threadpool(
                lambda: service.upload(
                    who,
                    file,
                    filename,
                    sha256=got.sha256,
                    size=got.size,
                    owner=got.fields.get("owner") or None,
                    private=private,
                )
            )
        finally:
            got.close()
        metrics.inc("uploads" if result.created else "uploads_noop")
        return result

    @app.post("/legacy/", response_model=s.UploadResult, **UPLOAD_DOC)
    async def legacy_upload(request: Request, who: Auth) -> s.UploadResult:
        return await receive_upload(request, who)

    # ------------------------------------------------------------------ JSON API

    api = "/api/v1"

    @app.post(f"{api}/upload", response_model=s.UploadResult, **UPLOAD_DOC)
    async def api_upload(request: Request, who: Auth) -> s.UploadResult:
        return await receive_upload(request, who)

    @app.get(f"{api}/whoami", response_model=s.WhoAmI)
    def whoami(who: Auth) -> s.WhoAmI:
        return service.whoami(require_principal(who))

    @app.post(f"{api}/users", response_model=s.UserCreated, status_code=201)
    def create_user(body: s.UserCreate, who: Auth) -> s.UserCreated:
        p = require_principal(who)
        p.require_unrestricted("admin", "create users")
        if not p.is_admin:
            raise Forbidden("only hub admins can create users")
        name, token = service.create_user(body.name, admin=body.admin)
        return s.UserCreated(name=name, admin=body.admin, token=token)

    @app.post(f"{api}/orgs", status_code=201)
    def create_org(body: s.OrgCreate, who: Auth) -> dict[str, str]:
        return {"name": service.create_org(require_principal(who), body.name)}

    @app.post(f"{api}/orgs/{{org}}/members", status_code=204)
    def add_member(org: str, body: s.MemberAdd, who: Auth) -> Response:
        service.add_member(require_principal(who), org, body.user, body.role)
        return Response(status_code=204)

    @app.get(f"{api}/journal", response_model=list[s.JournalEntryOut])
    def journal(
        who: Auth,
        since: Annotated[int, Query(ge=0, le=_BIG)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> list[s.JournalEntryOut]:
        return service.journal(require_principal(who), since, limit)

    @app.post(f"{api}/tokens", response_model=s.TokenCreated, status_code=201)
    def create_token(body: s.TokenCreate, who: Auth) -> s.TokenCreated:
        return service.create_token(require_principal(who), body)

    @app.get(f"{api}/tokens", response_model=list[s.TokenOut])
    def list_tokens(who: Auth) -> list[s.TokenOut]:
        return service.list_tokens(require_principal(who))

    @app.delete(f"{api}/tokens/{{token_id}}", response_model=s.TokenOut)
    def revoke_token(token_id: Annotated[int, Path(ge=1, le=_BIG)], who: Auth) -> s.TokenOut:
        return service.revoke_token(require_principal(who), token_id)

    @app.get(f"{api}/projects", response_model=s.ProjectList)
    def list_projects(
        who: Auth,
        q: str | None = None,
        owner: str | None = None,
        tag: str | None = None,
        page: Page = 1,
        per_page: PerPage = 20,
    ) -> s.ProjectList:
        return service.list_projects(
            who, query=q, owner=owner, tag=tag, page=page, per_page=per_page
        )

    @app.get(f"{api}/projects/{{owner}}/{{name}}", response_model=s.ProjectOut)
    def get_project(owner: str, name: str, who: Auth) -> s.ProjectOut:
        return service.get_project(who, owner, name)

    @app.get(f"{api}/projects/{{owner}}/{{name}}/versions/{{version}}", response_model=s.ReleaseOut)
    def get_release(owner: str, name: str, version: str, who: Auth) -> s.ReleaseOut:
        return service.get_release(who, owner, name, version)

    @app.post(
        f"{api}/projects/{{owner}}/{{name}}/versions/{{version}}/yank", response_model=s.ReleaseOut
    )
    def yank(
        owner: str, name: str, version: str, who: Auth, body: s.YankRequest | None = None
    ) -> s.ReleaseOut:
        return service.set_yanked(
            require_principal(who), owner, name, version, True, body.reason if body else None
        )

    @app.post(
        f"{api}/projects/{{owner}}/{{name}}/versions/{{version}}/unyank",
        response_model=s.ReleaseOut,
    )
    def unyank(owner: str, name: str, version: str, who: Auth) -> s.ReleaseOut:
        return service.set_yanked(require_principal(who), owner, name, version, False, None)

    @app.delete(f"{api}/projects/{{owner}}/{{name}}/versions/{{version}}")
    def delete_release(owner: str, name: str, version: str, who: Auth) -> dict[str, list[str]]:
        deleted = service.delete_release(require_principal(who), owner, name, version)
        return {"deleted": deleted}

    @app.post(
        f"{api}/projects/{{owner}}/{{name}}/versions/{{version}}/evals",
        response_model=s.EvalResultOut,
        status_code=201,
    )
    def add_eval(
        owner: str, name: str, version: str, body: s.EvalResultIn, who: Auth
    ) -> s.EvalResultOut:
        return service.add_eval_result(require_principal(who), owner, name, version, body)

    @app.get(
        f"{api}/projects/{{owner}}/{{name}}/versions/{{version}}/evals",
        response_model=list[s.EvalResultOut],
    )
    def list_evals(owner: str, name: str, version: str, who: Auth) -> list[s.EvalResultOut]:
        return service.list_eval_results(who, owner, name, version)

    # ------------------------------------------------------------------ scoped indexes
    # Registered last: their leading path parameter would otherwise capture /simple/ etc.

    def owner_or_404(owner: str) -> None:
        if not service.namespace_exists(owner):
            raise NotFound(f"no namespace {owner!r} on this hub")

    @app.api_route("/{owner}/simple/", methods=["GET", "HEAD"], **INDEX_DOC)
    def owner_root(request: Request, owner: str, who: Auth, fmt: Fmt = None) -> Response:
        if redirect := normalised_redirect(request, **{owner: owner.lower()}):
            return redirect
        owner_or_404(owner)
        names = service.index_names(who, owner, include_private=True)
        seed = f"o{service.last_serial()}|{owner}|{who.token_id if who else 0}"
        return index_response(
            request, lambda ct: render_root(names, ct), seed, fmt, private=who is not None
        )

    @app.api_route("/{owner}/simple/{name}/", methods=["GET", "HEAD"], **INDEX_DOC)
    def owner_project(
        request: Request, owner: str, name: str, who: Auth, fmt: Fmt = None
    ) -> Response:
        norm = canonicalize_name(name)
        if redirect := normalised_redirect(request, **{owner: owner.lower(), name: norm}):
            return redirect
        owner_or_404(owner)
        return project_page(request, norm, owner, who, scoped=True, fmt=fmt)

    @app.api_route("/{owner}/{project}/simple/", methods=["GET", "HEAD"], **INDEX_DOC)
    def project_root(
        request: Request, owner: str, project: str, who: Auth, fmt: Fmt = None
    ) -> Response:
        norm = canonicalize_name(project)
        if redirect := normalised_redirect(request, **{owner: owner.lower(), project: norm}):
            return redirect
        state = service.project_state(norm)
        if (
            state is None
            or state.owner != owner.lower()
            or (state.private and not (who and who.can_read(state.owner, norm)))
        ):
            raise hidden(who, f"project {norm} on this index")
        seed = f"x{state.serial}|{norm}"
        return index_response(
            request, lambda ct: render_root([norm], ct), seed, fmt, private=state.private
        )

    @app.api_route("/{owner}/{project}/simple/{name}/", methods=["GET", "HEAD"], **INDEX_DOC)
    def project_page_scoped(
        request: Request, owner: str, project: str, name: str, who: Auth, fmt: Fmt = None
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
        return project_page(request, norm, owner, who, scoped=True, fmt=fmt)

    return app


def _install_error_handlers(app: FastAPI) -> None:
    def body(code: str, message: str) -> dict[str, str]:
        return s.ErrorBody(error=code, message=message).model_dump()

    @app.exception_handler(HubError)
    async def hub_error(_request: Request, exc: HubError) -> JSONResponse:
        headers = {"WWW-Authenticate": REALM} if isinstance(exc, Unauthorized) else None
        return JSONResponse(body(exc.code, exc.message), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body")
            parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
        return JSONResponse(
            body("bad_request", "; ".join(parts) or "invalid request"), status_code=400
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:  # every route on this path, not only the first one tried
            allowed: set[str] = set()
            for route in request.app.router.routes:
                if route.matches(request.scope)[0] != Match.NONE:
                    allowed |= getattr(route, "methods", None) or set()
            headers["Allow"] = ", ".join(sorted(allowed))
        return JSONResponse(
            body(code, str(exc.detail)), status_code=exc.status_code, headers=headers or None
        )

    @app.exception_handler(DataError)
    async def data_error(_request: Request, exc: DataError) -> JSONResponse:
        # The database refused a value taken from the request (a NUL byte in JSON text, a
        # number out of range): the client's input, not the server, is at fault.
        log.warning("database refused a request value: %s", exc.orig)
        return JSONResponse(
            body(
                "bad_request", "a value in the request cannot be stored (NUL byte or out of range)"
            ),
            status_code=400,
        )

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def database_down(_request: Request, exc: Exception) -> JSONResponse:
        log.error("database unavailable: %s", exc)
        return JSONResponse(
            body("unavailable", "the hub's database is unavailable; try again shortly"),
            status_code=503,
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return JSONResponse(
            body("internal", f"internal error ({type(exc).__name__}); see the server log"),
            status_code=500,
        )
