"""v1 benchmark: CPU per rollout of the v1 generation, ours against upstream verifiers 0.4.0, in
one run on the same test server and the same environments (issue 27).

    .venv/bin/python bench/v1_bench.py                         # ~6 minutes
    .venv/bin/python bench/v1_bench.py --rollouts 100 --null-rollouts 6 --upstream-python PY

Environments: upstream's own v1 fixtures from its sdist (``tests/v1/fixtures``): ``echo_v1``
(single-turn), ``echo_user_sim_v1`` (multi-turn: a scripted user over an interaction) and
``echo_tool_v1`` (tool: a ``vf.Toolset`` the model calls, then answers). Both packages load the
same modules. The model is the project's test server in its own process
(``verifiers.testing.server``, responder :func:`respond`, token ids on), so neither side pays
for it.

Each (side, environment, harness) runs in a fresh process: a warm-up batch, then the measured
batch; the figure is that process's CPU (user + system, plus reaped children: upstream's
``null`` harness starts a program per segment, its toolsets a server per rollout) per rollout.
Harnesses: ours ``null`` (in process); upstream ``inproc`` (a harness whose ``launch`` runs the
chat loop in process through upstream's interception endpoint: the cheapest upstream allows)
and upstream's built-in ``null`` (a Python program per segment). Goal: ours at most 1/20 of
upstream's in-process harness and at most 1/100 of its ``null``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENVS = {"single": "echo_v1", "multi": "echo_user_sim_v1", "tool": "echo_tool_v1"}
UPSTREAM_PYTHON = "/work/upstream/venv040/bin/python"


def respond(request: dict[str, Any]) -> Any:
    """The model: echo the phrase asked for; in the tool env call ``echo_back`` once, then
    answer with its result."""
    messages = request["messages"]
    if os.environ.get("VF_BENCH_LOG"):  # debugging: what the model was sent
        with open(os.environ["VF_BENCH_LOG"], "a") as log:
            log.write(json.dumps(request) + "\n")
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    text = content if isinstance(content, str) else ""
    tools = [t["function"]["name"] for t in request.get("tools") or []]
    if "echo_back" in tools:
        if last.get("role") == "tool":
            return f"<answer>{text}</answer>"
        return {"tool_calls": [{"name": "echo_back", "arguments": {"message": "hello world"}}]}
    if "exact phrase:" in text:
        return text.rsplit("exact phrase:", 1)[1].strip()
    return text


OURS = r"""
import asyncio, importlib, json, resource, sys, time
import verifiers.v1 as vf
from verifiers.clients.native import NativeClient

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

async def main(module, base_url, warmup, n):
    mod = importlib.import_module(module)
    classes = [getattr(mod, name) for name in mod.__all__]
    taskset_cls = next(c for c in classes if issubclass(c, vf.Taskset))
    env_cls = next((c for c in classes if issubclass(c, vf.Env)), vf.SingleAgentEnv)
    taskset = taskset_cls(taskset_cls.config_type()())
    env = env_cls(taskset)
    from verifiers.v1.configs.agent import agent_config_fields
    for name, seat in agent_config_fields(env.config).items():  # ours: the null harness, pinned
        if seat.harness is None:
            setattr(env.config, name, seat.model_copy(update={"harness": vf.NullHarnessConfig()}))
    client = NativeClient(base_url)
    sampling = {"extra_body": {"return_token_ids": True}}
    tasks = list(env.tasks())
    async def batch(k):
        per = max(1, k // len(tasks))
        return await env.evaluate(client, "m", rollouts_per_task=per, sampling=sampling)
    await batch(warmup)
    c0, t0 = cpu(), time.perf_counter()
    episodes = await batch(n)
    c1, t1 = cpu(), time.perf_counter()
    await client.close()
    traces = [t for e in episodes for t in e.traces]
    print(json.dumps({"n": len(episodes), "cpu_s": c1 - c0, "wall_s": t1 - t0,
                      "reward": sum(t.reward for t in traces) / max(1, len(traces)),
                      "errors": sum(1 for e in episodes if not e.ok)}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""

# Upstream's side: run_eval (its eval CLI in process) with a harness chosen by id; `inproc` is
# the module below, exporting a Harness whose launch runs the loop in this process.
INPROC_HARNESS = r"""
import json
import httpx
from verifiers.v1.harness import Harness
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.runtimes import ProgramResult
from verifiers.v1.dialects.chat import message_to_wire

class InprocHarnessConfig(HarnessConfig):
    pass

class InprocHarness(Harness[InprocHarnessConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, **_):
        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt:
            messages += [message_to_wire(m) for m in prompt]
        tools, sessions, stack = [], {}, None
        if mcp_urls:
            import contextlib
            from mcp import ClientSession
            try:
                from mcp.client.streamable_http import streamable_http_client as connect
            except ImportError:
                from mcp.client.streamable_http import streamablehttp_client as connect
            stack = contextlib.AsyncExitStack()
            for name, url in mcp_urls.items():
                streams = await stack.enter_async_context(connect(url))
                read, write = streams[0], streams[1]
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                for t in (await session.list_tools()).tools:
                    full = f"{name}_{t.name}" if name else t.name
                    sessions[full] = (session, t.name)
                    tools.append({"type": "function", "function": {
                        "name": full, "description": t.description or "",
                        "parameters": getattr(t, "inputSchema", None)
                                      or getattr(t, "input_schema", None)}})
        try:
            async with httpx.AsyncClient(timeout=600) as http:
                while True:
                    body = {"model": ctx.model, "messages": messages}
                    if tools:
                        body["tools"] = tools
                    r = await http.post(endpoint.rstrip("/") + "/chat/completions", json=body,
                                        headers={"Authorization": f"Bearer {secret}"})
                    r.raise_for_status()
                    msg = r.json()["choices"][0]["message"]
                    calls = msg.get("tool_calls") or []
                    messages.append({"role": "assistant", "content": msg.get("content"),
                                     **({"tool_calls": calls} if calls else {})})
                    if not calls:
                        break
                    for call in calls:
                        session, bare = sessions[call["function"]["name"]]
                        res = await session.call_tool(bare, json.loads(call["function"]["arguments"]))
                        out = "\n".join(getattr(c, "text", "") for c in res.content)
                        messages.append({"role": "tool", "tool_call_id": call["id"], "content": out})
        finally:
            if stack is not None:
                await stack.aclose()
        return ProgramResult(exit_code=0, stdout="", stderr="")

__all__ = ["InprocHarness"]
"""

UPSTREAM = r"""
import asyncio, json, resource, sys, tempfile, time
from pathlib import Path
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.utils.loaders import harness_config_type

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def config(taskset, harness, base_url, n, out):
    return EvalConfig(
        env={"taskset": {"id": taskset},
             "agent": {"harness": harness_config_type(harness)(id=harness), "max_turns": 8,
                       "runtime": {"type": "subprocess"}}},
        num_rollouts=n, model="m", rich=None, push=False,
        client={"base_url": base_url, "api_key_var": "VF_BENCH_KEY"},
        sampling={"max_tokens": 4096},
        output_dir=Path(out), run={"dir": f"r{n}"}, max_concurrent=32,
    )

async def main(taskset, harness, base_url, warmup, n):
    with tempfile.TemporaryDirectory() as out:
        await run_eval(config(taskset, harness, base_url, warmup, out))
        c0, t0 = cpu(), time.perf_counter()
        records = await run_eval(config(taskset, harness, base_url, n, out))
        c1, t1 = cpu(), time.perf_counter()
    traces = [t for r in records for t in r.traces]
    print(json.dumps({"n": len(records), "cpu_s": c1 - c0, "wall_s": t1 - t0,
                      "reward": sum(t.reward for t in traces) / max(1, len(traces)),
                      "errors": sum(1 for t in traces if not t.ok),
                      "first_error": next((str(t.errors[-1].message)[-600:] for t in traces
                                           if t.errors), None)}))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
"""


def fixtures_dir(sdist: str | None) -> Path:
    """Upstream's v1 fixture environments, from the pinned sdist (downloaded once)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import upstream_v1_suite as suite

    into = Path(tempfile.mkdtemp(prefix="vf-v1-bench-"))
    root: Path = suite.unpack(suite.sdist(sdist), into)
    return root / "tests" / "v1" / "fixtures"


def run_side(argv: list[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=tempfile.gettempdir()
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip()[-1500:]
        return {"error": f"exit {done.returncode}: {tail}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rollouts", type=int, default=60, help="measured rollouts (ours, inproc)")
    ap.add_argument("--null-rollouts", type=int, default=6, help="measured rollouts, upstream null")
    ap.add_argument("--warmup", type=int, default=6)
    ap.add_argument("--upstream-python", default=UPSTREAM_PYTHON)
    ap.add_argument("--sdist", default=None, help="verifiers-0.4.0.tar.gz (default: download)")
    ap.add_argument("--envs", nargs="*", default=list(ENVS), choices=list(ENVS))
    ap.add_argument("--skip-null", action="store_true", help="leave out upstream's null harness")
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()

    from verifiers.testing.server import ServerProcess

    fixtures = fixtures_dir(args.sdist)
    work = Path(tempfile.mkdtemp(prefix="vf-v1-bench-mods-"))
    (work / "inproc_harness.py").write_text(textwrap.dedent(INPROC_HARNESS))
    (work / "ours_driver.py").write_text(OURS)
    (work / "upstream_driver.py").write_text(UPSTREAM)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base["VF_BENCH_KEY"] = "bench"
    ours_env = {**base, "PYTHONPATH": os.pathsep.join([str(ROOT), str(fixtures)])}
    up_env = {**base, "PYTHONPATH": os.pathsep.join([str(work), str(fixtures)])}
    rows: list[tuple[str, str, dict[str, Any]]] = []
    server_env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench")])}
    with ServerProcess(responder="v1_bench:respond", env=server_env) as server:
        url = server.base_url
        for key in args.envs:
            module = ENVS[key]
            taskset_id = module.replace("_", "-")
            # upstream's tool env starts a toolset server process per rollout (seconds of CPU)
            slow = key == "tool"
            up_warm = "1" if slow else str(args.warmup)
            up_n = str(args.null_rollouts if slow else args.rollouts)
            runs = [
                ("ours null (in process)", [sys.executable, str(work / "ours_driver.py"),
                 module, url, str(args.warmup), str(args.rollouts)], ours_env),
                ("upstream inproc harness", [args.upstream_python, str(work / "upstream_driver.py"),
                 taskset_id, "inproc-harness", url, up_warm, up_n], up_env),
            ]  # fmt: skip
            if not args.skip_null:
                runs.append(
                    ("upstream null harness", [args.upstream_python,
                     str(work / "upstream_driver.py"), taskset_id, "null", url, "1",
                     str(args.null_rollouts)], up_env)
                )  # fmt: skip
            for label, argv, env in runs:
                result = run_side(argv, env, args.timeout)
                rows.append((key, label, result))
                print(key, label, json.dumps(result), flush=True)
    print()
    print(
        "| env | side / harness | rollouts | CPU ms per rollout | wall s | mean reward | errors |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    per: dict[tuple[str, str], float] = {}
    for key, label, r in rows:
        if "error" in r:
            print(f"| {key} | {label} | - | failed: {r['error'][:120]!r} | | | |")
            continue
        ms = 1000 * r["cpu_s"] / max(1, r["n"])
        per[(key, label)] = ms
        print(
            f"| {key} | {label} | {r['n']} | {ms:.2f} | {r['wall_s']:.2f} | "
            f"{r['reward']:.2f} | {r['errors']} |"
        )
    print()
    for key in args.envs:
        ours = per.get((key, "ours null (in process)"))
        for label, goal in (("upstream inproc harness", 20), ("upstream null harness", 100)):
            theirs = per.get((key, label))
            if ours and theirs:
                print(f"{key}: ours / {label} = 1/{theirs / ours:.0f} (goal 1/{goal})")


if __name__ == "__main__":
    main()
