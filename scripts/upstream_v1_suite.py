"""Run upstream verifiers 0.4.0's own ``tests/v1`` files against THIS checkout's ``verifiers.v1``
and print pass counts per file.

The sdist is downloaded at run time (``pip download``, sha256 pinned) and cached outside the
repository; nothing of it is copied into the repository. The files run with upstream's own ``tests/v1/conftest.py`` and pytest
configuration (its ``pyproject.toml``: fixture directory on the path, asyncio auto mode; without
``PRIME_API_KEY`` its ``e2e`` tests are skipped). The cases upstream marks ``prime``, ``modal``,
``e2b``, ``docker``, ``podman`` or ``apptainer`` (pytest markers, ``-m``) are deselected, and ``test_color_codeword_tasks.py`` is
left out (it imports a module the sdist does not ship).

    .venv/bin/python scripts/upstream_v1_suite.py [--sdist PATH] [--python PY] [FILE ...]

``--python`` runs the suite with another interpreter instead (e.g. a venv with upstream 0.4.0
installed, to measure the reference counts); then this checkout is not put on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "0.4.0"
SHA256 = "66cbb1e2c1ff3fd2da8e4470d4468f2cf8464852cb2f6e9a123c1254d2960aab"
CACHE = Path(os.environ.get("VF_UPSTREAM_CACHE", Path.home() / ".cache" / "verifiers-upstream"))
REPO = Path(__file__).resolve().parent.parent
DESELECT = "not prime and not modal and not e2b and not docker and not podman and not apptainer"
SKIP_FILES = {"test_color_codeword_tasks.py": "imports a module the sdist does not ship"}


def sdist(path: str | None) -> Path:
    if path:
        found = Path(path)
    else:
        CACHE.mkdir(parents=True, exist_ok=True)
        found = CACHE / f"verifiers-{VERSION}.tar.gz"
        if not found.exists():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 f"verifiers=={VERSION}", "-d", str(CACHE)],
                check=True,
            )  # fmt: skip
    digest = hashlib.sha256(found.read_bytes()).hexdigest()
    if digest != SHA256:
        raise SystemExit(
            f"{found}: sha256 {digest} is not the pinned {SHA256}; delete it and rerun"
        )
    return found


def unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        members = [
            m for m in tar.getmembers()
            if re.match(r"[^/]+/(tests/|pyproject\.toml$)", m.name)
        ]  # fmt: skip
        tar.extractall(into, members=members, filter="data")
    (root,) = [p for p in into.iterdir() if p.is_dir()]
    return root


def counts(output: str) -> dict[str, int]:
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    return {
        kind: int(n)
        for n, kind in re.findall(r"(\d+) (passed|failed|error|errors|skipped|deselected)", tail)
    }


# Runs with either package (this checkout's or upstream's): ``run_eval`` on each fixture id
# with the ``null`` harness on every seat, against an in-process model that repeats what
# follows the last colon of the last user message, except that it gets every phrase with a
# "g" wrong (so rewards differ across tasks); it streams when asked (upstream's harness does).
FIXTURE_PROBE = """
import asyncio, json, sys, tempfile
from pathlib import Path

from aiohttp import web

import verifiers.v1 as vf
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig


def reply_for(body):
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    phrase = str(content).split(":")[-1].strip()
    return "no idea" if "g" in phrase else phrase


def chunk(model, delta, finish):
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [choice]}


async def answer(request):
    body = await request.json()
    text, model = reply_for(body), body.get("model")
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if not body.get("stream"):
        message = {"role": "assistant", "content": text}
        return web.json_response({
            "id": "c", "object": "chat.completion", "created": 0, "model": model, "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    events = [chunk(model, {"role": "assistant", "content": text}, None), chunk(model, {}, "stop")]
    events.append({**chunk(model, {}, None), "choices": [], "usage": usage})
    for event in events:
        await resp.write(("data: " + json.dumps(event) + "\\n\\n").encode())
    await resp.write(b"data: [DONE]\\n\\n")
    await resp.write_eof()
    return resp


async def main():
    app = web.Application()
    app.router.add_post("/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    out = {}
    try:
        for tid in sys.argv[1:]:
            cls = vf.env_config_type(tid, "")
            seats = [n for n, f in cls.model_fields.items() if isinstance(f.default, vf.AgentConfig)]
            seat = {"max_turns": 4, "harness": {"id": "null"}, "runtime": {"type": "subprocess"}}
            with tempfile.TemporaryDirectory() as tmp:
                config = EvalConfig(
                    env={"taskset": {"id": tid}, **{s: dict(seat) for s in seats}},
                    model="toy", rich=None, push=False, output_dir=Path(tmp), run={"dir": "r"},
                    client={"type": "eval", "base_url": f"http://127.0.0.1:{port}/v1",
                            "api_key_var": "TOY_KEY"})
                records = await run_eval(config)
            out[tid] = sorted(
                [t.task.data.idx, t.agent.name or "agent", round(t.reward, 4),
                 {k: v for k, v in sorted(t.metrics.items())}, [e.type for e in t.errors]]
                for r in records for t in r.traces)
    finally:
        await runner.cleanup()
    print(json.dumps(out))


asyncio.run(main())
"""
# the fixtures a null-harness seat can play (the others need tools, a shell or a runtime)
NULL_FIXTURES = ["duet-v1", "echo-user-sim-v1", "echo-v1"]


# A scripted model server in its own process (so its CPU is not the measured side's): answers
# chat completions with what follows the last colon of the last user message, streaming when
# asked; prints its base URL on the first line.
MODEL_SERVER = """
import asyncio, json, sys
from aiohttp import web

async def answer(request):
    body = await request.json()
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = str(users[-1]["content"] if users else "").split(":")[-1].strip()
    model = body.get("model")
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if not body.get("stream"):
        message = {"role": "assistant", "content": text}
        return web.json_response({"id": "c", "object": "chat.completion", "created": 0,
            "model": model, "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for delta, finish in (({"role": "assistant", "content": text}, None), ({}, "stop")):
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": model,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        await resp.write(("data: " + json.dumps(chunk) + "\\n\\n").encode())
    await resp.write(b"data: [DONE]\\n\\n")
    await resp.write_eof()
    return resp

async def main():
    app = web.Application()
    app.router.add_post("/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""

# CPU (this process and its children) per rollout of echo-v1 with the null harness, measured
# around run_eval only (imports and config excluded), against the MODEL_SERVER at argv[1].
BENCH_PROBE = """
import asyncio, json, resource, sys, tempfile, time
from pathlib import Path
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig

base_url, n = sys.argv[1], int(sys.argv[2])

def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

async def main():
    seat = {"max_turns": 1, "harness": {"id": "null"}, "runtime": {"type": "subprocess"}}
    phrases = [f"phrase {i}" for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        config = EvalConfig(env={"taskset": {"id": "echo-v1", "phrases": phrases}, "agent": seat},
            model="toy", rich=None, push=False, output_dir=Path(tmp), run={"dir": "r"},
            max_concurrent=8,
            client={"type": "eval", "base_url": base_url, "api_key_var": "TOY_KEY"})
        start, wall = cpu(), time.perf_counter()
        episodes = await run_eval(config)
        used, wall = cpu() - start, time.perf_counter() - wall
    ok = sum(e.ok and e.traces[0].reward == 1.0 for e in episodes)
    print(json.dumps({"rollouts": len(episodes), "rewarded": ok, "cpu_ms_per_rollout":
                      1000 * used / len(episodes), "wall_s": wall}))

asyncio.run(main())
"""


def run_bench(root: Path, n: int, upstream_python: str | None) -> None:
    """CPU per single-turn v1 rollout (echo-v1, null harness), this checkout vs upstream."""
    fixtures = root / "tests" / "v1" / "fixtures"
    server = subprocess.Popen(
        [sys.executable, "-c", MODEL_SERVER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        sides = [("this checkout", sys.executable, True)]
        if upstream_python:
            sides.append(("upstream 0.4.0", upstream_python, False))
        print(f"\nbenchmark: echo-v1, {n} single-turn rollouts, null harness, same server")
        for label, python, with_checkout in sides:
            env = {k: v for k, v in os.environ.items() if k != "PRIME_API_KEY"}
            env["TOY_KEY"] = "toy"
            env["PYTHONPATH"] = os.pathsep.join(
                [*([str(REPO)] if with_checkout else []), str(fixtures)]
            )
            proc = subprocess.run(
                [python, "-c", BENCH_PROBE, base_url, str(n)], env=env,
                cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=1200,
            )  # fmt: skip
            if proc.returncode != 0:
                print(f"  {label}: failed: {proc.stderr[-1500:]}")
                continue
            print(f"  {label}: {proc.stdout.strip().splitlines()[-1]}")
    finally:
        server.terminate()
        server.wait(timeout=10)


def probe_fixtures(root: Path, python: str, with_checkout: bool) -> dict[str, object]:
    fixtures = root / "tests" / "v1" / "fixtures"
    env = {k: v for k, v in os.environ.items() if k != "PRIME_API_KEY"}
    env["TOY_KEY"] = "toy"
    paths = [str(REPO)] if with_checkout else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(fixtures)])
    proc = subprocess.run(
        [python, "-c", FIXTURE_PROBE, *NULL_FIXTURES],
        env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"the fixture probe failed under {python}:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def run_fixtures(root: Path, upstream_python: str | None) -> int:
    """Run upstream's null-harness fixture envs with this checkout (and, given upstream's
    interpreter, with upstream too), print each trace's reward and metrics, and compare."""
    ours = probe_fixtures(root, sys.executable, with_checkout=True)
    theirs = probe_fixtures(root, upstream_python, False) if upstream_python else None
    print("\nfixture envs (tests/v1/fixtures, null harness, scripted model):")
    differ = 0
    for tid in NULL_FIXTURES:
        print(f"  {tid}: ours {ours.get(tid)}")
        if theirs is not None:
            same = ours.get(tid) == theirs.get(tid)
            differ += not same
            print(
                f"  {' ' * len(tid)}  upstream {theirs.get(tid)} -> {'same' if same else 'DIFFERENT'}"
            )
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="*", help="test file names under tests/v1 (default: all)")
    parser.add_argument(
        "--sdist", help="a local verifiers-0.4.0.tar.gz (else downloaded and cached)"
    )
    parser.add_argument(
        "--python", help="interpreter to run pytest with (default: this one, with this checkout)"
    )
    parser.add_argument("--timeout", type=int, default=300, help="seconds per file")
    parser.add_argument(
        "--fixtures", action="store_true", help="also run upstream's fixture envs here"
    )
    parser.add_argument(
        "--bench",
        type=int,
        metavar="N",
        help="also measure CPU per single-turn rollout over N tasks (with --upstream-python: both)",
    )
    parser.add_argument(
        "--upstream-python",
        help="with --fixtures: upstream 0.4.0's interpreter, to compare the fixtures' rewards",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vf-upstream-v1-") as tmp:
        root = unpack(sdist(args.sdist), Path(tmp))
        tests = root / "tests" / "v1"
        names = args.files or sorted(p.name for p in tests.glob("test_*.py"))
        env = dict(os.environ)
        if args.python is None:
            env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(
                os.pathsep
            )
        python = args.python or sys.executable
        total = {"passed": 0, "failed": 0}
        print(f"{'file':36} {'passed':>6} {'failed':>6} {'errors':>6} {'skipped':>7}")
        for name in names:
            if name in SKIP_FILES:
                print(f"{name:36} left out: {SKIP_FILES[name]}")
                continue
            try:
                proc = subprocess.run(
                    [python, "-m", "pytest", f"tests/v1/{name}", "-q", "-p", "no:cacheprovider",
                     "-m", DESELECT, "-o", "addopts="],
                    cwd=root, env=env, capture_output=True, text=True, timeout=args.timeout,
                )  # fmt: skip
                got = counts(proc.stdout)
            except subprocess.TimeoutExpired:
                print(f"{name:36} timed out after {args.timeout}s")
                continue
            errors = got.get("error", 0) + got.get("errors", 0)
            if not got and proc.returncode not in (0, 5):
                errors = 1  # collection failed outright
            total["passed"] += got.get("passed", 0)
            total["failed"] += got.get("failed", 0) + errors
            print(
                f"{name:36} {got.get('passed', 0):>6} {got.get('failed', 0):>6} {errors:>6} {got.get('skipped', 0):>7}"
            )
        print(f"{'total':36} {total['passed']:>6} {total['failed']:>6}")
        status = run_fixtures(root, args.upstream_python) if args.fixtures else 0
        if args.bench:
            run_bench(root, args.bench, args.upstream_python)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
