"""PEP 503 HTML and PEP 691 JSON renderings of the simple index (with PEP 592/658/700/714)."""

from __future__ import annotations

import functools
import html
from collections.abc import Callable
from datetime import UTC, datetime

import orjson

from hub_server.errors import NotAcceptable, NotFound
from hub_server.services.queries import IndexProject

JSON_V1 = "application/vnd.pypi.simple.v1+json"
HTML_V1 = "application/vnd.pypi.simple.v1+html"
API_VERSION = "1.1"
_OFFERS = ("text/html", JSON_V1, HTML_V1)  # tie-break order: HTML stays the default
# PEP 691's "latest" meta version names the newest version this server speaks (v1).
_LATEST = {
    "application/vnd.pypi.simple.latest+json": JSON_V1,
    "application/vnd.pypi.simple.latest+html": HTML_V1,
}
_OFFERED = f"offered: {JSON_V1}, text/html"  # the 406 answer


def negotiate(accept: str | None, fmt: str | None = None) -> str:
    """Pick the response type by ``Accept`` (q-values and specificity honoured; ties go to
    HTML); a ``?format=`` query parameter wins."""
    if fmt:
        fmt = _LATEST.get(fmt.strip().lower(), fmt.strip().lower())
        if fmt in _OFFERS:
            return fmt
        raise NotAcceptable(_OFFERED)
    if not accept:
        return "text/html"
    entries: list[tuple[str, float]] = []
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for p in params:
            k, _, v = p.partition("=")
            if k.strip() == "q":
                try:
                    q = float(v)
                except ValueError:
                    q = 0.0
        media = media.lower()
        entries.append((_LATEST.get(media, media), q))
    best: tuple[float, int, str] | None = None
    for rank, offer in enumerate(_OFFERS):
        match: tuple[int, float] | None = None  # (specificity, q)
        for media, q in entries:
            spec = _specificity(media, offer)
            if spec is not None and (match is None or spec > match[0]):
                match = (spec, q)
        if match is not None and match[1] > 0:
            cand = (match[1], -rank, offer)
            if best is None or cand > best:
                best = cand
    if best is None:
        raise NotAcceptable(_OFFERED)
    return best[2]


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 ``If-None-Match``: a list of (possibly weak) entity tags, or ``*``."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


def _specificity(media: str, offer: str) -> int | None:
    if media == offer:
        return 2
    if media.endswith("/*") and offer.startswith(media[:-1]):
        return 1
    if media == "*/*":
        return 0
    return None


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def render_root(names: list[str], content_type: str) -> str:
    if content_type == JSON_V1:
        return orjson.dumps(
            {"meta": {"api-version": API_VERSION}, "projects": [{"name": n} for n in names]}
        ).decode()
    links = "\n".join(f'    <a href="{html.escape(n)}/">{html.escape(n)}</a><br/>' for n in names)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f'    <meta name="pypi:repository-version" content="{API_VERSION}">\n'
        "    <title>Simple index</title>\n  </head>\n  <body>\n"
        f"{links}\n  </body>\n</html>\n"
    )


def render_project(project: IndexProject, content_type: str) -> str:
    if content_type == JSON_V1:
        files = []
        for f in project.files:
            entry: dict[str, object] = {
                "filename": f.filename,
                "url": f.url,
                "hashes": {"sha256": f.sha256},
                "requires-python": f.requires_python,
                "size": f.size,
                "upload-time": _iso(f.upload_time),
                "yanked": (f.yanked_reason or True) if f.yanked else False,
            }
            if f.metadata_sha256:
                entry["core-metadata"] = {"sha256": f.metadata_sha256}
                entry["dist-info-metadata"] = {"sha256": f.metadata_sha256}
            files.append(entry)
        return orjson.dumps(
            {
                "meta": {"api-version": API_VERSION},
                "name": project.name,
                "versions": project.versions,
                "files": files,
            }
        ).decode()
    lines = []
    for f in project.files:
        attrs = [f'href="{html.escape(f.url)}#sha256={f.sha256}"']
        if f.requires_python:
            attrs.append(f'data-requires-python="{html.escape(f.requires_python)}"')
        if f.yanked:
            attrs.append(f'data-yanked="{html.escape(f.yanked_reason or "")}"')
        if f.metadata_sha256:
            attrs.append(f'data-core-metadata="sha256={f.metadata_sha256}"')
            attrs.append(f'data-dist-info-metadata="sha256={f.metadata_sha256}"')
        lines.append(f"    <a {' '.join(attrs)}>{html.escape(f.filename)}</a><br/>")
    body = "\n".join(lines)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f'    <meta name="pypi:repository-version" content="{API_VERSION}">\n'
        f"    <title>Links for {html.escape(project.name)}</title>\n  </head>\n  <body>\n"
        f"    <h1>Links for {html.escape(project.name)}</h1>\n{body}\n  </body>\n</html>\n"
    )


class PageCache:
    """Rendered project pages. A page changes only with its project's journal serial, so
    each is rendered once per (name, serial, type); ``load`` reads the project's files."""

    def __init__(self, load: Callable[[str], IndexProject | None], size: int = 512) -> None:
        self._load = load
        self.project: Callable[[str, int, str], bytes] = functools.lru_cache(maxsize=size)(
            self._render
        )

    def _render(self, name: str, serial: int, ctype: str) -> bytes:
        project = self._load(name)
        if project is None:  # deleted between the state lookup and now
            raise NotFound("no such project on this index")
        return render_project(project, ctype).encode()
