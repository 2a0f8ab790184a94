"""How long `python -c "import verifiers"` takes, against a bare interpreter start.

Run: .venv/bin/python bench/import_time.py   (target: import verifiers < 0.3 s)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def wall(code: str, runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    bare = wall("pass")
    vf = wall("import verifiers")
    print(f"python -c pass              {bare * 1000:7.1f} ms (median)")
    print(f"python -c 'import verifiers' {vf * 1000:7.1f} ms (median)  target < 300 ms")
    print(f"import verifiers alone      {(vf - bare) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
