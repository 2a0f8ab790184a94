"""``verifiers.hub.HubClient``: the hub from Python (no CLI), against a live hub."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from verifiers.errors import HubClientError
from verifiers.hub import EvalResultIn, HubClient, HubSettings, TokenCreate, parse_spec
from verifiers.hub.config import config_path, forget_token, load_config

from .conftest import Hub

# the client is the same whatever the hub stores its data in
live = pytest.mark.parametrize("hub", ["sqlite-local"], indirect=True)


@pytest.fixture(autouse=True)
def _own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("VF_HUB_URL", raising=False)
    monkeypatch.delenv("VF_HUB_TOKEN", raising=False)


@live
def test_login_stores_settings_that_a_new_client_and_the_environment_override(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, token = hub.new_user()
    who, path = HubClient(hub.url + "/", token).login()
    assert who.user == user and path == config_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_config()["hub"] == {"url": hub.url, "token": token}
    client = HubClient()  # from the config file
    assert (client.url, client.token) == (hub.url, token)
    assert client.whoami().user == user
    other, other_token = hub.new_user()
    monkeypatch.setenv("VF_HUB_TOKEN", other_token)
    assert HubClient().whoami().user == other
    monkeypatch.delenv("VF_HUB_TOKEN")
    assert forget_token() is True and forget_token() is False
    with pytest.raises(HubClientError, match="no hub token configured") as info:
        HubClient().whoami()
    assert info.value.hint and "vf login" in info.value.hint


@live
def test_push_info_list_yank_and_eval_results(hub: Hub) -> None:
    user, token = hub.new_user()
    client = HubClient(hub.url, token)
    name = hub.unique("client-env")
    wheel = hub.wheel(name, "1.0.0")
    first = client.push(wheel)
    assert (first.owner, first.name, first.version, first.created) == (user, name, "1.0.0", True)
    assert first.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert client.push(str(wheel)).created is False  # identical re-upload: a no-op

    project = client.info(f"{user}/{name}")
    assert project.latest_version == "1.0.0" and project.releases[0].version == "1.0.0"
    assert [p.name for p in client.list_projects(owner=user).items] == [name]
    assert name in [p.name for p in client.list_projects(query=name[-8:]).items]

    assert client.set_yanked(user, name, "1.0.0", True, "broken").yanked is True
    assert client.info(f"{user}/{name}").releases[0].yanked_reason == "broken"
    assert client.set_yanked(user, name, "1.0.0", False).yanked is False

    spec = f"{user}/{name}@1.0.0"
    result = EvalResultIn(
        wheel_sha256=first.sha256, model="toy", num_examples=5, metrics={"reward": 0.8}
    )
    stored = client.push_eval_result(spec, result)
    assert (stored.model, stored.metrics, stored.submitted_by) == ("toy", {"reward": 0.8}, user)
    assert [r.id for r in HubClient(hub.url).eval_results(spec)] == [stored.id]


@live
def test_tokens_create_list_revoke(hub: Hub) -> None:
    _, token = hub.new_user()
    client = HubClient(hub.url, token)
    created = client.create_token(TokenCreate(name="ci", scopes=["read"]))
    assert created.token.startswith("vfh_")
    assert "ci" in [t.name for t in client.list_tokens()]
    assert client.revoke_token(created.id).revoked is True
    with pytest.raises(HubClientError, match="revoked") as info:
        HubClient(hub.url, created.token).whoami()
    assert info.value.status_code == 401 and "vf login" in (info.value.hint or "")


@live
def test_failures_name_the_problem_and_the_next_step(hub: Hub, tmp_path: Path) -> None:
    _, token = hub.new_user()
    client = HubClient(hub.url, token)
    with pytest.raises(HubClientError, match=r"no environment .*\(HTTP 404\)"):
        client.info("nobody/nothing")
    with pytest.raises(HubClientError, match="no such wheel") as info:
        client.push(tmp_path / "missing-1.0-py3-none-any.whl")
    assert "vf env build" in (info.value.hint or "")
    with pytest.raises(HubClientError, match="needs a version"):
        client.eval_results("alice/thing")
    with pytest.raises(HubClientError, match=r"cannot reach the hub at http://127\.0\.0\.1:9"):
        HubClient("http://127.0.0.1:9", "x").whoami()
    with pytest.raises(HubClientError, match="must start with http"):
        HubSettings("ftp://hub")


def test_parse_spec() -> None:
    assert parse_spec("Alice/vf-math@0.1.0") == ("alice", "vf-math", "0.1.0")
    assert parse_spec("alice/vf-math") == ("alice", "vf-math", None)
    with pytest.raises(HubClientError, match="is not OWNER/NAME"):
        parse_spec("vf-math")


def test_a_bad_config_file_is_named() -> None:
    config_path().parent.mkdir(parents=True)
    config_path().write_text("[hub\n")
    with pytest.raises(HubClientError, match=r"cannot read .*config\.toml") as info:
        HubClient()
    assert "fix or delete" in (info.value.hint or "")
