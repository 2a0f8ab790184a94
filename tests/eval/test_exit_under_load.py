"""A process that used the shared pools (math-verify's worker processes and their forkserver
and resource tracker, the grading threads) exits within seconds, even with the cores busy and a
graded test still running: nothing it leaves behind is waited for at interpreter exit."""

from __future__ import annotations

import subprocess
import sys
import time

SCRIPT = """
import asyncio, time
import verifiers as vf
from verifiers.grading import run as grading
from verifiers.rubrics import math_rubric

async def main():
    assert (await vf.MathRubric(max_workers=2).verify("\\\\boxed{2}", "2"))[0] == 1.0
    # a graded test still running when the run ends: a loop the abort cannot reach
    asyncio.get_running_loop().run_in_executor(grading._executor(), time.sleep, 3600)
    assert math_rubric._pools  # the worker processes are up

if __name__ == "__main__":
    asyncio.run(main())
    print("done", flush=True)
"""


def test_a_process_that_used_the_pools_exits_within_seconds_under_load(busy_cores: object) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # the script's last statement has run
            finished = time.monotonic()
            assert line == "done\n", line + proc.communicate(timeout=60)[1]
            # the bound: interpreter exit with both cores busy, and the output pipes closed
            # (the forkserver and resource tracker hold them too: a reader waits for them)
            _, err = proc.communicate(timeout=20)
            took = time.monotonic() - finished
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
    assert took < 20
