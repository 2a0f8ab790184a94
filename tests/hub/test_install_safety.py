"""`vf env install` takes only the hub's bytes (issue 13, point 7): the environment and its
hub-hosted dependencies come from the hub, sha256-checked, whatever pip settings the user's
environment carries; better-ranked wheels offered through find-links or constraints lose."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from verifiers.hub import schemas as s
from verifiers.hub.install import InstallError, download_verified, locked_pip_env

from .clitools import fresh_venv, vf_in
from .conftest import Hub


def _attacker_links(hub: Hub, tmp_path: Path, *names: str) -> Path:
    """A find-links directory with a build-tagged (better ranked) wheel of each name."""
    links = tmp_path / "links"
    links.mkdir()
    for name in names:
        evil = hub.wheel(name, module_body="WHO = 'attacker'\n")
        shutil.copy(evil, links / evil.name.replace("-1.0.0-", "-1.0.0-9-"))
    return links


def test_env_and_hub_hosted_dependency_come_from_the_hub(hub: Hub, tmp_path: Path) -> None:
    owner, token = hub.new_user()
    dep, env_name = hub.unique("dep"), hub.unique("envx")
    assert hub.upload(hub.wheel(dep, module_body="WHO = 'hub'\n"), token).status_code == 200
    env_wheel = hub.wheel(env_name, module_body="WHO = 'hub'\n", requires_dist=[f"{dep}>=1"])
    assert hub.upload(env_wheel, token).status_code == 200
    links = _attacker_links(hub, tmp_path, dep, env_name)
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(f"{dep}==1.0.0\n{env_name}==1.0.0\n")
    py = fresh_venv(tmp_path / "venv")
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "VF_HUB_URL": hub.url,
        "VF_HUB_TOKEN": token,
        "PIP_FIND_LINKS": str(links),
        "PIP_CONSTRAINT": str(constraints),
        "PIP_PREFER_BINARY": "1",
    }
    r = vf_in(py, ["env", "install", f"{owner}/{env_name}@1.0.0"], env)
    assert r.returncode == 0, r.stderr
    for name in (dep, env_name):
        mod = name.replace("-", "_")
        who = subprocess.run(
            [str(py), "-c", f"import {mod}; print({mod}.WHO)"], capture_output=True, text=True
        )
        assert who.stdout.strip() == "hub", (name, who.stdout, who.stderr)


def test_locked_pip_env_drops_every_redirecting_setting() -> None:
    env = {
        "PIP_INDEX_URL": "http://evil/simple",
        "PIP_EXTRA_INDEX_URL": "http://evil/simple",
        "PIP_FIND_LINKS": "/evil",
        "PIP_CONSTRAINT": "/evil/c.txt",
        "PIP_REQUIREMENT": "/evil/r.txt",
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": "/evil/pip.conf",
        "PIP_CERT": "/etc/ssl/ca.pem",
        "PATH": "/usr/bin",
    }
    locked = locked_pip_env(env)
    assert locked["PIP_CONFIG_FILE"] != "/evil/pip.conf"
    assert {k for k in locked if k.startswith("PIP_")} == {
        "PIP_CONFIG_FILE",
        "PIP_CERT",
        "PIP_DISABLE_PIP_VERSION_CHECK",
    }
    assert locked["PATH"] == "/usr/bin"


def test_a_file_whose_bytes_differ_from_the_hubs_record_is_refused(
    hub: Hub, tmp_path: Path
) -> None:
    owner, token = hub.new_user()
    name = hub.unique("tampered")
    r = hub.upload(hub.wheel(name), token)
    sha = r.json()["sha256"]
    release = s.ReleaseOut.model_validate(
        hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0").json()
    )
    hub.tamper(f"sha256/{sha[:2]}/{sha}", b"not the wheel")

    class Client:
        url, token = hub.url, None

    with pytest.raises(InstallError, match="refusing to install"):
        download_verified(Client(), release.files[0], tmp_path)  # type: ignore[arg-type]
