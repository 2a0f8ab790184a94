"""When the hub has an upstream index (``VF_HUB_UPSTREAM_INDEX_URL``), a new project may not
take a name that exists there: otherwise installers that see both could take either."""

from __future__ import annotations

import logging

import httpx
from packaging.utils import canonicalize_name

from hub_server.errors import Forbidden, Unavailable

log = logging.getLogger("hub_server")


def check_not_upstream(name: str, upstream: str, *, timeout: float = 10.0) -> None:
    """Ask the upstream's simple API (PEP 503) for ``name``: 404 is free, 200 is taken, and
    anything else refuses the new name for now (the check fails closed)."""
    norm = canonicalize_name(name)
    url = f"{upstream.rstrip('/')}/{norm}/"
    try:
        r = httpx.get(
            url,
            headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"},
            follow_redirects=True,
            timeout=timeout,
        )
    except httpx.HTTPError as e:
        log.warning("upstream index check of %s failed: %s", norm, e)
        raise Unavailable(
            f"could not check whether {norm!r} exists on the upstream index ({type(e).__name__}); "
            "new project names are checked there first: try again later"
        ) from None
    if r.status_code == 404:
        return
    if r.status_code == 200:
        raise Forbidden(
            f"{norm!r} exists on the upstream index {upstream}; a hub project with that name "
            "could be installed in its place (dependency confusion). Choose a distinct name"
        )
    raise Unavailable(
        f"the upstream index answered {r.status_code} for {norm!r}; new project names are "
        "checked there first: try again later"
    )
