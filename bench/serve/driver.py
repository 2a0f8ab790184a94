"""One measurement of ``bench/serve_bench.py``, run by the interpreter under test (this
verifiers, or verifiers 0.3.1 in its own venv); prints one JSON line.

    python driver.py MODE BASE_URL N IN_FLIGHT

MODE ``inprocess``: ``env.run_rollout(..., client=ClientConfig)`` in this process.
MODE ``group``: ``env.run_group`` of 8 copies of a row through the env server (as prime-rl
calls it); N rollouts are N/8 groups, IN_FLIGHT/8 groups at once.
MODE ``server``: the same calls with ``env_client=`` a ``ZMQEnvClient`` of a
``ZMQEnvServer`` spawned as prime-rl spawns it (authenticated with the per-user CURVE keys;
``VF_BENCH_INSECURE=1``: both ends ``insecure=True``, for the auth-on/off comparison). CPU is counted over this process and every
process it started (the server and its workers), from /proc.
"""

import asyncio
import json
import multiprocessing as mp
import os
import resource
import socket
import sys
import time
from importlib.metadata import version


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and its live descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    children = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def main(mode: str, base_url: str, n: int, in_flight: int) -> None:
    import verifiers as vf

    env = vf.load_environment("serve_bench_env", num_examples=1024)
    rows = env.get_dataset().to_list()
    config = vf.ClientConfig(
        client_idx=0,
        api_base_url=base_url,
        api_key_var="VF_BENCH_NO_KEY",
        max_connections=4096,
        max_keepalive_connections=4096,
    )
    sampling = {"temperature": 1.0}
    env_client = None
    process = None
    if mode in ("server", "group"):
        from verifiers.serve import ZMQEnvClient, ZMQEnvServer

        address = f"tcp://127.0.0.1:{free_port()}"
        security = {}
        if os.environ.get("VF_BENCH_INSECURE") == "1":
            security = {"insecure": True}
        process = mp.get_context("spawn").Process(
            target=ZMQEnvServer.run_server,
            args=("serve_bench_env", {"num_examples": 1024}, {}, "WARNING", None),
            kwargs=dict(address=address, console_logging=False, num_workers=1, **security),
        )
        process.start()
        env_client = ZMQEnvClient(address=address, name="bench", **security)
        await env_client.wait_for_server_startup(timeout=300)
    client = config
    if mode == "inprocess" and version("verifiers").startswith("0.3"):
        # 0.3.1 builds a new OpenAI client for every rollout given a ClientConfig in-process;
        # give it one client object, as its own env server does, so that the in-process
        # figure is its best case
        from verifiers.clients import resolve_client

        client = resolve_client(config)
    gate = asyncio.Semaphore(in_flight if mode != "group" else max(1, in_flight // 8))

    group_size = 8

    async def one_group(i):
        async with gate:
            outs = await env.run_group(
                [rows[i % len(rows)]] * group_size,
                client,
                "m",
                sampling,
                max_retries=0,
                state_columns=["trajectory"],
                env_client=env_client,
            )
            return sum(o["reward"] for o in outs) / len(outs)

    async def one(i):
        async with gate:
            kw = {"env_client": env_client} if env_client is not None else {}
            out = await env.run_rollout(
                rows[i % len(rows)],
                client=client,
                model="m",
                sampling_args=sampling,
                max_retries=0,
                state_columns=["trajectory"],
                **kw,
            )
            return out["reward"]

    if mode == "group":
        n = max(1, n // group_size) * group_size
        await asyncio.gather(*(one_group(i) for i in range(min(n, 256) // group_size)))
        cpu0, t0 = tree_cpu(os.getpid()), time.perf_counter()
        rewards = await asyncio.gather(*(one_group(i) for i in range(n // group_size)))
    else:
        await asyncio.gather(*(one(i) for i in range(min(n, 256))))  # warm-up: connections
        cpu0, t0 = tree_cpu(os.getpid()), time.perf_counter()
        rewards = await asyncio.gather(*(one(i) for i in range(n)))
    wall, cpu = time.perf_counter() - t0, tree_cpu(os.getpid()) - cpu0
    if env_client is not None:
        await env_client.close()
    if process is not None:
        process.terminate()
        process.join(30)
    print(
        json.dumps(
            {
                "mode": mode,
                "rollouts": n,
                "wall_s": wall,
                "cpu_s": cpu,
                "mean_reward": sum(rewards) / len(rewards),
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        ),
        flush=True,
    )


def worker_like_031() -> None:
    """The process set-up 0.3.1's env worker applies before it runs rollouts (uvloop, a
    512-thread default executor, a frozen GC): its in-process figure gets the same."""
    import gc

    import uvloop
    from verifiers.legacy.utils.thread_utils import install_default_executor, scale_executors

    uvloop.install()
    scale_executors(concurrency=512)
    gc.collect()
    gc.freeze()
    gc.set_threshold(150_000, 10, 10)
    return install_default_executor


if __name__ == "__main__":
    mode = sys.argv[1]
    install = None
    if mode == "inprocess" and version("verifiers").startswith("0.3"):
        install = worker_like_031()

    async def run() -> None:
        if install is not None:
            install()
        await main(mode, sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))

    asyncio.run(run())
