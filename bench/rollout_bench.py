"""CPU per rollout of what users run, ours against the upstream packages, in one run (issue 38).

Cases (each a pair: ours and the upstream release it replaces, same mock model, same work):

- ``classic-1``: a classic single-turn ``SingleTurnEnv`` (boxed math answer, ``ThinkParser``),
  evaluated with results saved; ours ``vf.evaluate(..., save_results=True)`` with the
  ``NativeClient`` against 0.3.1's ``env.evaluate(ClientConfig, ..., save_results=True)``.
- ``classic-5``: the same with a 5-turn ``MultiTurnEnv`` dialogue.
- ``v1-1`` / ``v1-5``: the v1 generation on upstream 0.4.0's own fixtures (``echo_v1``, and
  ``echo_user_sim_v1`` given five phrases: a scripted user, five turns); ours ``Env.evaluate``
  (the in-process ``null`` harness) against 0.4.0's ``run_eval`` with the cheapest harness
  it allows (``inproc``: the chat loop in its own process through its interception endpoint;
  see ``bench/v1_bench.py``).
- ``serve-group``: ``env.run_group`` of 8 through the env server, as prime-rl calls it
  (``bench/serve/driver.py``), ours against 0.3.1.

The upstream packages live in their own venvs, created once from PyPI (``--setup`` does it)
under ``~/.cache/vf-bench/verifiers-0.3.1`` and ``~/.cache/vf-bench/verifiers-0.4.0``.

Every run is a fresh process with its own test server (``verifiers.testing.server``, its own
process) whose latency (``--latency-ms``, default 2000) keeps the whole batch in flight: the
server reports the most requests it held at once ("peak in flight"). A run warms up on a small
batch, then times one batch of ``--rollouts`` with as many in flight. CPU per rollout is user +
system of the timed section of that process and its children (the env server and its workers
for ``serve-group``); the mock model's CPU is measured apart (``/proc``) and not counted. Peak
RSS is the process's own high-water mark. Pairs are interleaved (ours first, then upstream
first, ...); reported: the median and the spread (min-max) of each side, and the median of the
per-pair ratios.

    .venv/bin/python bench/rollout_bench.py --setup          # once: the two upstream venvs
    .venv/bin/python bench/rollout_bench.py                  # all cases, 3 pairs, 1024 rollouts
    .venv/bin/python bench/rollout_bench.py --cases classic-5 --rollouts 10240 --pairs 1 \\
        --skip-upstream                                      # 10,240 in flight, ours alone

Goals (issue 38): classic single-turn <= 1/30 of 0.3.1 with results saved; v1 <= 1/20 of
0.4.0's in-process CPU and <= 1.2x our classic path for the same work; 10,240 classic 5-turn
rollouts in flight under 500 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = Path(os.environ.get("VF_BENCH_CACHE", Path.home() / ".cache" / "vf-bench"))
UPSTREAM = {"0.3.1": CACHE / "verifiers-0.3.1", "0.4.0": CACHE / "verifiers-0.4.0"}
CASES = ("classic-1", "classic-5", "v1-1", "v1-5", "serve-group")
V1_PHRASES_5 = ["alpha one", "bravo two", "charlie three", "delta four", "echo five"]

# ------------------------------------------------------------------------------------------
# the children (run under ours or an upstream venv; print one JSON line)

CLASSIC_CHILD = r"""
import asyncio, json, logging, os, resource, sys, tempfile, time
logging.disable(logging.WARNING)
import verifiers as vf
import sdk_bench

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

side, env_name, base_url, warm, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
env = sdk_bench.build_env(vf, env_name, n)
out = tempfile.mkdtemp(prefix="vf-rollout-bench-")
if side == "ours":
    client = vf.NativeClient(base_url)
    def run(k, tag):
        return vf.evaluate(env, client, "toy-model", num_examples=k, rollouts_per_example=1,
                           max_concurrent=k, save_results=True, output_dir=os.path.join(out, tag))
    def rewards(r):
        return [float(x["reward"] or 0.0) for x in r.records]
else:
    from pathlib import Path
    os.environ["BENCH_API_KEY"] = "bench"
    config = vf.ClientConfig(api_base_url=base_url, api_key_var="BENCH_API_KEY",
                             max_connections=max(n, 64), max_keepalive_connections=max(n, 64))
    def run(k, tag):
        return asyncio.run(env.evaluate(config, "toy-model", num_examples=k,
                                        rollouts_per_example=1, max_concurrent=k,
                                        save_results=True, results_path=Path(out) / tag,
                                        on_progress=lambda *a, **kw: None))
    rewards = lambda r: sdk_bench._rewards(r, "upstream")
run(warm, "warm")
c0, t0 = cpu(), time.perf_counter()
result = run(n, "timed")
c1, t1 = cpu(), time.perf_counter()
rs = rewards(result)
print(json.dumps({"n": len(rs), "cpu_s": c1 - c0, "wall_s": t1 - t0,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "reward": sum(rs) / max(1, len(rs))}), flush=True)
"""

V1_OURS_CHILD = r"""
import asyncio, importlib, json, resource, sys, time
import verifiers.v1 as vf
from verifiers.clients.native import NativeClient

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

async def main(module, phrases, base_url, warm, n):
    mod = importlib.import_module(module)
    classes = [getattr(mod, name) for name in mod.__all__]
    taskset_cls = next(c for c in classes if issubclass(c, vf.Taskset))
    env_cls = next((c for c in classes if issubclass(c, vf.Env)), vf.SingleAgentEnv)
    config = taskset_cls.config_type()(**({"phrases": phrases} if phrases else {}))
    env = env_cls(taskset_cls(config))
    from verifiers.v1.configs.agent import agent_config_fields
    for name, seat in agent_config_fields(env.config).items():  # the in-process null harness
        if seat.harness is None:
            setattr(env.config, name, seat.model_copy(update={"harness": vf.NullHarnessConfig()}))
    client = NativeClient(base_url)
    tasks = list(env.tasks())
    async def batch(k):
        per = max(1, k // len(tasks))
        return await env.evaluate(client, "m", rollouts_per_task=per, max_concurrent=k)
    await batch(warm)
    c0, t0 = cpu(), time.perf_counter()
    episodes = await batch(n)
    c1, t1 = cpu(), time.perf_counter()
    await client.close()
    traces = [t for e in episodes for t in e.traces]
    print(json.dumps({"n": len(episodes), "cpu_s": c1 - c0, "wall_s": t1 - t0,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "reward": sum(t.reward for t in traces) / max(1, len(traces)),
                      "errors": sum(1 for e in episodes if not e.ok)}), flush=True)

phrases = json.loads(sys.argv[2])
asyncio.run(main(sys.argv[1], phrases, sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
"""

V1_UPSTREAM_CHILD = r"""
import asyncio, json, logging, resource, sys, tempfile, time
from pathlib import Path
logging.disable(logging.WARNING)
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.utils.loaders import harness_config_type

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def config(taskset, phrases, base_url, n, per_task, out):
    ts = {"id": taskset, **({"phrases": phrases} if phrases else {})}
    return EvalConfig(
        env={"taskset": ts,
             "agent": {"harness": harness_config_type("inproc-harness")(id="inproc-harness"),
                       "max_turns": 8, "runtime": {"type": "subprocess"}}},
        num_rollouts=per_task, model="m", rich=None, push=False,
        client={"base_url": base_url, "api_key_var": "VF_BENCH_KEY"},
        sampling={"max_tokens": 4096},
        output_dir=Path(out), run={"dir": f"r{n}"}, max_concurrent=n,
    )

async def main(taskset, phrases, n_tasks, base_url, warm, n):
    with tempfile.TemporaryDirectory() as out:
        await run_eval(config(taskset, phrases, base_url, warm, max(1, warm // n_tasks), out))
        c0, t0 = cpu(), time.perf_counter()
        records = await run_eval(config(taskset, phrases, base_url, n, max(1, n // n_tasks), out))
        c1, t1 = cpu(), time.perf_counter()
    traces = [t for r in records for t in r.traces]
    print(json.dumps({"n": len(records), "cpu_s": c1 - c0, "wall_s": t1 - t0,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "reward": sum(t.reward for t in traces) / max(1, len(traces)),
                      "errors": sum(1 for t in traces if not t.ok)}), flush=True)

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
                 int(sys.argv[5]), int(sys.argv[6])))
"""


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of one live process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def setup() -> None:
    for ver, venv in UPSTREAM.items():
        py = venv / "bin" / "python"
        if py.exists():
            print(f"{venv}: present")
            continue
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pkgs = [f"verifiers=={ver}"] + (["pyzmq", "msgpack"] if ver == "0.3.1" else [])
        subprocess.run([str(py), "-m", "pip", "install", "-q", *pkgs], check=True)
        print(f"{venv}: installed verifiers=={ver}")


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="vf-rollout-bench-"))
        (self.work / "classic_child.py").write_text(CLASSIC_CHILD)
        (self.work / "v1_ours_child.py").write_text(V1_OURS_CHILD)
        (self.work / "v1_upstream_child.py").write_text(V1_UPSTREAM_CHILD)
        self._fixtures: Path | None = None

    def fixtures(self) -> Path:
        if self._fixtures is None:
            sys.path.insert(0, str(HERE))
            import v1_bench

            self._fixtures = v1_bench.fixtures_dir(self.args.sdist)
            (self.work / "inproc_harness.py").write_text(textwrap.dedent(v1_bench.INPROC_HARNESS))
        return self._fixtures

    def command(self, case: str, side: str, base_url: str) -> tuple[list[str], dict[str, str]]:
        a = self.args
        n, warm = a.rollouts, a.warmup
        base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        base["VF_BENCH_KEY"] = "bench"
        base["TQDM_DISABLE"] = "1"
        ours = side == "ours"
        if case.startswith("classic"):
            py = sys.executable if ours else str(UPSTREAM["0.3.1"] / "bin" / "python")
            paths = [str(HERE)] + ([str(ROOT)] if ours else [])
            env_name = "math" if case == "classic-1" else "dialogue"
            argv = [py, str(self.work / "classic_child.py"), side, env_name, base_url]
            return [*argv, str(warm), str(n)], {**base, "PYTHONPATH": os.pathsep.join(paths)}
        if case.startswith("v1"):
            fixtures = str(self.fixtures())
            module = "echo_v1" if case == "v1-1" else "echo_user_sim_v1"
            phrases = json.dumps(V1_PHRASES_5 if case == "v1-5" else None)
            if ours:
                argv = [sys.executable, str(self.work / "v1_ours_child.py"), module, phrases]
                env = {**base, "PYTHONPATH": os.pathsep.join([str(ROOT), fixtures])}
                return [*argv, base_url, str(warm), str(n)], env
            n_tasks = "3" if case == "v1-1" else "1"
            py = str(UPSTREAM["0.4.0"] / "bin" / "python")
            argv = [py, str(self.work / "v1_upstream_child.py"), module.replace("_", "-")]
            env = {**base, "PYTHONPATH": os.pathsep.join([str(self.work), fixtures])}
            return [*argv, phrases, n_tasks, base_url, str(warm), str(n)], env
        # serve-group
        py = sys.executable if ours else str(UPSTREAM["0.3.1"] / "bin" / "python")
        paths = [str(HERE / "serve")] + ([str(ROOT)] if ours else [])
        argv = [py, str(HERE / "serve" / "driver.py"), "group", base_url, str(n), str(n)]
        return argv, {**base, "PYTHONPATH": os.pathsep.join(paths)}

    def run(self, case: str, side: str) -> dict[str, Any]:
        from verifiers.testing.server import ServerProcess

        responder = "v1_bench:respond" if case.startswith("v1") else "sdk_bench:respond"
        if case == "serve-group":
            responder = None
        server_env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
        with ServerProcess(
            responder=responder, latency_ms=self.args.latency_ms, env=server_env
        ) as srv:
            assert srv.process is not None
            argv, env = self.command(case, side, srv.base_url)
            s0 = proc_cpu(srv.process.pid)
            done = subprocess.run(
                argv, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir(),
                timeout=self.args.timeout,
            )  # fmt: skip
            server_cpu = proc_cpu(srv.process.pid) - s0
            stats = srv.stats()
        lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
        if done.returncode != 0 or not lines:
            tail = (done.stderr or done.stdout).strip()[-2000:]
            raise SystemExit(f"{case} {side} failed (exit {done.returncode}):\n{tail}")
        r: dict[str, Any] = json.loads(lines[-1])
        if "n" not in r:  # the serve driver
            r["n"], r["reward"] = r["rollouts"], r["mean_reward"]
        r["ms"] = 1000 * r["cpu_s"] / max(1, r["n"])
        r["server_ms"] = 1000 * server_cpu / max(1, r["n"])
        r["peak_in_flight"] = stats.get("peak_in_flight")
        return r


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--setup", action="store_true", help="create the upstream venvs, then exit")
    ap.add_argument("--cases", type=lambda s: s.split(","), default=list(CASES))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rollouts", type=int, default=1024, help="timed rollouts, all in flight")
    ap.add_argument("--warmup", type=int, default=24)
    ap.add_argument("--latency-ms", type=float, default=2000.0)
    ap.add_argument("--skip-upstream", action="store_true")
    ap.add_argument("--sdist", default=None, help="verifiers-0.4.0.tar.gz (default: download)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--json", action="store_true", help="also print every run as JSON")
    args = ap.parse_args()
    if args.setup:
        setup()
        return
    sys.path.insert(0, str(ROOT))
    for case in args.cases:
        if case not in CASES:
            raise SystemExit(f"unknown case {case!r}; choose from {', '.join(CASES)}")
    if not args.skip_upstream:
        for ver, venv in UPSTREAM.items():
            if not (venv / "bin" / "python").exists():
                raise SystemExit(f"no verifiers {ver} venv at {venv}; run with --setup first")
    runner = Runner(args)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    upstream_of = {c: ("0.4.0" if c.startswith("v1") else "0.3.1") for c in CASES}
    for case in args.cases:
        sides = ["ours"] if args.skip_upstream else ["ours", upstream_of[case]]
        for i in range(args.pairs):
            for side in sides if i % 2 == 0 else sides[::-1]:
                t0 = time.perf_counter()
                r = runner.run(case, "ours" if side == "ours" else "upstream")
                results.setdefault((case, side), []).append(r)
                print(
                    f"  {case:11s} {side:5s} pair {i + 1}: {r['ms']:8.3f} ms CPU/rollout, "
                    f"rss {r['rss_mb']:5.0f} MB, wall {r['wall_s']:6.1f} s, peak in flight "
                    f"{r['peak_in_flight']}, reward {r['reward']:.2f}, model server "
                    f"{r['server_ms']:.3f} ms/rollout ({time.perf_counter() - t0:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    print(
        f"\n{args.rollouts} rollouts per run, model latency {args.latency_ms:.0f} ms, "
        f"{args.pairs} interleaved pair(s); median (min-max)\n"
    )
    print("| case | side | CPU ms / rollout | peak RSS MB | wall s | peak in flight | reward "
          "| model server ms / rollout |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (case, side), rs in results.items():
        print(
            f"| {case} | {side} | {spread([r['ms'] for r in rs])} | "
            f"{statistics.median(r['rss_mb'] for r in rs):.0f} | "
            f"{statistics.median(r['wall_s'] for r in rs):.1f} | "
            f"{min(r['peak_in_flight'] for r in rs)} | "
            f"{statistics.median(r['reward'] for r in rs):.2f} | "
            f"{statistics.median(r['server_ms'] for r in rs):.3f} |"
        )
    print()
    ours_ms = {c: statistics.median(r["ms"] for r in results[(c, "ours")]) for c in args.cases}
    for case in args.cases:
        up = results.get((case, upstream_of[case]))
        if not up:
            continue
        ratios = [o["ms"] / u["ms"] for o, u in zip(results[(case, "ours")], up, strict=False)]
        print(
            f"{case}: ours / {upstream_of[case]} CPU per rollout = {spread(ratios)} "
            f"(1/{1 / statistics.median(ratios):.0f})"
        )
    for v1, classic in (("v1-1", "classic-1"), ("v1-5", "classic-5")):
        if v1 in ours_ms and classic in ours_ms:
            print(f"ours {v1} / ours {classic}: {ours_ms[v1] / ours_ms[classic]:.2f}x")
    if args.json:
        print(json.dumps({f"{c}/{s}": rs for (c, s), rs in results.items()}, indent=1))


if __name__ == "__main__":
    main()
