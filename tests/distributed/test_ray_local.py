"""``vf-eval --ray local``: a throwaway single-machine Ray cluster that the run starts and
shuts down itself (a separate process: the driver owns its cluster)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.distributed.conftest import RAY_ENV

pytestmark = pytest.mark.ray

ROWS, N = 4, 2


def test_vf_eval_ray_local_starts_its_own_cluster_and_writes_every_rollout_once(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    cmd = [
        str(Path(sys.executable).parent / "vf-eval"), str(RAY_ENV),
        "-m", "oracle", "-n", str(ROWS), "-r", str(N), "-o", str(out),
        "--ray", "local", "--ray-workers", "2", "--json",
    ]  # fmt: skip
    # a cluster named elsewhere (nothing listens there) must not be joined: "local" is new
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:9", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    meta = json.loads(done.stdout)
    assert meta["summary"]["num_rollouts"] == ROWS * N
    assert meta["executor"]["workers"] == 2
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert Counter((r["example_id"], r["rollout_index"]) for r in records) == {
        (e, i): 1 for e in range(ROWS) for i in range(N)
    }
    assert all(r["error"] is None and r["reward"] >= 1.0 for r in records)


def test_vf_eval_ray_local_runs_a_v1_environment(tmp_path: Path) -> None:
    """A v1 taskset module (upstream 0.4's API) runs on the Ray workers as a classic
    environment does: each worker builds it by id and its rewards come back per rollout."""
    from verifiers.testing.server import ServerProcess

    fixtures = Path(__file__).resolve().parents[1] / "v1" / "fixtures"
    path = os.pathsep.join([str(fixtures), os.environ.get("PYTHONPATH", "")])
    env = {
        **os.environ,
        "PYTHONPATH": path,
        "RAY_ADDRESS": "127.0.0.1:9",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    out = tmp_path / "run"
    with ServerProcess(responder="v1_responders:count_words", env={"PYTHONPATH": path}) as srv:
        cmd = [
            str(Path(sys.executable).parent / "vf-eval"), "count-words-v1",
            "-m", "toy", "-b", srv.base_url, "-n", "2", "-r", "2", "-o", str(out),
            "--ray", "local", "--ray-workers", "2", "--json",
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    meta = json.loads(done.stdout)
    assert meta["summary"]["num_rollouts"] == 4 and meta["executor"]["workers"] == 2
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert Counter((r["example_id"], r["rollout_index"]) for r in records) == {
        (e, i): 1 for e in range(2) for i in range(2)
    }
    assert all(r["error"] is None and r["reward"] == 1.0 for r in records)
    assert all(r["metrics"]["correct"] == 1.0 for r in records)
