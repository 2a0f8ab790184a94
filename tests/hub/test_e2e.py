"""The whole path, dependency-free: vf env init -> vf env push -> vf env install in a fresh
virtual environment -> load it -> vf-eval -m oracle."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .clitools import fresh_venv, vf, vf_in
from .conftest import Hub

pytestmark = pytest.mark.parametrize("hub", ["sqlite-local"], indirect=True)


def test_push_install_load_evaluate(hub: Hub, tmp_path: Path) -> None:
    owner, token = hub.new_user()
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "VF_HUB_URL": hub.url,
        "VF_HUB_TOKEN": token,
    }
    name = hub.unique("e2e-env")
    assert vf(["env", "init", name, "--path", str(tmp_path / "src")], env)[0] == 0
    code, _, err = vf(["env", "push", str(tmp_path / "src" / name)], env)
    assert code == 0, err

    py = fresh_venv(tmp_path / "venv")
    r = vf_in(py, ["env", "install", f"{owner}/{name}"], env)
    assert r.returncode == 0, r.stderr
    assert f"installed {owner}/{name}==0.1.0" in r.stdout

    load = subprocess.run(
        [
            str(py),
            "-c",
            f"import verifiers as vf; e = vf.load_environment({name!r}); print(type(e).__name__)",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert load.returncode == 0, load.stderr
    assert load.stdout.strip().splitlines()[-1] == "SingleTurnEnv"

    out_dir = tmp_path / "results"
    r = vf_in(
        py,
        [name, "-m", "oracle", "-n", "5", "-r", "1", "-o", str(out_dir), "--json"],
        env,
        entry="eval_main",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["env_distribution"] == name and report["env_version"] == "0.1.0"
    assert report["summary"]["num_rollouts"] == 5
    assert report["summary"]["num_errors"] == 0
    assert report["summary"]["avg_reward"] == 1.0  # the oracle answers the scaffold correctly
