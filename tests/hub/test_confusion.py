"""Dependency confusion (issue 13, point 6): well-known public names cannot be claimed, from
the shipped list or, when the hub has one, from its upstream index (a real local pypiserver
here)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hub_server.protected_names import load_protected

from .backends import _wait_until, free_port
from .conftest import Hub
from .live import live_server
from .wheelfactory import make_sdist

UPSTREAM_ONLY = "upstream-only-pkg"


@pytest.mark.parametrize("name", ["requests", "Django", "typing_extensions", "NumPy"])
def test_well_known_public_names_are_refused(hub: Hub, name: str) -> None:
    _, token = hub.new_user()
    r = hub.upload(hub.wheel(name), token)
    assert r.status_code == 403, r.text
    assert "dependency confusion" in r.json()["message"]


def test_shipped_list_holds_the_most_used_names() -> None:
    names = load_protected()
    assert len(names) >= 4000
    assert {"boto3", "requests", "numpy", "typing-extensions", "setuptools"} <= names


@pytest.fixture(scope="session")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local pypiserver holding one package, as the hub's upstream index."""
    packages = tmp_path_factory.mktemp("upstream")
    make_sdist(packages, UPSTREAM_ONLY, "1.0")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pypiserver",
            "run",
            "-i",
            "127.0.0.1",
            "-p",
            str(port),
            "-a",
            ".",
            "-P",
            ".",
            str(packages),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/simple/"
    try:
        _wait_until(lambda: httpx.get(url, timeout=1).status_code == 200, "pypiserver")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def hub_with_upstream(hub: Hub, upstream: str) -> Iterator[Hub]:
    from hub_server.app import create_app

    app = create_app(hub.settings.with_(upstream_index_url=upstream, auto_migrate=False))
    with live_server(app) as url:
        yield Hub(
            url=url, app=app, settings=app.state.settings, admin_token=hub.admin_token, tmp=hub.tmp
        )
    app.state.engine.dispose()


def test_name_that_exists_upstream_cannot_be_claimed(hub_with_upstream: Hub, upstream: str) -> None:
    hub = hub_with_upstream
    assert httpx.get(f"{upstream}{UPSTREAM_ONLY}/").status_code == 200  # really there
    _, token = hub.new_user()
    r = hub.upload(hub.wheel(UPSTREAM_ONLY), token)
    assert r.status_code == 403, r.text
    assert "upstream index" in r.json()["message"]
    assert hub.upload(hub.wheel(hub.unique("hub-only")), token).status_code == 200


def test_unreachable_upstream_refuses_new_names_for_now(hub: Hub, tmp_path: Path) -> None:
    from hub_server.app import create_app

    dead = f"http://127.0.0.1:{free_port()}/simple/"
    app = create_app(hub.settings.with_(upstream_index_url=dead, auto_migrate=False))
    with live_server(app) as url:
        view = Hub(
            url=url, app=app, settings=app.state.settings, admin_token=hub.admin_token, tmp=tmp_path
        )
        _, token = view.new_user()
        r = view.upload(view.wheel(view.unique("while-down")), token)
    app.state.engine.dispose()
    assert r.status_code == 503, r.text
    assert "upstream" in r.json()["message"]
