"""What a worker job installs besides the release's own wheel: the dependencies it declares,
from the hub itself (public, or of the release's own namespace), never another owner's private
project, never anything by URL; what the worker's installation provides is not installed again.
"""

from __future__ import annotations

import pytest

from hub_server.jobdeps import UnresolvedDependency, hub_dependencies

from .conftest import Hub


def _release_id(hub: Hub, name: str, version: str) -> int:
    from sqlalchemy import select

    from hub_server import models as m

    with hub.service.session() as db:
        env = db.scalar(select(m.Environment).where(m.Environment.name == name))
        assert env is not None
        rel = db.scalar(
            select(m.Release).where(
                m.Release.environment_id == env.id, m.Release.version == version
            )
        )
        assert rel is not None
        return rel.id


def _deps(hub: Hub, name: str, version: str = "1.0.0") -> list[tuple[str, str]]:
    with hub.service.session() as db:
        found = hub_dependencies(db, _release_id(hub, name, version))
    return [(d.name, d.version) for d in found]


def _up(hub: Hub, token: str, name: str, version: str = "1.0.0", **kw: object) -> None:
    private = kw.pop("private", None)
    fields = {"private": "1"} if private else {}
    r = hub.upload(hub.wheel(name, version, **kw), token, **fields)  # type: ignore[arg-type]
    assert r.status_code == 200, r.text


def test_dependencies_come_from_the_hub_highest_matching_version_transitively(hub: Hub) -> None:
    _, token = hub.new_user("deps")
    base, mid, top = hub.unique("base"), hub.unique("mid"), hub.unique("top")
    for v in ("1.0.0", "1.5.0", "2.0.0"):
        _up(hub, token, base, v)
    _up(hub, token, mid, requires_dist=[f"{base}<2"])
    _up(hub, token, top, requires_dist=[
        f"{mid}>=1", "verifiers>=0.1", "packaging", f"{base}[x]; extra == 'never'",
        'nothing-such; python_version < "3"',
    ])  # fmt: skip
    # the worker's own installation provides verifiers and packaging; markers are honoured
    assert _deps(hub, top) == [(mid, "1.0.0"), (base, "1.5.0")]


def test_a_dependency_the_hub_cannot_give_fails_the_job_naming_it(hub: Hub) -> None:
    _, token = hub.new_user("nodep")
    _, other = hub.new_user("stranger")
    hidden, mine, unknown = hub.unique("hidden"), hub.unique("mine"), hub.unique("nowhere")
    _up(hub, other, hidden, private=True)
    _up(hub, token, mine, requires_dist=[f"{hidden}>=1"])
    with pytest.raises(UnresolvedDependency, match=f"{hidden}>=1 .*publish"):
        _deps(hub, mine)  # another owner's private project is never handed over
    asks = hub.unique("asks")
    _up(hub, token, asks, requires_dist=[f"{unknown}==1"])
    with pytest.raises(UnresolvedDependency, match=f"{unknown}==1"):
        _deps(hub, asks)
    old = hub.unique("old")
    _up(hub, token, old)
    picky = hub.unique("picky")
    _up(hub, token, picky, requires_dist=[f"{old}>=3"])
    with pytest.raises(UnresolvedDependency, match=r"no release .* satisfies it .*1\.0\.0"):
        _deps(hub, picky)


def test_a_private_dependency_of_the_same_owner_is_used(hub: Hub) -> None:
    _, token = hub.new_user("ownpriv")
    lib, env = hub.unique("lib"), hub.unique("env")
    _up(hub, token, lib, private=True)
    _up(hub, token, env, requires_dist=[lib])
    assert _deps(hub, env) == [(lib, "1.0.0")]
