"""Framework overhead of this verifiers against upstream ``verifiers==0.3.1``, in one run.

Three environments written once against the classic API (single-turn math with a boxed answer,
a 5-turn dialogue, a one-tool ToolEnv) are evaluated at 256 concurrent rollouts against the
project's OpenAI-compatible test server, which runs in its own process. Each (framework, env)
pair runs in a fresh child process: ours under this venv through ``vf.evaluate`` with the
``NativeClient``; upstream under a separate venv through the classic ``env.evaluate`` with a
``vf.ClientConfig`` (what upstream's own ``vf-eval`` passes: its ``openai`` SDK client). A child reports wall time, CPU seconds (user + system, the
process and its children) of the timed evaluation, and its peak RSS; the parent prints the
table and the ratios.

Set-up of the upstream venv (once; ``.bench-venvs/`` is git-ignored)::

    python -m venv .bench-venvs/verifiers-0.3.1
    .bench-venvs/verifiers-0.3.1/bin/pip install verifiers==0.3.1

Run::

    .venv/bin/python bench/sdk_bench.py                 # 512 rollouts per env, 256 in flight
    .venv/bin/python bench/sdk_bench.py --rollouts 1024 --json
    .venv/bin/python bench/sdk_bench.py --clients       # CPU per request of the HTTP clients

This file is also the server's responder (``sdk_bench:respond``) and the child driver
(``--child``), so it must import nothing from verifiers at module level.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_UPSTREAM = ROOT / ".bench-venvs" / "verifiers-0.3.1" / "bin" / "python"
ENVS = ("math", "dialogue", "tool")
MODEL = "toy-model"
FILLER = (
    "Let me work through this carefully, checking each intermediate quantity against the "
    "statement of the problem before moving on to the next step of the argument. "
)

# ------------------------------------------------------------------------------------------
# the model: a responder for the test server (runs in the server process)


def respond(request: dict[str, Any]) -> Any:
    """Answer the three benchmark environments like a competent model, in ~100 tokens."""
    messages = request["messages"]
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    if request.get("tools"):
        tool_results = [m for m in messages if m["role"] == "tool"]
        key = re.search(r"code of item (\d+)", first_user)
        if not tool_results:
            return {
                "content": FILLER,
                "tool_calls": [{"name": "lookup", "arguments": {"item": int(key.group(1))}}]
                if key
                else [],
            }
        return f"{FILLER}The code is \\boxed{{{tool_results[-1]['content']}}}."
    m = re.search(r"What is (\d+) \+ (\d+)\?", first_user)
    if m and len(messages) <= 2:
        total = int(m.group(1)) + int(m.group(2))
        return f"<think>\n{FILLER}\n</think>\nThe sum is \\boxed{{{total}}}."
    turn = sum(1 for x in messages if x["role"] == "assistant") + 1
    return f"Turn {turn}. {FILLER}{FILLER}"


# ------------------------------------------------------------------------------------------
# the environments, in the classic API (run in the child, under either framework)


def lookup(item: int) -> str:
    """Look up the secret code of an item.

    Args:
        item: the item number
    """
    return f"C{item * 7919 % 10007}"


def build_env(vf: Any, name: str, n: int) -> Any:
    from datasets import Dataset

    if name == "math":
        rows = [{"question": f"What is {i} + {i + 7}?", "answer": str(2 * i + 7)} for i in range(n)]
        parser = vf.ThinkParser(extract_fn=vf.extract_boxed_answer)

        def correct_answer(parser: Any, completion: Any, answer: str, **kwargs: Any) -> float:
            return 1.0 if parser.parse_answer(completion) == answer else 0.0

        ds = Dataset.from_list(rows)
        return vf.SingleTurnEnv(
            dataset=ds,
            eval_dataset=ds,
            system_prompt="Think inside <think> tags, then give the answer in \\boxed{}.",
            parser=parser,
            rubric=vf.Rubric(funcs=[correct_answer], weights=[1.0], parser=parser),
        )
    if name == "dialogue":

        class DialogueEnv(vf.MultiTurnEnv):  # type: ignore[name-defined,misc]
            async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
                k = sum(1 for m in messages if m["role"] == "assistant")
                return [{"role": "user", "content": f"Go on with part {k + 1}, please."}]

        def turns_taken(completion: Any, **kwargs: Any) -> float:
            return sum(1 for m in completion if m["role"] == "assistant") / 5

        rows = [
            {"question": f"Tell me a story about the number {i}.", "answer": ""} for i in range(n)
        ]
        ds = Dataset.from_list(rows)
        return DialogueEnv(
            dataset=ds, eval_dataset=ds, max_turns=5, rubric=vf.Rubric(funcs=[turns_taken])
        )
    if name == "tool":

        def code_found(completion: Any, answer: str, **kwargs: Any) -> float:
            return 1.0 if answer in str(completion[-1].get("content") or "") else 0.0

        rows = [
            {"question": f"Find the code of item {i} with the tool.", "answer": lookup(i)}
            for i in range(n)
        ]
        ds = Dataset.from_list(rows)
        return vf.ToolEnv(
            dataset=ds,
            eval_dataset=ds,
            tools=[lookup],
            max_turns=3,
            rubric=vf.Rubric(funcs=[code_found]),
        )
    raise SystemExit(f"unknown env {name!r}; choose from {ENVS}")


def _rusage_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _rewards(result: Any, framework: str) -> list[float]:
    if framework == "ours":
        return [float(r["reward"] or 0.0) for r in result.records]
    outputs = result["outputs"] if isinstance(result, dict) else getattr(result, "outputs", None)
    if outputs is not None:
        return [float(o.get("reward") or 0.0) for o in outputs]
    return [float(x) for x in getattr(result, "reward", [])]


def child(framework: str, env_name: str, base_url: str, n: int, concurrency: int) -> None:
    """Build the env, warm up, then time one evaluation; print one JSON line."""
    import asyncio
    import logging

    logging.disable(logging.WARNING)
    import verifiers as vf

    env = build_env(vf, env_name, n)

    if framework == "ours":
        client = vf.NativeClient(base_url)

        def run(num: int) -> Any:
            return vf.evaluate(
                env,
                client,
                MODEL,
                num_examples=num,
                rollouts_per_example=1,
                max_concurrent=concurrency,
            )

    else:
        # what upstream's own vf-eval does: a ClientConfig, resolved to its AsyncOpenAI wrapper
        os.environ["BENCH_API_KEY"] = "bench"
        config = vf.ClientConfig(api_base_url=base_url, api_key_var="BENCH_API_KEY")

        def run(num: int) -> Any:
            return asyncio.run(
                env.evaluate(
                    config,
                    MODEL,
                    num_examples=num,
                    rollouts_per_example=1,
                    max_concurrent=concurrency,
                    on_progress=lambda *a, **k: None,
                )
            )

    run(min(16, n))  # warm-up: lazy imports, first connections
    cpu0, t0 = _rusage_cpu(), time.perf_counter()
    result = run(n)
    wall, cpu = time.perf_counter() - t0, _rusage_cpu() - cpu0
    rewards = _rewards(result, framework)
    out = {
        "framework": framework,
        "env": env_name,
        "rollouts": n,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "avg_reward": sum(rewards) / len(rewards) if rewards else None,
        "scored": len(rewards),
    }
    print("RESULT " + json.dumps(out), flush=True)


# ------------------------------------------------------------------------------------------
# the parent


def _run_child(
    python: str, framework: str, env_name: str, base_url: str, n: int, concurrency: int
) -> dict[str, Any]:
    cmd = [python, str(Path(__file__).resolve()), "--child", framework, "--env", env_name]
    cmd += ["--base-url", base_url, "--rollouts", str(n), "--concurrency", str(concurrency)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TQDM_DISABLE"] = "1"
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=HERE, env=env, timeout=3600, check=False
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])  # type: ignore[no-any-return]
    raise RuntimeError(
        f"{framework}/{env_name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    )


def compare(args: argparse.Namespace) -> None:
    from verifiers.testing.server import ServerProcess

    upstream = args.upstream_python
    if not args.skip_upstream and not Path(upstream).exists():
        raise SystemExit(
            f"no upstream venv at {upstream}; create it with\n"
            "  python -m venv .bench-venvs/verifiers-0.3.1 && "
            ".bench-venvs/verifiers-0.3.1/bin/pip install verifiers==0.3.1\n"
            "or pass --upstream-python / --skip-upstream"
        )
    results: list[dict[str, Any]] = []
    with ServerProcess(responder="sdk_bench:respond", env={"PYTHONPATH": str(HERE)}) as srv:
        for env_name in args.envs:
            runs = [("ours", sys.executable)]
            if not args.skip_upstream:
                runs.append(("upstream", upstream))
            for framework, python in runs:
                r = _run_child(
                    python, framework, env_name, srv.base_url, args.rollouts, args.concurrency
                )
                results.append(r)
                print(
                    f"  {framework:8s} {env_name:8s} wall {r['wall_s']:7.2f}s  cpu {r['cpu_s']:7.2f}s  "
                    f"rss {r['peak_rss_mb']:6.0f}MB  reward {r['avg_reward']}",
                    file=sys.stderr,
                    flush=True,
                )
        server_stats = srv.stats()
    if args.json:
        print(json.dumps({"results": results, "server": server_stats}, indent=2))
        return
    print(
        f"\n{args.rollouts} rollouts per env, {args.concurrency} in flight; CPU = user+sys of the "
        "framework process during the timed evaluation\n"
    )
    header = (
        f"{'env':10s} {'framework':10s} {'wall s':>8s} {'CPU s/1k rollouts':>18s} "
        f"{'peak RSS MB':>12s} {'reward':>7s}"
    )
    print(header)
    print("-" * len(header))
    by = {(r["env"], r["framework"]): r for r in results}
    for env_name in args.envs:
        for fw in ("ours", "upstream"):
            r = by.get((env_name, fw))
            if r is None:
                continue
            per_k = r["cpu_s"] / r["rollouts"] * 1000
            print(
                f"{env_name:10s} {fw:10s} {r['wall_s']:8.2f} {per_k:18.2f} "
                f"{r['peak_rss_mb']:12.0f} {r['avg_reward']:7.3f}"
            )
    if not args.skip_upstream:
        print("\nratios (ours / upstream; lower is better, goal for CPU: <= 0.10)")
        print(f"{'env':10s} {'wall':>8s} {'CPU':>8s} {'peak RSS':>9s}")
        for env_name in args.envs:
            o, u = by[(env_name, "ours")], by[(env_name, "upstream")]
            print(
                f"{env_name:10s} {o['wall_s'] / u['wall_s']:8.3f} {o['cpu_s'] / u['cpu_s']:8.3f} "
                f"{o['peak_rss_mb'] / u['peak_rss_mb']:9.3f}"
            )


# ------------------------------------------------------------------------------------------
# CPU per request of the HTTP clients


def clients_bench(args: argparse.Namespace) -> None:
    import asyncio

    import openai

    from verifiers.clients.native import NativeClient
    from verifiers.clients.openai_client import OpenAIClient
    from verifiers.testing.server import ServerProcess

    n, inflight = args.requests, 64
    messages = [{"role": "user", "content": "What is 2 + 3?"}]

    async def drive(get: Any) -> float:
        sem = asyncio.Semaphore(inflight)

        async def one() -> None:
            async with sem:
                await get()

        await asyncio.gather(*(one() for _ in range(50)))  # warm-up
        c0 = _rusage_cpu()
        await asyncio.gather(*(one() for _ in range(n)))
        return (_rusage_cpu() - c0) / n * 1000

    async def main(base_url: str) -> dict[str, float]:
        out: dict[str, float] = {}
        native = NativeClient(base_url)
        out["NativeClient (aiohttp+orjson)"] = await drive(
            lambda: native.get_response(messages, MODEL)
        )
        await native.close()
        oc = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
        wrapped = OpenAIClient(oc)
        out["OpenAIClient (openai SDK, raw JSON)"] = await drive(
            lambda: wrapped.get_response(messages, MODEL)
        )
        out["openai SDK create() parsed"] = await drive(
            lambda: oc.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type]
        )
        await oc.close()
        return out

    with ServerProcess(responder="sdk_bench:respond", env={"PYTHONPATH": str(HERE)}) as srv:
        result = asyncio.run(main(srv.base_url))
    print(f"{n} chat requests, {inflight} in flight: client-process CPU per request")
    for name, ms in result.items():
        print(f"  {name:38s} {ms:6.3f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rollouts", type=int, default=512, help="rollouts per env (default 512)")
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--envs", type=lambda s: s.split(","), default=list(ENVS))
    p.add_argument("--upstream-python", default=str(DEFAULT_UPSTREAM))
    p.add_argument("--skip-upstream", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--clients", action="store_true", help="measure the HTTP clients instead")
    p.add_argument("--requests", type=int, default=2000, help="for --clients")
    p.add_argument("--child", choices=("ours", "upstream"), help=argparse.SUPPRESS)
    p.add_argument("--env", help=argparse.SUPPRESS)
    p.add_argument("--base-url", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.env, args.base_url, args.rollouts, args.concurrency)
    elif args.clients:
        clients_bench(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
