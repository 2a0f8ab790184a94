"""Eval runs pushed to the hub on both backends: pinned to the release and its wheel sha256,
unverified only on request, idempotent by run id, bounded, on the leaderboard, with their
pages; and `vf eval push` / `vf-eval --push` against the live hub."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from verifiers.testing.runs import write_run

from .conftest import Hub

HTML = {"Accept": "text/html"}


def _env_with_release(hub: Hub, prefix: str = "board") -> tuple[str, str, str, str]:
    owner, token = hub.new_user(prefix)
    name = hub.unique("lb-env")
    wheel = hub.wheel(name, "1.0.0")
    assert hub.upload(wheel, token).status_code == 200
    return owner, token, name, hashlib.sha256(wheel.read_bytes()).hexdigest()


def _packed(run: Path) -> bytes:
    meta = (run / "metadata.json").read_bytes().replace(b"\n", b"")
    return gzip.compress(meta + b"\n" + (run / "results.jsonl").read_bytes(), mtime=0)


def _push(hub: Hub, token: str, run: Path, **params: str) -> httpx.Response:
    run_id = json.loads((run / "metadata.json").read_text())["run_id"]
    return httpx.put(
        f"{hub.url}/api/v1/runs/{run_id}",
        content=_packed(run),
        params=params,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"},
        timeout=60,
    )


def test_push_pins_verifies_and_is_idempotent(hub: Hub, tmp_path: Path) -> None:
    owner, token, name, sha = _env_with_release(hub)
    meta = {"env_distribution": name, "env_version": "1.0.0", "env_wheel_sha256": sha}
    run = write_run(tmp_path / "run", 40, rollouts_per_example=4, meta=meta, error_every=20)
    first = _push(hub, token, run)
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["verified"] and body["created"] and body["num_rollouts"] == 40
    assert (body["owner"], body["name"], body["version"]) == (owner, name, "1.0.0")
    again = _push(hub, token, run)
    assert again.status_code == 200 and again.json()["created"] is False
    # the same run id with other results is refused
    (run / "results.jsonl").write_bytes(
        (run / "results.jsonl").read_bytes().replace(b'"format":1.0', b'"format":0.5', 1)
    )
    assert _push(hub, token, run).status_code == 409
    board = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0/leaderboard").json()
    assert len(board) == 1 and board[0]["model"] == "toy-model" and board[0]["verified"]
    assert board[0]["num_examples"] == 10 and board[0]["rollouts_per_example"] == 4
    assert board[0]["pass_at_k"].keys() == {"1", "2", "3", "4"}
    assert board[0]["url"] == f"/{owner}/{name}/runs/{body['run_id']}/"
    # leaderboard on the environment's page, linking to the run's page with its samples
    page = httpx.get(f"{hub.url}/{owner}/{name}", headers=HTML)
    assert f'href="{board[0]["url"]}"' in page.text and "toy-model" in page.text
    run_page = httpx.get(hub.url + board[0]["url"], headers=HTML)
    assert run_page.status_code == 200 and run_page.text.count('class="rollout-row"') == 40
    assert "self-reported" in run_page.text and "<svg" in run_page.text
    errored = httpx.get(hub.url + board[0]["url"], params={"errored": "yes"}, headers=HTML)
    assert errored.text.count('class="rollout-row"') == 2
    rollout = httpx.get(hub.url + board[0]["url"] + "rollouts/3", headers=HTML)
    assert rollout.status_code == 200 and "What is 3 + 3?" in rollout.text
    missing = httpx.get(hub.url + board[0]["url"] + "rollouts/40", headers=HTML)
    assert missing.status_code == 404


def test_unverified_runs_only_on_request(hub: Hub, tmp_path: Path) -> None:
    owner, token, name, _ = _env_with_release(hub, "unver")
    meta = {"env_distribution": name, "env_version": "1.0.0", "env_wheel_sha256": "ab" * 32}
    run = write_run(tmp_path / "run", 6, meta=meta)
    refused = _push(hub, token, run)
    assert refused.status_code == 400 and "--allow-unverified" in refused.json()["message"]
    ok = _push(hub, token, run, allow_unverified="true")
    assert ok.status_code == 201 and ok.json()["verified"] is False
    page = httpx.get(f"{hub.url}/{owner}/{name}", headers=HTML)
    assert "unpinned" in page.text


def test_push_errors_are_clear(hub: Hub, tmp_path: Path) -> None:
    _, token, name, sha = _env_with_release(hub, "errs")
    meta = {"env_distribution": name, "env_version": "9.9.9", "env_wheel_sha256": sha}
    run = write_run(tmp_path / "run", 3, meta=meta)
    r = _push(hub, token, run)
    assert r.status_code == 404 and "no version 9.9.9" in r.json()["message"]
    anonymous = httpx.put(f"{hub.url}/api/v1/runs/abcdefgh1234", content=_packed(run))
    assert anonymous.status_code == 401
    bad = httpx.put(
        f"{hub.url}/api/v1/runs/abcdefgh1234",
        content=b"not gzip",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert bad.status_code == 400 and "gzip" in bad.json()["message"]
    bad_id = httpx.put(
        f"{hub.url}/api/v1/runs/x",
        content=_packed(run),
        headers={"Authorization": f"Bearer {token}"},
    )
    assert bad_id.status_code == 400
    odd = write_run(
        tmp_path / "odd",
        3,
        meta={**meta, "env_version": "1.0.0", "num_examples": "many", "model": ["x"],
              "rollouts_per_example": True},
    )  # fmt: skip
    accepted = _push(hub, token, odd)
    assert accepted.status_code == 201, accepted.text  # odd metadata values: no 500
    not_json = gzip.compress(b"[1, 2]\n")
    r = httpx.put(
        f"{hub.url}/api/v1/runs/abcdefgh9999",
        content=not_json,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 400 and "metadata" in r.json()["message"]
    other = write_run(tmp_path / "other", 3, meta={"env_distribution": "no-such-env-here"})
    r = _push(hub, token, other)
    assert r.status_code == 404 and "--env OWNER/NAME" in r.json()["message"]


def test_uncompressed_size_is_bounded(tmp_path: Path) -> None:
    from hub_server.errors import TooLarge
    from hub_server.services.runs import unpack

    bomb = gzip.compress(b'{"run_id": "x"}\n' + b" " * 5_000_000)
    with pytest.raises(TooLarge):
        unpack(io.BytesIO(bomb), tmp_path / "out", 1_000_000)


def _vf(args: list[str], hub: Hub, token: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VF_HUB_URL": hub.url, "VF_HUB_TOKEN": token,
           "XDG_CONFIG_HOME": str(cwd / "config")}  # fmt: skip
    exe = Path(sys.executable).parent / args[0]
    return subprocess.run(
        [str(exe), *args[1:]], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_vf_eval_push_command(hub: Hub, tmp_path: Path) -> None:
    owner, token, name, sha = _env_with_release(hub, "cli")
    meta = {"env_distribution": name, "env_version": "1.0.0", "env_wheel_sha256": sha}
    run = write_run(tmp_path / "run", 8, meta=meta)
    first = _vf(["vf", "eval", "push", str(run)], hub, token, tmp_path)
    assert first.returncode == 0, first.stderr
    assert f"pushed {owner}/{name} 1.0.0" in first.stdout and "/runs/" in first.stdout
    second = _vf(["vf", "eval", "push", str(run), "--json"], hub, token, tmp_path)
    assert second.returncode == 0 and json.loads(second.stdout)["created"] is False
    nodir = _vf(["vf", "eval", "push", str(tmp_path / "nope")], hub, token, tmp_path)
    assert nodir.returncode == 2 and "not a run directory" in nodir.stderr
    unver = write_run(tmp_path / "unver", 4, meta={**meta, "env_wheel_sha256": None})
    refused = _vf(["vf", "eval", "push", str(unver)], hub, token, tmp_path)
    assert refused.returncode == 1 and "--allow-unverified" in refused.stderr
    assert "Traceback" not in refused.stderr
    ok = _vf(["vf", "eval", "push", str(unver), "--allow-unverified"], hub, token, tmp_path)
    assert ok.returncode == 0 and "(unpinned)" in ok.stdout


def test_vf_eval_push_flag_pushes_after_the_run(
    hub: Hub, tmp_path: Path, classic_envs_path: Path
) -> None:
    from verifiers.testing.server import ServerProcess

    _, token = hub.new_user("flag")
    with ServerProcess(responder="responders:solve") as server:
        proc = _vf(
            ["vf-eval", "classic_single", "-m", "toy", "-b", server.base_url, "-n", "2",
             "-r", "1", "--push"],
            hub, token, tmp_path,
        )  # fmt: skip
    # the run finished and was written; the push was tried and refused with the reason
    assert list(tmp_path.glob("outputs/evals/*/*/results.jsonl")), proc.stderr
    assert proc.returncode == 1 and "no environment classic_single" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_compressed_size_is_bounded_while_receiving(tmp_path: Path) -> None:
    from hub_server.app import create_app
    from hub_server.settings import Settings

    from .live import live_server

    app = create_app(Settings(data_dir=tmp_path / "hub", max_run_bytes=2000))
    _, token = app.state.service.create_user("small")
    run = write_run(tmp_path / "run", 200)
    try:
        with live_server(app) as url:
            auth = {"Authorization": f"Bearer {token}"}

            def chunks() -> object:  # no Content-Length: the limit holds while streaming
                data = _packed(run)
                for i in range(0, len(data), 1000):
                    yield data[i : i + 1000]

            streamed = httpx.put(f"{url}/api/v1/runs/abcdefgh1234", content=chunks(), headers=auth)
            assert streamed.status_code == 413 and "2000" in streamed.json()["message"]
            declared = httpx.put(
                f"{url}/api/v1/runs/abcdefgh1234", content=_packed(run), headers=auth
            )
            assert declared.status_code == 413
    finally:
        app.state.engine.dispose()
