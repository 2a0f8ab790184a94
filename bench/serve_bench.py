"""Cost of serving an environment over the env server, ours against verifiers 0.3.1's, in one
run: rollouts per second and CPU per rollout, in-process and through the env server, the same
OpenAI-compatible test server (its own process, not counted) and the same environment
(``bench/serve/serve_bench_env.py``: one model call per rollout), ``--in-flight`` rollouts at
once (prime-rl's call: ``env.run_rollout(..., client=ClientConfig, env_client=...)``).

    python bench/serve_bench.py --rollouts 8192 --upstream-python PATH

``PATH`` is a Python with ``verifiers==0.3.1`` (and pyzmq) installed, e.g.::

    python -m venv ~/.cache/verifiers-tests/venv-0.3.1
    ~/.cache/verifiers-tests/venv-0.3.1/bin/pip install verifiers==0.3.1 pyzmq msgpack

CPU is counted over the driver process and every process it started (the env server and its
workers). Serving overhead = CPU per rollout through the server minus CPU per rollout
in-process. Goals: serving adds at most 0.5 ms per rollout here, and a rollout through our
server costs at most 1/5 of one through 0.3.1's. (0.3.1's in-process figure is shown but is not
a fair baseline: its in-process ``run_rollout`` is far slower than its own worker's.)

    python bench/serve_bench.py --auth-pairs 5 --rollouts 4096

compares our server with authentication (CURVE, the default) against ``insecure=True``:
interleaved pairs, median CPU per rollout of each; goal: authentication costs at most 10 %.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "serve"
DEFAULT_UPSTREAM = Path.home() / ".cache" / "verifiers-tests" / "venv-0.3.1" / "bin" / "python"


def run_driver(
    python: str,
    mode: str,
    base_url: str,
    n: int,
    in_flight: int,
    ours: bool,
    insecure: bool = False,
) -> dict[str, Any]:
    paths = [str(HERE)] + ([str(ROOT)] if ours else [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    env["VF_BENCH_INSECURE"] = "1" if insecure else "0"
    proc = subprocess.run(
        [python, str(HERE / "driver.py"), mode, base_url, str(n), str(in_flight)],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=1800,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} with {python} failed:\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rollouts", type=int, default=8192)
    p.add_argument("--in-flight", type=int, default=1024)
    p.add_argument(
        "--upstream-python",
        default=os.environ.get("VF_BENCH_UPSTREAM_PYTHON", str(DEFAULT_UPSTREAM)),
    )
    p.add_argument(
        "--auth-pairs",
        type=int,
        default=0,
        help="Only compare authentication on vs off: this many interleaved pairs.",
    )
    args = p.parse_args()
    if args.auth_pairs:
        auth_comparison(args.auth_pairs, args.rollouts, args.in_flight)
        return
    if not Path(args.upstream_python).exists():
        raise SystemExit(f"no verifiers 0.3.1 interpreter at {args.upstream_python}; see --help")
    sys.path.insert(0, str(ROOT))
    from verifiers.testing.server import ServerProcess

    rows = []
    with ServerProcess() as srv:  # its command line keeps no request log
        for label, python, ours in (
            ("ours", sys.executable, True),
            ("0.3.1", args.upstream_python, False),
        ):
            for mode in ("inprocess", "server"):
                r = run_driver(python, mode, srv.base_url, args.rollouts, args.in_flight, ours)
                r["version"] = label
                rows.append(r)
                print(
                    f"  {label:6s} {mode:10s} done: {r['rollouts'] / r['wall_s']:.0f} rollouts/s",
                    file=sys.stderr,
                )
    by = {(r["version"], r["mode"]): r for r in rows}
    print(f"\n{args.rollouts} rollouts, {args.in_flight} in flight, one model call each\n")
    print(f"{'version':8s} {'mode':10s} {'rollouts/s':>11s} {'CPU ms/rollout':>15s} {'reward':>7s}")
    for r in rows:
        per = 1000 * r["cpu_s"] / r["rollouts"]
        print(
            f"{r['version']:8s} {r['mode']:10s} {r['rollouts'] / r['wall_s']:11.0f} "
            f"{per:15.3f} {r['mean_reward']:7.3f}"
        )
    per = {k: 1000 * r["cpu_s"] / r["rollouts"] for k, r in by.items()}
    overhead = per[("ours", "server")] - per[("ours", "inprocess")]
    overhead_031 = per[("0.3.1", "server")] - per[("0.3.1", "inprocess")]
    ratio = per[("ours", "server")] / per[("0.3.1", "server")]
    print(
        f"\nserving overhead (server minus in-process), CPU ms per rollout: ours {overhead:.3f}, "
        f"0.3.1 {overhead_031:.3f}"
    )
    print(f"CPU per rollout through the env server, ours / 0.3.1: {ratio:.2f}")
    print(
        f"goal: serving adds <= 0.5 ms per rollout: {'met' if overhead <= 0.5 else 'NOT met'}; "
        f"goal: ours <= 1/5 of 0.3.1's server per rollout: {'met' if ratio <= 0.2 else 'NOT met'}"
    )


def auth_comparison(pairs: int, n: int, in_flight: int) -> None:
    """CPU per rollout through our server, CURVE authentication on vs off (interleaved)."""
    import statistics
    import tempfile

    sys.path.insert(0, str(ROOT))
    from verifiers.testing.server import ServerProcess

    os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="vf-bench-keys-"))
    per: dict[str, list[float]] = {"on": [], "off": []}
    with ServerProcess() as srv:
        for i in range(pairs):
            order = ("on", "off") if i % 2 == 0 else ("off", "on")
            for label in order:
                r = run_driver(
                    sys.executable, "server", srv.base_url, n, in_flight, True, label == "off"
                )
                per[label].append(1000 * r["cpu_s"] / r["rollouts"])
                print(
                    f"  pair {i + 1} auth {label:3s}: {per[label][-1]:.3f} CPU ms/rollout",
                    file=sys.stderr,
                )
    on, off = statistics.median(per["on"]), statistics.median(per["off"])
    print(f"\n{pairs} interleaved pairs, {n} rollouts each, {in_flight} in flight")
    print(f"median CPU ms per rollout: auth on {on:.3f}, auth off {off:.3f}")
    print(
        f"authentication costs {100 * (on / off - 1):+.1f} % CPU per rollout; goal <= +10 %: "
        f"{'met' if on <= 1.10 * off else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
