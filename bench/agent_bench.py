"""Agent benchmark: agent programs in sandboxes with intercepted model calls (issues 24, 38).

    .venv/bin/python bench/agent_bench.py                  # compare with upstream 0.4.0, ~4 min
    .venv/bin/python bench/agent_bench.py --pairs 5 --rollouts 12
    .venv/bin/python bench/agent_bench.py --sections interception per_step startup rollouts

Sections:
  compare        every process counted, ours against upstream verifiers 0.4.0 in the same run:
                 a standard-library agent (urllib, one keep-alive-less request per call) makes
                 1 or 20 model calls per rollout. Ours: CliAgentEnv, the agent in a bwrap
                 sandbox (the sandbox's agent hands the host a listener on the sandbox's
                 loopback: no relay process). Upstream: a v1 harness whose ``launch`` runs the
                 same program through ``runtime.run_program`` on its ``subprocess`` runtime
                 (no sandbox at all), driven by ``run_eval`` on its ``a three-task
                 taskset of the bench's own with no stop condition. Both call the project's test server (its own process, not counted).
                 Each side is a fresh process: a warm-up batch, then the measured one; CPU is
                 user + system of that process and every process it reaped (sandboxes, relays,
                 agents: RUSAGE_SELF + RUSAGE_CHILDREN around the measured batch). The sides
                 run in interleaved pairs (order alternating); median and min-max over pairs,
                 and the ratio of medians. The model requests the test server saw are checked
                 against rollouts x calls on both sides.
                 Goal (issue 38): ours <= 1/3 of upstream's CPU per model call at 20 calls and
                 <= 1/2 per 1-call rollout. Upstream venv: --upstream-python, default
                 ~/.cache/vf-bench/verifiers-0.4.0/bin/python (python -m venv it, then pip
                 install verifiers==0.4.0).
  interception   CPU of the environment process per intercepted call: HTTP parsing, the
                 queue, the answer's serialisation (an agent in another process sends keep-alive
                 requests over the channel's socket; the answer is ready-made)       goal < 1 ms
  per step       the same plus the rollout's step (get_model_response through an in-process
                 scripted model, the trajectory record): marginal CPU per call of a CliAgentEnv
                 rollout whose agent (in a bwrap sandbox) makes many calls           goal < 1 ms
  start-up       a fresh sandbox to the agent's first model call: the bash-loop agent and
                 mini-swe-agent (cached environment, read-only mount)
  rollouts/s     swe-agent tasks (bash-loop agent, -m oracle replies, grading in a fresh
                 sandbox) at 32 and 128 in flight; mini-swe-agent at a few in flight
                 (its start-up costs seconds of CPU: litellm's import), with the environment
                 process's own CPU per rollout (the framework) and the sandboxes' (reaped
                 children: the agents, the tests)

Measured on the shared 2-core development machine: see bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
for _env in ("swe-agent", "swe-lite"):
    sys.path.insert(0, str(ROOT / "environments" / _env))

import verifiers as vf  # noqa: E402
from verifiers.agents.interception import InterceptionServer  # noqa: E402
from verifiers.clients.oracle import OracleClient  # noqa: E402
from verifiers.testing import ScriptedClient  # noqa: E402
from verifiers.types import ModelResponse, Usage  # noqa: E402

# an agent's request body of a realistic size: a system prompt, a task, a few turns
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. " * 40},
    {"role": "user", "content": "Fix the failing test in minilib. " * 30},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "ls"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "minilib\ntests\n" * 20},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]

# another process: N sequential keep-alive requests over a Unix socket
CLIENT = r"""
import json, socket, sys
path, prefix, n, body = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].encode()
s = socket.socket(socket.AF_UNIX)
s.connect(path)
head = ("POST %s/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
        "Content-Length: %d\r\n\r\n" % (prefix, len(body))).encode()
f = s.makefile("rb")
for _ in range(n):
    s.sendall(head + body)
    length = 0
    while True:
        line = f.readline()
        if line == b"\r\n":
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    f.read(length)
"""

# an agent in the sandbox: N calls with a fixed-size history (each one step)
MANY_CALLS_AGENT = r"""
import json, os, urllib.request as u
base = os.environ["OPENAI_BASE_URL"]
body = json.dumps({"messages": json.loads(os.environ["MSGS"]), "tools": json.loads(os.environ["TOOLS"])}).encode()
for _ in range(int(os.environ["CALLS"])):
    u.urlopen(u.Request(base + "/chat/completions", body, {"Content-Type": "application/json"})).read()
"""


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


async def bench_interception(calls: int) -> dict[str, float]:
    server = InterceptionServer()
    channel = await server.open_channel()
    response = ModelResponse(
        message={
            "role": "assistant",
            "content": "Running the tests.",
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "python3 -m unittest"}'},
                }
            ],
        },
        finish_reason="tool_calls",
        usage=Usage(prompt_tokens=900, completion_tokens=20),
    )
    body = json.dumps({"model": "m", "messages": MESSAGES, "tools": TOOLS, "temperature": 0.7})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, channel.path, channel.base_path(), str(calls), body
    )
    started, c0 = time.perf_counter(), cpu()
    for _ in range(calls):
        call = await channel.next_call()
        call.answer(response)
    await proc.wait()
    wall, used = time.perf_counter() - started, cpu() - c0
    await server.close()
    return {
        "calls": calls,
        "cpu_ms_per_call": used / calls * 1e3,
        "wall_ms_per_call": wall / calls * 1e3,
        "body_bytes": len(body),
    }


async def bench_per_step(calls: int) -> dict[str, float]:
    """Marginal CPU of the environment process per intercepted call: a rollout of `calls`
    calls minus a rollout of 1 call, over (calls - 1)."""
    import shlex

    model = ScriptedClient(
        responder=lambda prompt: {
            "content": "ok",
            "tool_calls": [{"name": "bash", "arguments": {"command": "python3 -m unittest"}}],
        }
    )

    async def one(n: int) -> tuple[float, float, int]:
        env = vf.CliAgentEnv(
            run_command="python3 -c " + shlex.quote(MANY_CALLS_AGENT),
            dataset=[{"question": "q", "answer": ""}],
            environment_vars={
                "CALLS": str(n),
                "MSGS": json.dumps(MESSAGES),
                "TOOLS": json.dumps(TOOLS),
            },
            timeout_seconds=600,
        )
        c0, t0 = cpu(), time.perf_counter()
        state = await env.run_rollout(
            env.get_rows()[0], model, "m", {"extra_body": {"return_token_ids": True}}
        )
        used, wall = cpu() - c0, time.perf_counter() - t0
        await env.close()
        assert state["error"] is None and len(state["trajectory"]) == n, state.get("agent_stderr")
        return used, wall, n

    await one(1)  # warm-up (imports, the native sandbox agent)
    base = [await one(1) for _ in range(3)]
    many = await one(calls)
    base_cpu = statistics.median(b[0] for b in base)
    return {
        "calls": calls,
        "cpu_ms_per_call": (many[0] - base_cpu) / (calls - 1) * 1e3,
        "rollout_cpu_ms_1_call": base_cpu * 1e3,
        "wall_ms_per_call": (many[1] - statistics.median(b[1] for b in base)) / (calls - 1) * 1e3,
    }


class _Timed(vf.CliAgentEnv):
    """Records when the agent's first request arrives."""

    async def _answer(self, state: vf.State, call: Any) -> None:
        state.setdefault("first_call_at", time.perf_counter())
        await super()._answer(state, call)


async def bench_startup(samples: int, mini: bool) -> dict[str, Any]:
    from verifiers.agents.bash_loop import bash_loop_command

    out: dict[str, Any] = {}
    agents = {"bash-loop": (bash_loop_command(), {})}
    if mini:
        from verifiers.agents.installs import (
            AGENT_MOUNT,
            mini_swe_agent_command,
            mini_swe_agent_env,
        )

        agents["mini-swe-agent"] = (
            mini_swe_agent_command(),
            {str(mini_swe_agent_env()): AGENT_MOUNT},
        )
    for name, (command, binds) in agents.items():
        submit: Any = {
            "content": "done",
            "tool_calls": [
                {
                    "name": "bash",
                    "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
                }
            ],
        }
        reply = submit if name == "mini-swe-agent" else "done"
        replies = ScriptedClient(responder=lambda prompt, reply=reply: reply)
        times = []
        for _ in range(samples if name == "bash-loop" else max(2, samples // 4)):
            env = _Timed(
                run_command=command,
                ro_binds=binds,
                dataset=[{"question": "q", "answer": ""}],
                timeout_seconds=300,
                max_turns=1,
            )
            t0 = time.perf_counter()
            state = await env.run_rollout(env.get_rows()[0], replies, "m")
            await env.close()
            assert "first_call_at" in state, (state["error"], state.get("agent_stderr"))
            times.append((state["first_call_at"] - t0) * 1e3)
        out[name] = {"p50_ms": statistics.median(times), "min_ms": min(times), "n": len(times)}
    return out


async def bench_rollouts(agent: str, n: int, in_flight: int, score: bool = True) -> dict[str, Any]:
    import vf_swe_agent

    env = vf_swe_agent.load_environment(
        num_examples=min(n, 67), agent=agent, max_live_sandboxes=in_flight
    )
    rows = env.get_rows()
    inputs = [rows[i % len(rows)] for i in range(n)]
    sem = asyncio.Semaphore(in_flight)

    async def one(row: dict[str, Any]) -> vf.State:
        async with sem:
            return await env.run_rollout(row, OracleClient(), "oracle", score=score)

    c0, k0, t0 = cpu(), children_cpu(), time.perf_counter()
    states = await asyncio.gather(*(one(r) for r in inputs))
    wall, used, kids = time.perf_counter() - t0, cpu() - c0, children_cpu() - k0
    await env.close()
    rewards = [s["reward"] for s in states]
    return {
        "agent": agent if score else f"{agent} (not graded)",
        "in_flight": in_flight,
        "rollouts": n,
        "wall_s": wall,
        "rollouts_per_s": n / wall,
        "framework_cpu_ms_per_rollout": used / n * 1e3,
        "sandbox_cpu_ms_per_rollout": kids / n * 1e3,
        "calls_per_rollout": statistics.mean(len(s["trajectory"]) for s in states),
        "mean_reward": statistics.mean(r or 0.0 for r in rewards) if score else float("nan"),
        "errors": sum(1 for s in states if s["error"] is not None),
    }


# --- compare: every process counted, ours against upstream 0.4.0 ---------------------------

UPSTREAM_PYTHON = Path.home() / ".cache" / "vf-bench" / "verifiers-0.4.0" / "bin" / "python"

# the agent both sides run: CALLS chat requests, history growing by each answer, stdlib only
STDLIB_AGENT = r"""
import json, os, urllib.request as u
base, key = os.environ["OPENAI_BASE_URL"].rstrip("/"), os.environ["OPENAI_API_KEY"]
messages = [{"role": "system", "content": "You are a coding agent. " * 20},
            {"role": "user", "content": "Say hello. " * 20}]
for _ in range(int(os.environ["CALLS"])):
    body = json.dumps({"model": os.environ.get("OPENAI_MODEL", "m"), "messages": messages})
    req = u.Request(base + "/chat/completions", body.encode(),
                    {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    answer = json.loads(u.urlopen(req, timeout=600).read())
    messages.append(answer["choices"][0]["message"])
    messages.append({"role": "user", "content": "Again."})
"""

OURS_SIDE = r"""
import asyncio, json, resource, shlex, sys, time
import verifiers as vf
from verifiers.clients.native import NativeClient

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

async def main(agent, base_url, calls, warmup, n, in_flight):
    env = vf.CliAgentEnv(run_command="python3 -c " + shlex.quote(agent),
                         dataset=[{"question": "Say hello.", "answer": ""}],
                         environment_vars={"CALLS": str(calls)}, timeout_seconds=600)
    client = NativeClient(base_url)
    row = env.get_rows()[0]
    sem = asyncio.Semaphore(in_flight)
    async def one():
        async with sem:
            return await env.run_rollout(row, client, "m")
    async def batch(k):
        return await asyncio.gather(*(one() for _ in range(k)))
    await batch(warmup)
    c0, t0 = cpu(), time.perf_counter()
    states = await batch(n)
    await env.close()
    c1, t1 = cpu(), time.perf_counter()
    bad = [s for s in states if s["error"] is not None or len(s["trajectory"]) != calls]
    print(json.dumps({"n": len(states), "cpu_s": c1 - c0, "wall_s": t1 - t0, "errors": len(bad),
                      "first_error": str(bad[0]["error"]) if bad else None}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
                 int(sys.argv[6])))
"""

UPSTREAM_HARNESS = r"""
import os
from verifiers.v1.harness import Harness
from verifiers.v1.configs.harness import HarnessConfig

class StdlibAgentHarnessConfig(HarnessConfig):
    pass

class StdlibAgentHarness(Harness[StdlibAgentHarnessConfig]):
    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = True
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, **_):
        env = {"OPENAI_BASE_URL": endpoint, "OPENAI_API_KEY": secret,
               "OPENAI_MODEL": ctx.model, "CALLS": os.environ["VF_BENCH_CALLS"],
               "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return await runtime.run_program(["python3", "-c", os.environ["VF_BENCH_AGENT"]], env)

__all__ = ["StdlibAgentHarness"]
"""

# upstream's side of the task: three tasks, no stop condition of its own (the program's exit
# ends a rollout), reward 1 once the program has finished
UPSTREAM_TASKSET = r"""
import verifiers.v1 as vf

class HelloData(vf.TaskData):
    answer: str

class HelloTask(vf.Task[HelloData]):
    @property
    def key(self) -> str:
        return "hello:" + self.data.answer

    @vf.reward(weight=1.0)
    async def finished(self, trace: vf.Trace) -> float:
        return 1.0

class HelloConfig(vf.TasksetConfig):
    pass

class HelloTaskset(vf.Taskset[HelloTask, HelloConfig]):
    def load(self) -> list[HelloTask]:
        return [HelloTask(HelloData(idx=i, prompt="Say hello.", system_prompt="Be brief.",
                                    answer=str(i)), self.config.task) for i in range(3)]

__all__ = ["HelloTaskset"]
"""

UPSTREAM_SIDE = r"""
import asyncio, json, resource, sys, tempfile, time
from pathlib import Path
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.utils.loaders import harness_config_type

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def config(base_url, per_task, in_flight, out, tag):
    harness = "stdlib-agent-harness"
    return EvalConfig(
        env={"taskset": {"id": "hello-agent-bench"},
             "agent": {"harness": harness_config_type(harness)(id=harness), "max_turns": 64,
                       "runtime": {"type": "subprocess"}}},
        num_rollouts=per_task, model="m", rich=None, push=False,
        client={"base_url": base_url, "api_key_var": "VF_BENCH_KEY"},
        sampling={"max_tokens": 64},
        output_dir=Path(out), run={"dir": tag}, max_concurrent=in_flight,
    )

async def main(base_url, warmup, per_task, in_flight):
    with tempfile.TemporaryDirectory() as out:
        await run_eval(config(base_url, warmup, in_flight, out, "warm"))
        c0, t0 = cpu(), time.perf_counter()
        records = await run_eval(config(base_url, per_task, in_flight, out, "measured"))
        c1, t1 = cpu(), time.perf_counter()
    traces = [t for r in records for t in r.traces]
    bad = [t for t in traces if not t.ok]
    print(json.dumps({"n": len(records), "cpu_s": c1 - c0, "wall_s": t1 - t0, "errors": len(bad),
                      "first_error": str(bad[0].errors[-1].message)[-600:] if bad and bad[0].errors
                      else None}))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
"""


def _side(argv: list[str], env: dict[str, str], server: Any, timeout: float) -> dict[str, Any]:
    """Run one side in a fresh process; its JSON line, plus the model requests it made."""
    before = server.stats()["requests"]
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=tempfile.gettempdir()
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    result["model_requests"] = server.stats()["requests"] - before
    return result


def bench_compare(pairs: int, rollouts: int, in_flight: int, upstream: Path) -> dict[str, Any]:
    """Interleaved pairs (ours, upstream) per calls-per-rollout; CPU per call and per rollout."""
    from verifiers.testing.server import ServerProcess

    if not upstream.exists():
        return {"error": f"no upstream venv at {upstream}: python -m venv it and pip install "
                "verifiers==0.4.0"}  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="vf-agent-bench-mods-"))
    (work / "stdlib_agent_harness.py").write_text(UPSTREAM_HARNESS)
    (work / "ours_side.py").write_text(OURS_SIDE)
    (work / "upstream_side.py").write_text(UPSTREAM_SIDE)
    (work / "hello_agent_bench.py").write_text(UPSTREAM_TASKSET)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base.update(VF_BENCH_KEY="bench", VF_BENCH_AGENT=STDLIB_AGENT)
    ours_env = {**base, "PYTHONPATH": str(ROOT)}
    up_env = {**base, "PYTHONPATH": str(work)}
    per_task = max(1, -(-rollouts // 3))  # three tasks: upstream runs 3 per ask
    out: dict[str, Any] = {}
    server_env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench")])}
    with ServerProcess(responder="v1_bench:respond", env=server_env) as server:
        for calls in (1, 20):
            samples: dict[str, list[dict[str, Any]]] = {"ours": [], "upstream": []}
            for i in range(pairs):
                ours = (
                    "ours",
                    [sys.executable, str(work / "ours_side.py"), STDLIB_AGENT, server.base_url,
                     str(calls), "2", str(per_task * 3), str(in_flight)],
                    ours_env,
                )  # fmt: skip
                theirs = (
                    "upstream",
                    [str(upstream), str(work / "upstream_side.py"), server.base_url, "1",
                     str(per_task), str(in_flight)],
                    {**up_env, "VF_BENCH_CALLS": str(calls)},
                )  # fmt: skip
                for side, argv, env in (ours, theirs) if i % 2 == 0 else (theirs, ours):
                    r = _side(argv, env, server, 1800)
                    warm = 2 if side == "ours" else 3
                    if "n" in r and r["model_requests"] != (warm + r["n"]) * calls:
                        r["error"] = f"{r['model_requests']} model requests, not {calls} a rollout"
                    print(f"compare calls={calls} pair={i} {side}", json.dumps(r), flush=True)
                    if "error" in r:
                        return {"error": f"{side}: {r['error']}"}
                    samples[side].append(r)
            out[str(calls)] = _summary(samples, calls)
    return out


def _summary(samples: dict[str, list[dict[str, Any]]], calls: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side, runs in samples.items():
        per_rollout = [1e3 * r["cpu_s"] / r["n"] for r in runs]
        out[side] = {
            "cpu_ms_per_rollout_median": statistics.median(per_rollout),
            "cpu_ms_per_rollout_min": min(per_rollout),
            "cpu_ms_per_rollout_max": max(per_rollout),
            "cpu_ms_per_call_median": statistics.median(per_rollout) / calls,
            "rollouts_per_run": runs[0]["n"],
            "errors": sum(r["errors"] for r in runs),
            # the model requests each measured batch made, per rollout (warm-ups included)
            "model_requests": [r["model_requests"] for r in runs],
        }
    o, u = out["ours"], out["upstream"]
    out["ratio_ours_over_upstream"] = (
        o["cpu_ms_per_rollout_median"] / u["cpu_ms_per_rollout_median"]
    )
    return out


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--sections",
        nargs="*",
        default=["compare"],
        choices=["compare", "interception", "per_step", "startup", "rollouts"],
    )
    ap.add_argument("--pairs", type=int, default=3, help="interleaved pairs (compare)")
    ap.add_argument("--compare-rollouts", type=int, default=24, help="measured rollouts a side")
    ap.add_argument("--in-flight", type=int, default=4, help="rollouts in flight (compare)")
    ap.add_argument("--upstream-python", type=Path, default=UPSTREAM_PYTHON)
    ap.add_argument("--calls", type=int, default=1000, help="intercepted calls (micro)")
    ap.add_argument("--step-calls", type=int, default=200, help="calls of the per-step rollout")
    ap.add_argument("--startup", type=int, default=8, help="start-up samples (bash-loop)")
    ap.add_argument("--rollouts", type=int, default=96, help="rollouts at 128 in flight")
    ap.add_argument("--mini", type=int, default=4, help="mini-swe-agent rollouts (0: skip)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    print(f"cores={os.cpu_count()} load={os.getloadavg()[0]:.1f}", flush=True)
    results: dict[str, Any] = {}
    if "compare" in args.sections:
        results["compare"] = await asyncio.to_thread(
            bench_compare,
            args.pairs,
            args.compare_rollouts,
            args.in_flight,
            args.upstream_python,
        )
        print_compare(results["compare"])
    if "interception" in args.sections:
        results["interception"] = i = await bench_interception(args.calls)
        print("interception", i, flush=True)
        print(f"| interception CPU per call ({i['body_bytes']} B body) | "
              f"{i['cpu_ms_per_call']:.3f} ms |")  # fmt: skip
    if "per_step" in args.sections:
        results["per_step"] = st = await bench_per_step(args.step_calls)
        print("per step", st, flush=True)
        print(f"| per-step CPU per call (interception + step record) | "
              f"{st['cpu_ms_per_call']:.3f} ms |")  # fmt: skip
    if "startup" in args.sections:
        results["startup"] = await bench_startup(args.startup, mini=args.mini > 0)
        for name, st in results["startup"].items():
            print(f"| start-up to first call, {name} | {st['p50_ms']:.0f} ms p50 |")
    if "rollouts" in args.sections:
        results["rollouts"] = []
        plan = [
            ("bash-loop", max(args.rollouts // 2, 32), 32, True),
            ("bash-loop", args.rollouts, 128, True),
            ("bash-loop", max(args.rollouts // 2, 32), 32, False),
        ]
        if args.mini:
            plan.append(("mini-swe-agent", args.mini, min(args.mini, 4), True))
        for agent, n, c, score in plan:
            r = await bench_rollouts(agent, n, c, score=score)
            results["rollouts"].append(r)
            print(
                f"| {r['agent']}, {r['in_flight']} in flight, {r['rollouts']} rollouts | "
                f"{r['rollouts_per_s']:.2f}/s; framework {r['framework_cpu_ms_per_rollout']:.0f} "
                f"ms + sandboxes {r['sandbox_cpu_ms_per_rollout']:.0f} ms CPU per rollout; "
                f"reward {r['mean_reward']:.2f}, errors {r['errors']} |",
                flush=True,
            )
    if args.json:
        print(json.dumps(results))


def print_compare(result: dict[str, Any]) -> None:
    if "error" in result:
        print("compare: not measured:", result["error"], flush=True)
        return
    print()
    print("| calls per rollout | side | CPU ms per rollout, median (min-max) | CPU ms per call |"
          " rollouts a run | errors |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|")
    for calls, r in result.items():
        for side in ("ours", "upstream"):
            x = r[side]
            print(
                f"| {calls} | {side} | {x['cpu_ms_per_rollout_median']:.1f} "
                f"({x['cpu_ms_per_rollout_min']:.1f}-{x['cpu_ms_per_rollout_max']:.1f}) | "
                f"{x['cpu_ms_per_call_median']:.2f} | {x['rollouts_per_run']} | {x['errors']} |"
            )
    for calls, r in result.items():
        goal = "1/3" if calls == "20" else "1/2"
        print(
            f"calls={calls}: ours / upstream = {r['ratio_ours_over_upstream']:.3f} (goal <= {goal})"
        )
    print(flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except subprocess.CalledProcessError as e:
        raise SystemExit(e.returncode) from None
