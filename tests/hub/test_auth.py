"""Namespaces, token scopes, expiry, revocation and project restrictions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from hub_server import models as m

from .conftest import Hub
from .tools import pip_install


def _token(hub: Hub, token: str, **body: object) -> str:
    r = hub.api("POST", "/tokens", token, json={"name": "t", **body})
    assert r.status_code == 201, r.text
    return str(r.json()["token"])


def test_cannot_push_into_another_users_namespace(hub: Hub) -> None:
    alice, _ = hub.new_user("alice")
    _, bob = hub.new_user("bob")
    resp = hub.upload(hub.wheel(hub.unique("intruder-env")), bob, owner=alice)
    assert resp.status_code == 403
    assert "not a member" in resp.json()["message"]


def test_read_only_token_cannot_upload_or_yank(hub: Hub) -> None:
    owner, token = hub.new_user()
    name = hub.unique("ro-env")
    hub.upload(hub.wheel(name), token)
    read = _token(hub, token, scopes=["read"])
    resp = hub.upload(hub.wheel(name, "2.0.0"), read)
    assert resp.status_code == 403
    assert "'upload' scope" in resp.json()["message"]
    resp = hub.api("POST", f"/projects/{owner}/{name}/versions/1.0.0/yank", read)
    assert resp.status_code == 403
    # read tokens cannot mint broader tokens either
    assert (
        hub.api("POST", "/tokens", read, json={"name": "x", "scopes": ["upload"]}).status_code
        == 403
    )


def test_expired_token_is_refused(hub: Hub) -> None:
    _, token = hub.new_user()
    expiring = _token(hub, token, scopes=["read", "upload"], expires_in_days=1)
    assert hub.api("GET", "/whoami", expiring).status_code == 200
    with hub.service.session() as db:  # move its expiry into the past
        from sqlalchemy import select

        from hub_server.auth import hash_token

        tok = db.scalar(select(m.ApiToken).where(m.ApiToken.token_hash == hash_token(expiring)))
        tok.expires_at = datetime.now(UTC) - timedelta(seconds=1)
        db.commit()
    resp = hub.upload(hub.wheel(hub.unique("exp-env")), expiring)
    assert resp.status_code == 401
    assert "expired" in resp.json()["message"]
    assert resp.headers["www-authenticate"].startswith("Basic")


def test_an_admins_token_without_the_admin_scope_has_no_admin_powers(hub: Hub) -> None:
    owner, token = hub.new_user()
    name = hub.unique("guarded-env")
    assert hub.upload(hub.wheel(name), token, private="1").status_code == 200
    their_tokens = hub.api("GET", "/tokens", token).json()
    ci = _token(hub, hub.admin_token, scopes=["read", "upload", "yank", "manage"])
    assert hub.api("GET", "/whoami", ci).json()["admin"] is False
    assert hub.api("GET", f"/projects/{owner}/{name}", ci).status_code == 404
    auth = {"Authorization": f"Bearer {ci}"}
    assert httpx.get(f"{hub.url}/{owner}/{name}/simple/", headers=auth).status_code == 404
    assert hub.upload(hub.wheel(name, "2.0.0"), ci).status_code == 403
    yank = hub.api("POST", f"/projects/{owner}/{name}/versions/1.0.0/yank", ci)
    assert yank.status_code in (403, 404)
    assert hub.api("DELETE", f"/tokens/{their_tokens[0]['id']}", ci).status_code == 404
    assert hub.api("GET", "/journal", ci).status_code == 403
    # the admin-scoped token keeps them
    assert hub.api("GET", f"/projects/{owner}/{name}", hub.admin_token).status_code == 200
    assert hub.api("GET", "/whoami", hub.admin_token).json()["admin"] is True


def test_tokens_made_by_an_expiring_token_expire_no_later(hub: Hub) -> None:
    _, token = hub.new_user()
    parent = _token(hub, token, scopes=["read", "manage"], expires_in_days=1)
    limit = hub.api("GET", "/whoami", parent).json()["expires_at"]
    for body in ({}, {"expires_in_days": 30}):
        r = hub.api("POST", "/tokens", parent, json={"name": "child", "scopes": ["read"], **body})
        assert r.status_code == 201, r.text
        assert r.json()["expires_at"] == limit
    r = hub.api(
        "POST", "/tokens", parent, json={"name": "c", "scopes": ["read"], "expires_in_days": 0.5}
    )
    assert r.json()["expires_at"] < limit


def test_token_lifetime_is_bounded(hub: Hub) -> None:
    _, token = hub.new_user()
    for days in (1e308, 36501):
        r = hub.api("POST", "/tokens", token, json={"name": "t", "expires_in_days": days})
        assert r.status_code == 400, r.text
        assert "expires_in_days" in r.json()["message"]
    r = httpx.post(
        f"{hub.url}/api/v1/tokens",
        content=b'{"name": "t", "expires_in_days": Infinity}',
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert r.status_code == 400, r.text
    assert _token(hub, token, expires_in_days=36500)


def test_revoked_token_is_refused(hub: Hub) -> None:
    _, token = hub.new_user()
    extra = _token(hub, token, scopes=["read", "upload"])
    tokens = hub.api("GET", "/tokens", token).json()
    tid = next(t["id"] for t in tokens if not t["revoked"] and t["name"] == "t")
    assert hub.api("DELETE", f"/tokens/{tid}", token).json()["revoked"] is True
    resp = hub.upload(hub.wheel(hub.unique("rev-env")), extra)
    assert resp.status_code == 401
    assert "revoked" in resp.json()["message"]
    # pip with the revoked token gets 401 too
    assert (
        httpx.get(f"{hub.url}/simple/", headers={"Authorization": f"Bearer {extra}"}).status_code
        == 401
    )


def test_project_restricted_token(hub: Hub) -> None:
    owner, token = hub.new_user()
    allowed, other = hub.unique("allowed-env"), hub.unique("other-env")
    # restriction to a project that does not exist yet
    scoped = _token(hub, token, scopes=["read", "upload", "yank"], projects=[allowed.upper()])
    assert hub.upload(hub.wheel(allowed), scoped).status_code == 200
    resp = hub.upload(hub.wheel(other), scoped)
    assert resp.status_code == 403
    assert "restricted" in resp.json()["message"]
    hub.upload(hub.wheel(other), token)
    assert (
        hub.api("POST", f"/projects/{owner}/{other}/versions/1.0.0/yank", scoped).status_code == 403
    )
    assert (
        hub.api("POST", f"/projects/{owner}/{allowed}/versions/1.0.0/yank", scoped).status_code
        == 200
    )


def test_owner_restricted_token_and_orgs(hub: Hub, tmp_path: object) -> None:
    user, token = hub.new_user()
    org = hub.unique("org")
    assert hub.api("POST", "/orgs", token, json={"name": org}).status_code == 201
    org_only = _token(hub, token, scopes=["read", "upload"], owner=org)
    name = hub.unique("org-env")
    resp = hub.upload(hub.wheel(name), org_only)
    assert resp.status_code == 200, resp.text
    assert resp.json()["owner"] == org
    resp = hub.upload(hub.wheel(hub.unique("mine-env")), org_only, owner=user)
    assert resp.status_code == 403
    assert hub.api("GET", f"/projects/{org}/{name}").json()["owner"] == org


def test_basic_token_auth_and_whoami(hub: Hub) -> None:
    user, token = hub.new_user()
    who = httpx.get(f"{hub.url}/api/v1/whoami", auth=("__token__", token)).json()
    assert who["user"] == user and "upload" in who["scopes"]
    assert hub.api("GET", "/whoami").status_code == 401
    bad = hub.api("GET", "/whoami", "vfh_not-a-real-token")
    assert bad.status_code == 401 and "unknown token" in bad.json()["message"]
    # the token as the URL's user name, with no password (http://vfh_...@host/simple/)
    assert httpx.get(f"{hub.url}/api/v1/whoami", auth=(token, "")).json()["user"] == user
    empty = httpx.get(f"{hub.url}/api/v1/whoami", headers={"Authorization": "Bearer"})
    assert empty.status_code == 401 and "empty Bearer token" in empty.json()["message"]
    # only the hash is stored
    with hub.service.session() as db:
        from sqlalchemy import select

        hashes = db.scalars(select(m.ApiToken.token_hash)).all()
        assert token not in hashes


def test_admin_creates_users_others_cannot(hub: Hub) -> None:
    _, token = hub.new_user()
    name = hub.unique("newbie")
    assert hub.api("POST", "/users", token, json={"name": name}).status_code == 403
    r = hub.api("POST", "/users", hub.admin_token, json={"name": name})
    assert r.status_code == 201
    assert hub.api("GET", "/whoami", r.json()["token"]).json()["user"] == name
    assert hub.api("POST", "/users", hub.admin_token, json={"name": name}).status_code == 409
    assert hub.api("POST", "/users", hub.admin_token, json={"name": "simple"}).status_code == 400


def test_private_install_with_restricted_read_token_via_pip(hub: Hub, tmp_path: object) -> None:
    from pathlib import Path

    owner, token = hub.new_user()
    a, b = hub.unique("priv-a"), hub.unique("priv-b")
    hub.upload(hub.wheel(a), token, private="1")
    hub.upload(hub.wheel(b), token, private="1")
    only_a = _token(hub, token, scopes=["read"], projects=[a])
    target = Path(str(tmp_path))
    assert pip_install(f"{hub.url}/{owner}/simple/", target / "a", a, token=only_a).returncode == 0
    assert pip_install(f"{hub.url}/{owner}/simple/", target / "b", b, token=only_a).returncode != 0


def test_org_members_publish_under_the_org(hub: Hub) -> None:
    founder, ftoken = hub.new_user("founder")
    member, mtoken = hub.new_user("member")
    org = hub.unique("team")
    assert hub.api("POST", "/orgs", ftoken, json={"name": org}).status_code == 201
    name = hub.unique("team-env")
    resp = hub.upload(hub.wheel(name), mtoken, owner=org)
    assert resp.status_code == 403 and "not a member" in resp.json()["message"]
    # only org owners add members
    r = hub.api("POST", f"/orgs/{org}/members", mtoken, json={"user": member})
    assert r.status_code == 403
    assert hub.api("POST", f"/orgs/{org}/members", ftoken, json={"user": member}).status_code == 204
    resp = hub.upload(hub.wheel(name), mtoken, owner=org)
    assert resp.status_code == 200 and resp.json()["owner"] == org
    # the founder can publish the next version of the member's upload: the org owns it
    assert hub.upload(hub.wheel(name, "1.1.0"), ftoken).status_code == 200
    assert (
        hub.api("POST", f"/orgs/{founder}/members", ftoken, json={"user": member}).status_code
        == 404
    )
