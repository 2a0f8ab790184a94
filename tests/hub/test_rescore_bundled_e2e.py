"""Issue 36, done when: every bundled environment (and a v1 taskset scaffolded by
``vf env init --v1``) has an oracle run and a scripted-model run, pushed to a hub, that its
worker lists "re-scored" (the oracle's: "gold") with zero mismatches; and a v1 run started with
0.4's flags (``vf-eval NAME -m toy --client.base-url URL -n 2 -r 1 --no-rich --no-push``)
pushes with ``vf eval push RUN_DIR`` and is re-scored.

One hub (SQLite, local storage), one worker drain for all the runs: the worker replays each
record in its bubblewrap sandbox from the release's wheel as uploaded, never from this tree
(and a dependency from the hub's wheel of it: swe-agent's vf-swe-lite). The sandbox is nested:
code, python-repl, swe-lite and swe-agent start sandboxes of their own while they score.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from cli.eval_push import pack_run, read_run
from cli.packaging import build_wheel
from verifiers.testing.server import OpenAITestServer

from .conftest import Hub, make_settings
from .live import live_server
from .test_run_trust import _drain, _put, _result_id, _worker

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: environments/ folder -> entry point name (what `vf-eval NAME` takes)
BUNDLED = {
    "wordle": "wordle", "math": "math", "code": "code", "tool-use": "tool-use",
    "logic": "logic", "python-repl": "python-repl", "research": "research",
    "swe-lite": "swe-lite", "swe-agent": "swe-agent",
}  # fmt: skip
V1 = "v1e2e"
RUNS = ("oracle", "toy")


def _dist_version(src: Path) -> tuple[str, str]:
    import tomllib

    project = tomllib.loads((src / "pyproject.toml").read_text())["project"]
    return str(project["name"]), str(project["version"])


def _pin(run_dir: Path, dist: str, version: str, sha: str) -> None:
    """What a run records of an environment installed from the hub's wheel (`vf env install`
    from the hub: PEP 610 records the wheel's sha256, which `load_environment` puts in the
    run's metadata). The bundled environments are installed editable here (no wheel sha), so
    the run says what an install of the uploaded wheel would have said; the worker replays the
    uploaded wheel, never this tree."""
    path = run_dir / "metadata.json"
    meta = json.loads(path.read_text())
    assert meta["env_distribution"] == dist, meta.get("env_distribution")
    meta.update(env_distribution=dist, env_version=version, env_wheel_sha256=sha)
    path.write_text(json.dumps(meta))


def _push(hub: Hub, token: str, run_dir: Path, tmp: Path) -> str:
    """The request `vf eval push RUN_DIR` sends (its packing), returning the run id."""
    meta, results = read_run(run_dir)
    packed = tmp / f"{meta['run_id']}.jsonl.gz"
    pack_run(meta, results, packed)
    r = _put(hub.url, token, meta, packed.read_bytes())
    assert r.status_code == 201, r.text
    assert r.json()["pinned"] is True, r.json()
    return str(meta["run_id"])


@pytest.fixture(scope="module")
def sqlite_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """A hub of its own (the bundled names are fixed: no other test's releases of them)."""
    from hub_server.app import create_app

    tmp = tmp_path_factory.mktemp("e2e-hub")
    gen = make_settings("sqlite-local", None, tmp / "data")  # type: ignore[arg-type]
    settings = next(gen).with_(job_retry_s=0.0)
    app = create_app(settings)
    _, admin = app.state.service.create_user(f"admin-{uuid.uuid4().hex[:6]}", admin=True)
    try:
        with live_server(app) as url:
            yield Hub(url=url, app=app, settings=settings, admin_token=admin, tmp=tmp)
    finally:
        app.state.engine.dispose()
        gen.close()


def _vf_env(hub: Hub, token: str, tmp: Path, site: Path | None = None) -> dict[str, str]:
    path = [str(ROOT)] + ([str(site)] if site else [])
    return {**os.environ, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token,
            "XDG_CONFIG_HOME": str(tmp / "config"),
            "PYTHONPATH": os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")])}  # fmt: skip


def _exe(name: str) -> str:
    return str(Path(sys.executable).parent / name)


@pytest.fixture(scope="module")
def rescored(
    sqlite_hub: Hub, tmp_path_factory: pytest.TempPathFactory, mini_swe_agent_dir: Path
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every run pushed and re-scored by one worker drain: (environment, model) -> the run's
    row in the hub's API."""
    hub = sqlite_hub
    tmp = tmp_path_factory.mktemp("e2e-runs")
    owner, token = hub.new_user("bundled")
    started = time.monotonic()
    pushed: dict[tuple[str, str], tuple[str, str]] = {}  # -> (project, run id)
    with OpenAITestServer() as server:  # echo replies: a model that answers something
        for folder, env_id in BUNDLED.items():
            src = ROOT / "environments" / folder
            dist, version = _dist_version(src)
            wheel = build_wheel(src, tmp / "wheels" / folder)
            r = hub.upload(wheel, token)
            assert r.status_code == 200, r.text
            sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
            for model in RUNS:
                out = tmp / "runs" / folder / model
                client = None if model == "oracle" else server.base_url
                result = vf.evaluate(env_id, client, model, num_examples=2,
                                     rollouts_per_example=1, save_results=True,
                                     output_dir=out)  # fmt: skip
                assert len(result.records) == 2, (env_id, model)
                _pin(out, dist, version, sha)
                pushed[(env_id, model)] = (dist, _push(hub, token, out, tmp))
        # the v1 taskset: scaffolded, built, uploaded, installed from that wheel (pip records
        # its sha256), run with 0.4's flags and pushed with the real command
        init = subprocess.run([_exe("vf"), "env", "init", V1, "--v1"], cwd=tmp,
                              env=_vf_env(hub, token, tmp), capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert init.returncode == 0, init.stderr
        wheel = build_wheel(tmp / "environments" / V1, tmp / "wheels" / V1)
        r = hub.upload(wheel, token)
        assert r.status_code == 200, r.text
        site = tmp / "v1-site"
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                              "--target", str(site), str(wheel)],
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert pip.returncode == 0, pip.stderr
        env = _vf_env(hub, token, tmp, site)
        run = subprocess.run(
            [_exe("vf-eval"), V1, "-m", "toy", "--client.base-url", server.base_url,
             "-n", "2", "-r", "1", "--no-rich", "--no-push"],
            cwd=tmp, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
    (meta_path,) = (tmp / "outputs").rglob("metadata.json")
    meta = json.loads(meta_path.read_text())
    assert meta["env_wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest(), meta
    push = subprocess.run([_exe("vf"), "eval", "push", str(meta_path.parent), "--json"],
                          cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert push.returncode == 0, push.stdout + push.stderr
    answer = json.loads(push.stdout.strip().splitlines()[-1])
    assert answer["pinned"] is True, answer
    pushed[(V1, "toy")] = (V1, str(answer["run_id"]))
    made = time.monotonic()
    service, worker = _worker(hub)
    try:
        _drain(worker, {("rescore", _result_id(hub, rid)) for _, rid in pushed.values()})
    finally:
        service.engine.dispose()
    print(f"\nruns made and pushed in {made - started:.0f}s, re-scored in "
          f"{time.monotonic() - made:.0f}s")  # fmt: skip
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, (project, rid) in pushed.items():
        listed = hub.api("GET", f"/projects/{owner}/{project}/versions/0.1.0/runs").json()
        (row,) = [r for r in listed if r["run_id"] == rid]
        rows[key] = row
        rs = row.get("rescore") or {}
        print(f"{key[0]:>12} {key[1]:>6}: {row['provenance']:<16} "
              f"{rs.get('status')} agreed={rs.get('agreed')} mismatches={rs.get('mismatches')} "
              f"unscorable={rs.get('unscorable')} {rs.get('error') or ''}")  # fmt: skip
    return rows


#: a v1 taskset has no oracle (it needs a model): its run is the scripted model's
CASES = [(env_id, model) for env_id in BUNDLED.values() for model in RUNS] + [(V1, "toy")]


@pytest.mark.parametrize(("env_id", "model"), CASES)
def test_the_run_is_listed_re_scored_with_no_mismatch(
    rescored: dict[tuple[str, str], dict[str, Any]], env_id: str, model: str
) -> None:
    row = rescored[(env_id, model)]
    rs = row["rescore"]
    assert rs["status"] == "agree", row
    assert rs["mismatches"] == 0 and rs["unscorable"] == 0 and rs["agreed"] == 2, rs
    assert row["pinned"] is True
    expected = "gold" if model == "oracle" else "re-scored"
    assert row["provenance"] == expected, row


def test_swe_agent_s_dependency_came_from_the_hub(
    sqlite_hub: Hub, rescored: dict[tuple[str, str], dict[str, Any]]
) -> None:
    """vf-swe-agent requires vf-swe-lite: the job installed the wheel this hub holds (this
    interpreter's vf-swe-lite is an editable install, which the sandbox cannot see)."""
    from sqlalchemy import select

    from hub_server import models as m

    for model in RUNS:
        result_id = _result_id(sqlite_hub, rescored[("swe-agent", model)]["run_id"])
        with sqlite_hub.service.session() as db:
            job = db.scalar(
                select(m.Job).where(m.Job.kind == "rescore", m.Job.subject_id == result_id)
            )
            assert job is not None and job.status == "done", job
            log = str(job.log)
        assert "dependency: vf-swe-lite 0.1.0 from this hub (vf_swe_lite-0.1.0-" in log, log[:2000]
