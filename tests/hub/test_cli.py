"""The hub half of the ``vf`` CLI against a live hub."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .clitools import fresh_venv, vf, vf_in
from .conftest import Hub

pytestmark = pytest.mark.parametrize("hub", ["sqlite-local"], indirect=True)


@pytest.fixture
def cfg(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "VF_HUB_URL": "", "VF_HUB_TOKEN": ""}


def test_hub_user_create_prints_token_last_and_migrate(hub: Hub, tmp_path: Path) -> None:
    data = tmp_path / "hubdata"
    code, out, err = vf(
        ["hub", "user", "create", "Alice", "--admin", "--data-dir", str(data), "--init"], {}
    )
    assert code == 0, err
    token = out.strip().splitlines()[-1]
    assert token.startswith("vfh_") and " " not in token
    code, out, _ = vf(["hub", "migrate", "--data-dir", str(data)], {})
    assert code == 0 and "revision 0008" in out
    code, _, err = vf(["hub", "user", "create", "alice", "--data-dir", str(data)], {})
    assert code == 1 and "already exists" in err
    from hub_server.services import open_service
    from hub_server.settings import Settings

    service = open_service(Settings(data_dir=data))
    assert service.authenticate(token).is_admin
    service.engine.dispose()


def test_admin_commands_refuse_a_data_dir_without_a_hub(hub: Hub, tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    for cmd in (
        ["hub", "user", "create", "bob"],
        ["hub", "gc"],
        ["hub", "migrate"],
    ):
        code, out, err = vf([*cmd, "--data-dir", str(typo)], {})
        assert code == 1, (cmd, out, err)
        assert f"no hub in {typo}" in err and "--init" in err, err
        assert not typo.exists(), cmd  # nothing was created
    code, out, err = vf(["hub", "user", "create", "bob", "--data-dir", str(typo), "--init"], {})
    assert code == 0, err
    assert f"data: {typo}" in err  # the command says which hub it used
    code, out, err = vf(["hub", "gc", "--data-dir", str(typo)], {})
    assert code == 0 and f"data: {typo}" in err


def test_hub_user_list_and_delete(hub: Hub, tmp_path: Path) -> None:
    data = tmp_path / "hubdata"
    assert (
        vf(["hub", "user", "create", "alice", "--admin", "--data-dir", str(data), "--init"], {})[0]
        == 0
    )
    code, out, err = vf(["hub", "user", "create", "bob", "--data-dir", str(data)], {})
    bob_token = out.strip().splitlines()[-1]
    assert code == 0, err
    code, out, err = vf(["hub", "user", "create", "carol", "--data-dir", str(data)], {})
    carol_token = out.strip().splitlines()[-1]
    code, out, err = vf(["hub", "user", "list", "--data-dir", str(data)], {})
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["USER", "ADMIN", "CREATED", "TOKENS", "PROJECTS"]
    assert [line.split()[:2] for line in lines[2:-1]] == [
        ["alice", "yes"],
        ["bob", "no"],
        ["carol", "no"],
    ]
    assert lines[-1] == "(3 users)" and f"data: {data}" in err
    # carol publishes: she is disabled, not deleted; bob never did: he is deleted
    from hub_server.services import open_service
    from hub_server.settings import Settings

    service = open_service(Settings(data_dir=data))
    wheel = hub.wheel(hub.unique("carols"), "1.0.0")
    principal = service.authenticate(carol_token)
    raw = wheel.read_bytes()
    import hashlib

    with wheel.open("rb") as f:
        service.upload(
            principal, f, wheel.name, sha256=hashlib.sha256(raw).hexdigest(), size=len(raw)
        )
    service.engine.dispose()
    code, _, err = vf(["hub", "user", "delete", "bob", "--data-dir", str(data)], {})
    assert code == 1 and "needs confirmation" in err
    code, out, err = vf(["hub", "user", "delete", "bob", "--yes", "--data-dir", str(data)], {})
    assert code == 0 and out.strip() == "deleted user bob", err
    code, out, err = vf(["hub", "user", "delete", "carol", "--yes", "--data-dir", str(data)], {})
    assert code == 0 and out.startswith("disabled user carol"), err
    code, _, err = vf(["hub", "user", "delete", "nobody", "--yes", "--data-dir", str(data)], {})
    assert code == 1 and "no user 'nobody'" in err
    service = open_service(Settings(data_dir=data))
    try:
        from hub_server.errors import Unauthorized

        for token in (bob_token, carol_token):
            with pytest.raises(Unauthorized):
                service.authenticate(token)
    finally:
        service.engine.dispose()
    code, out, _ = vf(["hub", "user", "list", "--data-dir", str(data)], {})
    rows = [line.split() for line in out.splitlines()[2:-1]]
    assert [r[0] for r in rows] == ["alice", "carol"]
    assert rows[1][3:] == ["0", "1"]  # carol: no live token, her project stays
    # bob's name is free again
    assert vf(["hub", "user", "create", "bob", "--data-dir", str(data)], {})[0] == 0


def test_hub_serve_with_workers_and_port_0_prints_the_real_url(hub: Hub, tmp_path: Path) -> None:
    import re

    import httpx

    cmd = [sys.executable, "-c", "from cli.main import main; main()", "hub", "serve"]
    proc = subprocess.Popen(
        [*cmd, "--processes", "2", "--port", "0", "--data-dir", str(tmp_path / "d")],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"serving on (http://127\.0\.0\.1:(\d+))", line)
        assert found and found.group(2) != "0", line
        for raw in proc.stderr:  # wait until a worker answers
            if "Application startup complete" in raw or "Started server" in raw:
                break
        assert httpx.get(found.group(1) + "/healthz", timeout=30).json() == {"status": "ok"}
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()  # ResourceWarning (an error under pytest) otherwise


def test_login_whoami_logout_and_env_overrides(
    hub: Hub, cfg: dict[str, str], tmp_path: Path
) -> None:
    user, token = hub.new_user()
    code, out, err = vf(["login", "--url", hub.url, "--token", token], cfg)
    assert code == 0, err
    path = tmp_path / "config" / "verifiers" / "config.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    code, out, _ = vf(["whoami", "--json"], cfg)
    assert json.loads(out)["user"] == user
    # environment variables win over the stored config
    other, other_token = hub.new_user()
    code, out, _ = vf(["whoami"], {**cfg, "VF_HUB_TOKEN": other_token})
    assert out.startswith(other)
    assert vf(["logout"], cfg)[0] == 0
    code, _, err = vf(["whoami"], cfg)
    assert code == 1 and "vf login" in err
    code, _, err = vf(["login", "--url", hub.url, "--token", "vfh_wrong"], cfg)
    assert code == 1 and "unknown token" in err
    code, _, err = vf(["whoami"], {**cfg, "VF_HUB_URL": "http://127.0.0.1:9", "VF_HUB_TOKEN": "x"})
    assert code == 1 and "cannot reach the hub" in err and "Traceback" not in err


def test_login_without_a_terminal_reads_piped_stdin_or_names_the_fix(
    hub: Hub, cfg: dict[str, str]
) -> None:
    _, token = hub.new_user()
    cmd = [sys.executable, "-c", "from cli.main import main; main()", "login"]
    env = {**os.environ, **cfg, "VF_HUB_URL": hub.url}
    r = subprocess.run(cmd, input="", capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1
    assert "GetPassWarning" not in r.stderr and "Abort" not in r.stderr, r.stderr
    assert "no token given" in r.stderr and "--token" in r.stderr
    # --url defaults like the other commands (VF_HUB_URL here); the token comes from stdin
    r = subprocess.run(cmd, input=token + "\n", capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"logged in to {hub.url}" in r.stdout


def test_login_with_a_bad_token_gives_one_hint(hub: Hub, cfg: dict[str, str]) -> None:
    code, _, err = vf(["login", "--url", hub.url, "--token", "vfh_wrong"], cfg)
    assert code == 1 and "does not accept this token" in err
    assert err.count("vf login") <= 1, err


def test_login_at_an_api_path_names_the_wrong_part_and_the_fix(
    hub: Hub, cfg: dict[str, str]
) -> None:
    _, token = hub.new_user()
    code, _, err = vf(["login", "--url", hub.url + "/v1", "--token", token], cfg)
    assert code == 1
    [line] = err.strip().splitlines()
    assert f"{hub.url}/v1 is not a hub's root URL" in line, line
    assert "the path '/v1' is the wrong part" in line and f"vf login --url {hub.url})" in line


def test_token_create_list_revoke(hub: Hub, cfg: dict[str, str]) -> None:
    _, token = hub.new_user()
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token}
    code, out, err = vf(["token", "create", "ci", "--scope", "read", "--expires-days", "7"], env)
    assert code == 0, err
    secret = out.strip().splitlines()[-1]
    assert secret.startswith("vfh_")
    code, out, _ = vf(["token", "list"], env)
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "NAME", "SCOPES", "STATE", "RESTRICTED", "TO"]
    assert any(line.split()[1:3] == ["ci", "read"] for line in lines[2:-1])
    assert lines[-1] == f"({len(lines) - 3} tokens)" and secret not in out
    code, out, _ = vf(["token", "list", "--json"], env)
    tokens = json.loads(out)
    ci = next(t for t in tokens if t["name"] == "ci")
    assert ci["scopes"] == ["read"] and ci["expires_at"]
    assert secret not in out
    assert vf(["token", "revoke", str(ci["id"])], env)[0] == 0
    code, _, err = vf(["whoami"], {**env, "VF_HUB_TOKEN": secret})
    assert code == 1 and "revoked" in err
    code, _, err = vf(["token", "create", "x", "--scope", "superuser"], env)
    assert code == 1 and "unknown scope" in err


def test_init_build_push_info_list_search_yank(
    hub: Hub, cfg: dict[str, str], tmp_path: Path
) -> None:
    user, token = hub.new_user()
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token}
    name = hub.unique("cli-env")
    code, out, err = vf(["env", "init", name, "--path", str(tmp_path / "envs")], env)
    assert code == 0, err
    pkg = tmp_path / "envs" / name
    assert (pkg / "pyproject.toml").is_file() and (pkg / f"{name.replace('-', '_')}.py").is_file()
    assert "[tool.verifiers.eval]" in (pkg / "pyproject.toml").read_text()
    assert vf(["env", "init", name, "--path", str(tmp_path / "envs")], env)[0] == 1

    code, out, err = vf(["env", "build", str(pkg)], env)
    assert code == 0, err
    assert Path(out.strip()).name == f"{name.replace('-', '_')}-0.1.0-py3-none-any.whl"

    code, out, err = vf(["env", "push", str(pkg)], env)
    assert code == 0, err
    assert f"published {user}/{name}@0.1.0" in out
    code, out, err = vf(["env", "push", str(pkg)], env)
    assert code == 0 and "already published" in out

    code, out, _ = vf(["env", "info", f"{user}/{name}", "--json"], env)
    info = json.loads(out)
    assert info["latest_version"] == "0.1.0"
    assert info["releases"][0]["entry_points"] == {
        name: f"{name.replace('-', '_')}:load_environment"
    }
    assert "single-turn" in info["tags"]
    code, out, _ = vf(["env", "list", "--owner", user], env)
    lines = out.splitlines()
    assert lines[0].split() == [
        "ENVIRONMENT", "LATEST", "VISIBILITY", "DOWNLOADS", "TAGS", "SUMMARY"
    ]  # fmt: skip
    assert lines[2].split()[:4] == [f"{user}/{name}", "0.1.0", "public", "0"]
    assert lines[-1] == "(1 shown of 1 environment)"
    code, out, _ = vf(["env", "search", name[-8:]], env)
    assert f"{user}/{name}" in out
    code, out, _ = vf(["env", "search", "single-turn", "--json"], env)
    assert any(p["name"] == name for p in json.loads(out)["items"])

    code, out, err = vf(["env", "yank", f"{user}/{name}@0.1.0", "--reason", "bad data"], env)
    assert code == 0, err
    code, out, _ = vf(["env", "info", f"{user}/{name}"], env)
    assert "yanked: bad data" in out
    assert vf(["env", "unyank", f"{user}/{name}@0.1.0"], env)[0] == 0
    code, _, err = vf(["env", "yank", f"{user}/{name}"], env)
    assert code == 1 and "needs a version" in err


def test_env_list_fits_80_columns(hub: Hub, cfg: dict[str, str]) -> None:
    user, token = hub.new_user()
    name = hub.unique("wide-env")
    wheel = hub.wheel(
        name,
        "1.0.0",
        summary="A summary that goes on and on about what this environment does, " * 3,
        keywords="multi-turn,tool-use,sandbox,python,code,math,reasoning,long-context",
    )
    assert hub.upload(wheel, token).status_code == 200
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token, "COLUMNS": ""}
    code, out, err = vf(["env", "list", "--owner", user], env)
    assert code == 0, err
    # in a pipe: one line per environment, in full (summary and tags were cut to "A summ…")
    row = out.splitlines()[2]
    assert row.startswith(f"{user}/{name}") and "…" not in out
    assert row.count("what this environment does,") == 3
    assert "code, long-context, math, multi-turn, python, reasoning, sandbox, tool-use" in row
    # an 80-column terminal: the row fits, its summary and tags follow in full, wrapped
    code, out, err = vf(["env", "list", "--owner", user], {**env, "COLUMNS": "80"})
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, lines
    assert lines[2].startswith(f"{user}/{name}") and lines[2].split()[1:3] == ["1.0.0", "public"]
    # nothing is cut: the summary and the tags follow the row, wrapped (they were cut to
    # "A summ…" and the tags dropped, in a pipe or at 80 columns)
    text = " ".join(line.strip() for line in lines[3:-1])
    assert text.count("what this environment does,") == 3, text
    assert (
        "tags: code, long-context, math, multi-turn, python, reasoning, sandbox, tool-use" in text
    )
    assert "…" not in out
    code, out, _ = vf(["env", "list", "--owner", user], {**env, "COLUMNS": "400"})
    assert len(out.splitlines()) == 4  # a wide terminal: one row per environment


def test_env_delete_is_for_admins_and_asks_first(hub: Hub, cfg: dict[str, str]) -> None:
    user, token = hub.new_user()
    name = hub.unique("del-env")
    assert hub.upload(hub.wheel(name, "1.0.0"), token).status_code == 200
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token}
    code, _, err = vf(["env", "delete", f"{user}/{name}@1.0.0"], env)
    assert code == 1 and "needs confirmation" in err and "--yes" in err
    code, _, err = vf(["env", "delete", f"{user}/{name}@1.0.0", "--yes"], env)
    assert code == 1 and "HTTP 403" in err  # the owner may yank, only an admin deletes
    _, admin_token = hub.service.create_user(hub.unique("admin"), admin=True)
    admin = {**env, "VF_HUB_TOKEN": admin_token}
    code, out, err = vf(["env", "delete", f"{user}/{name}@1.0.0", "--yes"], admin)
    assert code == 0, err
    assert out.startswith(f"deleted {user}/{name}@1.0.0 (") and ".whl" in out
    code, out, err = vf(["env", "info", f"{user}/{name}", "--json"], env)
    if code == 0:  # the project stays, without the version
        assert all(r["version"] != "1.0.0" for r in json.loads(out)["releases"])
    else:
        assert "no environment" in err


def test_cli_errors_are_one_clear_line(hub: Hub, cfg: dict[str, str], tmp_path: Path) -> None:
    _, token = hub.new_user()
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token}
    for args, needle in (
        (["env", "info", "nobody/nothing"], "no environment"),
        (["env", "install", "not-a-spec"], "OWNER/NAME"),
        (["env", "build", str(tmp_path)], "no pyproject.toml"),
        (["env", "push", str(tmp_path)], "no pyproject.toml"),
    ):
        code, _, err = vf(args, env)
        assert code != 0, args
        assert needle in err and "Traceback" not in err, (args, err)
    code, _, err = vf(["env", "push", str(tmp_path)], {**cfg, "VF_HUB_URL": hub.url})
    assert code == 1 and "vf login" in err


def test_env_install_pins_version_into_current_interpreter(
    hub: Hub, cfg: dict[str, str], tmp_path: Path
) -> None:
    owner, token = hub.new_user()
    name = hub.unique("inst-env")
    for v in ("1.0.0", "1.2.0"):
        assert hub.upload(hub.wheel(name, v), token, private="true").status_code == 200
    py = fresh_venv(tmp_path / "venv")
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token}
    r = vf_in(py, ["env", "install", f"{owner}/{name}@1.0.0"], env)
    assert r.returncode == 0, r.stderr
    check = [str(py), "-c", f"import importlib.metadata as m; print(m.version({name!r}))"]
    assert subprocess.run(check, capture_output=True, text=True).stdout.strip() == "1.0.0"
    # into the new environment, not the one running the tests
    assert list(
        (tmp_path / "venv").glob(
            f"lib/python*/site-packages/{name.replace('-', '_')}-1.0.0.dist-info"
        )
    )
    r = vf_in(py, ["env", "install", f"{owner}/{name}"], env)
    assert r.returncode == 0, r.stderr
    assert subprocess.run(check, capture_output=True, text=True).stdout.strip() == "1.2.0"
    # private: without a token it is not found
    r = vf_in(py, ["env", "install", f"{owner}/{name}"], {**env, "VF_HUB_TOKEN": ""})
    assert r.returncode == 1 and "no environment" in r.stderr
    r = vf_in(py, ["env", "install", f"{owner}/{name}@7.0"], env)
    assert r.returncode == 1 and "no version 7.0" in r.stderr
    r = vf_in(py, ["env", "uninstall", f"{owner}/{name}"], env)
    assert r.returncode == 0 and f"uninstalled {name} 1.2.0" in r.stdout, r.stderr
    assert subprocess.run(check, capture_output=True, text=True).returncode != 0
    r = vf_in(py, ["env", "uninstall", f"{owner}/{name}"], env)
    assert r.returncode == 1 and "is not installed" in r.stderr and "Traceback" not in r.stderr


ORACLE_ENV = """
import verifiers as vf

def load_environment(**kwargs):
    rows = [{"question": "2+2?", "answer": "4"}, {"question": "3+3?", "answer": "6"}]

    def exact(completion, answer) -> float:
        return float(completion[-1]["content"] == answer)

    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]), **kwargs)
"""


def test_vf_eval_owner_name_installs_from_the_hub_when_asked(
    hub: Hub, cfg: dict[str, str], tmp_path: Path
) -> None:
    owner, token = hub.new_user()
    name = hub.unique("eval-inst")
    assert hub.upload(hub.wheel(name, "1.0.0", module_body=ORACLE_ENV), token).status_code == 200
    py = fresh_venv(tmp_path / "venv")
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token}
    args = [f"{owner}/{name}", "-m", "oracle", "-n", "2", "-r", "1"]
    r = vf_in(py, args, env, entry="eval_main")  # no terminal: no prompt, a clear next step
    assert r.returncode == 2 and "--install" in r.stderr, r.stderr
    r = vf_in(py, [*args, "--install"], env, entry="eval_main")
    assert r.returncode == 0, r.stderr
    assert f"installed {owner}/{name}==1.0.0" in r.stdout and "1.0000" in r.stdout


def test_env_install_ignores_configured_extra_indexes_and_find_links(
    hub: Hub, cfg: dict[str, str], tmp_path: Path
) -> None:
    """A same-version wheel that pip would rank higher (a more specific tag), offered by the
    user's pip config, must not replace the hub's: the project index is the only source."""
    import shutil

    owner, token = hub.new_user()
    name = hub.unique("shadow-env")
    assert hub.upload(hub.wheel(name, module_body="WHO = 'hub'\n"), token).status_code == 200
    evil = hub.wheel(name, module_body="WHO = 'shadow'\n")
    links = tmp_path / "links"
    links.mkdir()
    shutil.copy(evil, links / evil.name.replace("-py3-none-any", "-py311-none-any"))
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nfind-links = {links}\nextra-index-url = {links.as_uri()}\n")
    py = fresh_venv(tmp_path / "venv")
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token, "PIP_CONFIG_FILE": str(conf)}
    r = vf_in(py, ["env", "install", f"{owner}/{name}"], env)
    assert r.returncode == 0, r.stderr
    mod = name.replace("-", "_")
    who = subprocess.run(
        [str(py), "-c", f"import {mod}; print({mod}.WHO)"], capture_output=True, text=True
    )
    assert who.stdout.strip() == "hub", who.stdout + who.stderr


def test_env_install_of_an_sdist_only_release_names_the_problem(
    hub: Hub, cfg: dict[str, str], tmp_path: Path
) -> None:
    from .wheelfactory import make_sdist

    owner, token = hub.new_user()
    name = hub.unique("sdonly-env")
    assert hub.upload(make_sdist(tmp_path, name, "1.0.0"), token).status_code == 200
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token}
    code, _, err = vf(["env", "install", f"{owner}/{name}"], env)
    assert code == 1 and "has no wheel to install" in err, err


def test_push_built_wheel_private_under_org(hub: Hub, cfg: dict[str, str]) -> None:
    _, token = hub.new_user()
    org = hub.unique("cli-org")
    assert hub.api("POST", "/orgs", token, json={"name": org}).status_code == 201
    env = {**cfg, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token}
    name = hub.unique("orgpriv-env")
    wheel = hub.wheel(name)
    code, out, err = vf(["env", "push", str(wheel), "--owner", org, "--private", "--json"], env)
    assert code == 0, err
    assert json.loads(out)["owner"] == org
    code, out, _ = vf(["env", "info", f"{org}/{name}"], env)
    assert "(private)" in out
    code, _, err = vf(["env", "info", f"{org}/{name}"], {**env, "VF_HUB_TOKEN": ""})
    assert code == 1 and "no environment" in err
    _, other = hub.new_user()
    code, _, err = vf(
        ["env", "push", str(hub.wheel(hub.unique("x-env"))), "--owner", org],
        {**env, "VF_HUB_TOKEN": other},
    )
    assert code == 1 and "not a member" in err and "(HTTP 403)" in err


def test_hub_gc_deletes_only_old_unreferenced_blobs(hub: Hub, tmp_path: Path) -> None:
    import io
    import os
    import time

    from hub_server.services import open_service
    from hub_server.settings import Settings
    from hub_server.storage import blob_key

    data = tmp_path / "gcdata"
    service = open_service(Settings(data_dir=data))
    _, token = service.create_user("gc-user")
    from .wheelfactory import make_wheel

    wheel = make_wheel(tmp_path, "gc-env", "1.0")
    principal = service.authenticate(token)
    import hashlib

    raw = wheel.read_bytes()
    with wheel.open("rb") as f:
        kept = service.upload(
            principal, f, wheel.name, sha256=hashlib.sha256(raw).hexdigest(), size=len(raw)
        )
    orphan_old, orphan_new = blob_key("a" * 64), blob_key("b" * 64)
    for key in (orphan_old, orphan_new):
        service.storage.put(key, io.BytesIO(b"lost upload"))
    old = time.time() - 7200
    os.utime(service.storage.path(orphan_old), (old, old))  # type: ignore[attr-defined]
    os.utime(service.storage.path(blob_key(kept.sha256)), (old, old))  # type: ignore[attr-defined]
    service.engine.dispose()

    code, out, err = vf(["hub", "gc", "--dry-run", "--data-dir", str(data)], {})
    assert code == 0 and out.split() == [orphan_old] and "would delete 1" in err
    code, out, err = vf(["hub", "gc", "--data-dir", str(data)], {})
    assert code == 0 and out.split() == [orphan_old]
    assert not (data / "blobs" / orphan_old).exists()
    assert (data / "blobs" / orphan_new).exists()  # young: may belong to an upload in flight
    assert (data / "blobs" / blob_key(kept.sha256)).exists()  # referenced


def test_hub_serve_port_0_prints_the_real_url(hub: Hub, tmp_path: Path) -> None:
    import re

    cmd = [sys.executable, "-c", "from cli.main import main; main()", "hub", "serve"]
    proc = subprocess.Popen(
        [*cmd, "--port", "0", "--data-dir", str(tmp_path / "d"), "--log-level", "warning"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # blocks until the server is listening
        found = re.search(r"serving on (http://127\.0\.0\.1:(\d+))", line)
        assert found and found.group(2) != "0", line
        import httpx

        assert httpx.get(found.group(1) + "/healthz").json() == {"status": "ok"}
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()  # ResourceWarning (an error under pytest) otherwise
    taken = hub.url.rsplit(":", 1)[1]
    r = subprocess.run(
        [*cmd, "--port", taken, "--data-dir", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and "cannot listen on" in r.stderr and "Traceback" not in r.stderr
