"""``vf-eval -c auto`` against a rate-limited endpoint: wall time of the best fixed concurrency
(the endpoint's own ceiling) and of ``auto``, in one run on the same test server settings.

    .venv/bin/python bench/concurrency_bench.py [--rollouts 300] [--repeats 3]

The endpoint is the project's test server with ``max_in_flight=12`` (429 with ``Retry-After``
beyond it) and 50 ms per answer. Goal: ``auto`` keeps at least 80 % of the fixed level's
throughput (it pays for one burst of 429s to find the ceiling).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import verifiers as vf
from verifiers.testing.server import OpenAITestServer

CEILING = 12


def _exact(completion: vf.Messages, answer: str) -> float:
    return float(completion[-1]["content"] == "echo: " + answer)


async def _run(concurrency: int | str, n: int) -> tuple[float, dict[str, Any]]:
    rows = [{"question": f"q{i}", "answer": f"q{i}"} for i in range(n)]
    env = vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[_exact]))
    async with OpenAITestServer(
        latency=0.05, max_in_flight=CEILING, retry_after=0.05, keep_requests=False
    ) as server:
        client = vf.NativeClient(server.base_url, retry=vf.RetryPolicy(max_retries=10))
        started = time.perf_counter()
        result = await vf.evaluate_async(
            env, client, "toy", num_examples=n, rollouts_per_example=1,
            max_concurrent=concurrency,
        )  # fmt: skip
        wall = time.perf_counter() - started
        await client.close()
    if result.summary["num_errors"]:
        raise SystemExit(f"-c {concurrency}: {result.summary['num_errors']} rollouts errored")
    return wall, dict(result.metadata.get("concurrency") or {})


async def main(rollouts: int, repeats: int) -> None:
    await _run(CEILING, 10)  # warm-up: imports and first connections
    fixed, auto = [], []
    for _ in range(repeats):
        fixed.append((await _run(CEILING, rollouts))[0])
        wall, conc = await _run("auto:64", rollouts)
        auto.append(wall)
    f, a = statistics.median(fixed), statistics.median(auto)
    print(f"| -c | wall s (median of {repeats}, {rollouts} rollouts) | throughput vs fixed |")
    print("|---|---:|---:|")
    print(f"| {CEILING} (the endpoint's ceiling) | {f:.2f} | 100 % |")
    print(f"| auto:64 | {a:.2f} | {100 * f / a:.0f} % (goal >= 80 %) |")
    print(f"last auto run: {conc}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    ns = parser.parse_args()
    asyncio.run(main(ns.rollouts, ns.repeats))
