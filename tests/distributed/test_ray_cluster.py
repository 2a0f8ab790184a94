"""Rollouts on a real three-node Ray cluster on this machine (see conftest.py).

The node-removal test stops a node of the module's cluster, so it runs last.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from tests.distributed.conftest import RAY_ENV, Cluster
from verifiers.distributed import EnvSpec, RayConfig, RayExecutor, RayGroupRunner, WorkerPool
from verifiers.loading import load_environment_from_directory

pytestmark = pytest.mark.ray

ROWS, N = 12, 2


def _env(**args: Any) -> vf.Environment:
    return load_environment_from_directory(RAY_ENV, **args)


def _executor(cluster: Cluster, on_started: Any = None, **args: Any) -> RayExecutor:
    return RayExecutor(
        EnvSpec.of(RAY_ENV, args),
        RayConfig(address=cluster.address, num_workers=3),
        on_started=on_started,
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / "results.jsonl").read_text().splitlines()]


def _comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without timing, in key order."""
    out = [{k: v for k, v in r.items() if k != "timing"} for r in records]
    return sorted(out, key=lambda r: (str(r["example_id"]), r["rollout_index"]))


def _exactly_once(path: Path) -> list[dict[str, Any]]:
    records = _lines(path)
    keys = Counter((r["example_id"], r["rollout_index"]) for r in records)
    assert len(keys) == ROWS * N and set(keys.values()) == {1}, keys
    return records


async def test_groups_run_on_every_node_and_match_one_process(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    args = {"num_rows": ROWS, "delay": 0.05, "seed": 7}
    local = await vf.evaluate_async(
        _env(**args), model="oracle", num_examples=ROWS, rollouts_per_example=N
    )
    executor = _executor(ray_cluster, **args)
    result = await vf.evaluate_async(
        _env(**args),
        model="oracle",
        num_examples=ROWS,
        rollouts_per_example=N,
        max_concurrent=6,
        output_dir=tmp_path,
        executor=executor,
    )
    by_node = result.metadata["executor"]["groups_by_node"]
    assert set(by_node) == set(ray_cluster.node_ids.values())
    assert all(count >= 1 for count in by_node.values()) and sum(by_node.values()) == ROWS
    assert result.metadata["executor"]["reruns"] == 0
    records = _exactly_once(tmp_path)
    assert _comparable(records) == _comparable(local.records) == _comparable(result.records)
    assert len({r["reward"] for r in records}) > 1  # seeded per rollout, not constant
    saved = json.loads((tmp_path / "metadata.json").read_text())
    assert saved["executor"]["workers"] == 3 and saved["status"] == "completed"


async def test_a_killed_worker_s_group_runs_again_elsewhere(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    import ray

    pools: list[WorkerPool] = []
    killed: list[Any] = []

    def kill_a_busy_worker(done: int, total: int, record: dict[str, Any]) -> None:
        if killed:
            return
        busy = [w for w in pools[0].workers if w.alive and w.busy > 0]
        assert busy, "no group in flight to interrupt"
        killed.append(busy[0].handle)
        ray.kill(busy[0].handle, no_restart=True)

    result = await vf.evaluate_async(
        _env(num_rows=ROWS, delay=0.3),
        model="oracle",
        num_examples=ROWS,
        rollouts_per_example=N,
        max_concurrent=6,
        output_dir=tmp_path,
        on_progress=kill_a_busy_worker,
        executor=_executor(ray_cluster, pools.append, num_rows=ROWS, delay=0.3),
    )
    summary = result.metadata["executor"]
    assert killed and summary["reruns"] >= 1 and summary["replaced_workers"] >= 1
    records = _exactly_once(tmp_path)
    assert all(r["error"] is None and r["reward"] >= 1.0 for r in records)


def test_driver_killed_with_sigkill_then_resumed_loses_nothing(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    env_args = json.dumps({"num_rows": ROWS, "delay": 0.4})
    cmd = [
        str(Path(sys.executable).parent / "vf-eval"),
        str(RAY_ENV),
        "-m", "oracle",
        "-n", str(ROWS),
        "-r", str(N),
        "-c", "2",
        "-a", env_args,
        "-o", str(out),
        "--ray", ray_cluster.address,
        "--ray-workers", "2",
        "--json",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    results = out / "results.jsonl"
    try:
        # wait (on the driver's own output file) until some rollouts are saved, then SIGKILL it
        deadline_lines = 4
        while not (results.is_file() and len(results.read_text().splitlines()) >= deadline_lines):
            try:  # the driver exiting early is a failure; otherwise look at the file again
                proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "exited")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    partial = len(results.read_text().splitlines())
    assert deadline_lines <= partial < ROWS * N
    done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    meta = json.loads(done.stdout)
    assert meta["resumed_records"] >= deadline_lines and meta["summary"]["num_rollouts"] == ROWS * N
    records = _lines(out)
    keys = Counter((r["example_id"], r["rollout_index"]) for r in records)
    assert len(keys) == ROWS * N  # every rollout is there; the kill lost at most those in flight


async def test_rollout_source_batches_from_ray_workers(ray_cluster: Cluster) -> None:
    from verifiers.train.rollout_source import RolloutSource, RolloutSourceConfig
    from verifiers.train.tiny import build_char_tokenizer

    runner = RayGroupRunner(
        EnvSpec.of(RAY_ENV, {"num_rows": 6}), RayConfig(address=ray_cluster.address, num_workers=2)
    )
    config = RolloutSourceConfig(
        model="oracle", rollouts_per_example=2, groups_per_batch=2, max_in_flight=2
    )
    source = RolloutSource(runner, vf.OracleClient(), config, tokenizer=build_char_tokenizer())
    try:
        batch = await source.next_batch(0)
    finally:
        await source.close()
        await runner.close()
    assert len({s.group_id for s in batch.samples}) == 2
    assert len(batch.samples) == 4 and all(s.num_loss_tokens > 0 for s in batch.samples)
    assert batch.metrics["reward"] > 1.0  # exact match plus the seeded term


async def test_a_removed_node_s_groups_run_again_on_the_others(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    pools: list[WorkerPool] = []
    stopped: list[str] = []

    def stop_node_c(done: int, total: int, record: dict[str, Any]) -> None:
        if not stopped:
            stopped.append("node_c")
            ray_cluster.stop_node("node_c")  # its raylet and workers end with it

    result = await vf.evaluate_async(
        _env(num_rows=ROWS, delay=0.3),
        model="oracle",
        num_examples=ROWS,
        rollouts_per_example=N,
        max_concurrent=6,
        output_dir=tmp_path,
        on_progress=stop_node_c,
        executor=_executor(ray_cluster, pools.append, num_rows=ROWS, delay=0.3),
    )
    summary = result.metadata["executor"]
    assert stopped and summary["reruns"] >= 1
    records = _exactly_once(tmp_path)
    assert all(r["error"] is None and r["reward"] >= 1.0 for r in records)
    node_c = ray_cluster.node_ids["node_c"]
    # groups finished on node_c before it went are kept; the rest ran on node_a and node_b
    assert sum(v for k, v in summary["groups_by_node"].items() if k != node_c) >= ROWS - 1
