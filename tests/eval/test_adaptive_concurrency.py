"""``max_concurrent="auto"`` (``vf-eval -c auto``): against a rate-limited endpoint (the test
server's ``max_in_flight``: 429 beyond it) the run backs off once, then stays under the
endpoint's limit, and its throughput is close to the best fixed concurrency's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import verifiers as vf
from verifiers.testing.server import OpenAITestServer, ServerProcess


def exact(completion: vf.Messages, answer: str) -> float:
    return float(completion[-1]["content"] == "echo: " + answer)


def env(n: int) -> vf.SingleTurnEnv:
    rows = [{"question": f"q{i}", "answer": f"q{i}"} for i in range(n)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))


async def run(
    concurrency: int | str, n: int = 300
) -> tuple[vf.EvalResult, dict[str, object], float]:
    async with OpenAITestServer(
        latency=0.05, max_in_flight=12, retry_after=0.05, keep_requests=False
    ) as server:
        client = vf.NativeClient(server.base_url, retry=vf.RetryPolicy(max_retries=10))
        started = time.perf_counter()
        result = await vf.evaluate_async(
            env(n),
            client,
            "toy",
            num_examples=n,
            rollouts_per_example=1,
            max_concurrent=concurrency,
        )
        wall = time.perf_counter() - started
        await client.close()
        return result, server.stats.as_dict() | {"peak": server.stats.peak_in_flight}, wall


async def test_auto_backs_off_once_and_keeps_up_with_the_best_fixed_level() -> None:
    # the best fixed level is the endpoint's own ceiling
    fixed, _, _ = await run(12)
    assert fixed.summary["num_errors"] == 0
    auto, stats, _ = await run("auto:64")
    assert auto.summary["num_errors"] == 0
    conc = auto.metadata["concurrency"]
    assert conc["backoffs"] >= 1 and conc["peak"] <= 64
    assert auto.metadata["max_concurrent"] == "auto"
    # no request sent after the first backoff failed: the 429s are those of the one burst
    # that found the endpoint's ceiling (at most the slots in flight at the peak)
    assert conc["late_failures"] == 0, conc
    faults = stats["faults"]
    assert isinstance(faults, dict)
    assert 1 <= faults.get("429", 0) <= conc["peak"]
    assert conc["final"] <= 12 and conc["ceiling"] <= 12
    # it settles at (nearly) the endpoint's ceiling, so it keeps up with the best fixed level:
    # the throughput itself is measured in bench/concurrency_bench.py, not timed here
    assert conc["final"] >= 0.8 * 12, conc


def test_bad_concurrency_is_named() -> None:
    with pytest.raises(vf.ConfigError, match="'auto' or 'auto:N'"):
        vf.evaluate(env(1), model="oracle", max_concurrent="fast")


def test_vf_eval_c_auto(classic_envs_path: Path, tmp_path: Path) -> None:
    exe = str(Path(sys.executable).parent / "vf-eval")
    base = ["classic_single", "-m", "x", "-n", "20", "-r", "1"]
    with ServerProcess(responder="responders:solve", latency_ms=20) as server:
        proc = subprocess.run(
            [exe, *base, "-b", server.base_url, "-c", "auto:8", "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
        bad = subprocess.run(
            [exe, *base, "-b", server.base_url, "-c", "fast"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(proc.stdout)
    assert meta["max_concurrent"] == "auto" and meta["concurrency"]["upper"] == 8
    assert 1 <= meta["concurrency"]["peak"] <= 8
    assert bad.returncode == 2 and "'auto' or 'auto:MAX'" in bad.stderr
