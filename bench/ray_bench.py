"""Sandboxed ``code`` rollouts per second (``-m oracle``): one process against a local Ray
cluster with the same cores, in one run, and the per-rollout costs behind the scaling model.

    .venv/bin/python bench/ray_bench.py [--examples 30] [--rollouts 4] [--rounds 3]

One process: ``vf.evaluate_async`` with ``--concurrency`` rollouts in flight. Ray: a throwaway
local cluster (``ray.init`` with this machine's CPUs, started once and kept for every round)
and one rollout worker per CPU, through :class:`verifiers.distributed.RayExecutor`; its rate
excludes the workers' start-up (loading the environment once per worker), reported apart.
Rounds interleave the two and the median is reported, so that other load on the machine
affects both alike. The driver's CPU seconds per rollout bound what one driver can feed: the
scaling model for N machines is ``min(N x per-machine rate, 1 / driver CPU per rollout)``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def one_process(env_id: str, n: int, r: int, concurrency: int) -> dict[str, float]:
    import verifiers as vf

    env = vf.load_environment(env_id)
    cpu0, t0 = time.process_time(), time.perf_counter()
    result = await vf.evaluate_async(
        env, model="oracle", num_examples=n, rollouts_per_example=r, max_concurrent=concurrency
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await env.close()
    _check(result.records, n * r)
    return {"rate": n * r / wall, "wall": wall, "driver_cpu": cpu / (n * r)}


async def on_ray(env_id: str, n: int, r: int, concurrency: int, workers: int) -> dict[str, float]:
    import verifiers as vf
    from verifiers.distributed import EnvSpec, RayConfig, RayExecutor

    env = vf.load_environment(env_id)
    executor = RayExecutor(EnvSpec.of(env_id), RayConfig(address="local", num_workers=workers))
    cpu0, t0 = time.process_time(), time.perf_counter()
    result = await vf.evaluate_async(
        env,
        model="oracle",
        num_examples=n,
        rollouts_per_example=r,
        max_concurrent=concurrency,
        executor=executor,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await env.close()
    _check(result.records, n * r)
    startup = float(executor.summary().get("startup_s", 0.0))
    return {
        "rate": n * r / (wall - startup),
        "wall": wall,
        "startup": startup,
        "driver_cpu": cpu / (n * r),
    }


def _check(records: list[dict[str, Any]], total: int) -> None:
    rewards = [rec["reward"] for rec in records]
    if len(records) != total or any(x != 1.0 for x in rewards):
        raise SystemExit(f"bench run is wrong: {len(records)} records, rewards {set(rewards)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", default="code")
    p.add_argument("--examples", type=int, default=30)
    p.add_argument("--rollouts", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    import ray

    cpus = os.cpu_count() or 1
    # one local cluster for every round (its start-up is not the rate being measured)
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    local: list[dict[str, float]] = []
    remote: list[dict[str, float]] = []
    try:
        for _ in range(args.rounds):
            size = (args.env, args.examples, args.rollouts, args.concurrency)
            local.append(asyncio.run(one_process(*size)))
            remote.append(asyncio.run(on_ray(*size, workers=cpus)))
    finally:
        ray.shutdown()
    _report(args, cpus, local, remote)


def _report(
    args: argparse.Namespace,
    cpus: int,
    local: list[dict[str, float]],
    remote: list[dict[str, float]],
) -> None:
    def med(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    total = args.examples * args.rollouts
    one, ray_rate = med(local, "rate"), med(remote, "rate")
    per_rollout_s = cpus / ray_rate  # core-seconds per rollout on a worker node
    driver = med(remote, "driver_cpu")
    print(f"{args.env} -m oracle, {total} rollouts per run, {cpus} cores, median of {args.rounds}")
    print("| setup | rollouts/s | wall s | driver CPU ms/rollout |")
    print("|---|---:|---:|---:|")
    print(
        f"| one process | {one:.1f} | {med(local, 'wall'):.2f} | {med(local, 'driver_cpu') * 1e3:.2f} |"
    )
    print(
        f"| local Ray, {cpus} workers | {ray_rate:.1f} | {med(remote, 'wall'):.2f} "
        f"(start-up {med(remote, 'startup'):.2f}) | {driver * 1e3:.2f} |"
    )
    print(f"Ray on one machine: {ray_rate / one:.2f}x the one-process rate")
    print(
        f"worker cost: {per_rollout_s * 1e3:.1f} core-ms per rollout; driver: {driver * 1e3:.2f} ms"
    )
    ceiling = 1.0 / driver if driver > 0 else float("inf")
    for n in (1, 4, 16, 64):
        model = min(n * ray_rate, ceiling)
        print(f"model, {n} machines of {cpus} cores: {model:.0f} rollouts/s")
    print(f"one driver's ceiling: {ceiling:.0f} rollouts/s")


if __name__ == "__main__":
    main()
