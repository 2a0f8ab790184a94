"""MathRubric: math-verify in a real process pool, timeouts, stuck workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

import verifiers as vf
from verifiers.rubrics import math_rubric
from verifiers.types import State

PATHOLOGICAL = "\\boxed{9^{9^{9^{9}}}}"  # sympy tries to evaluate a tower of powers


@pytest.fixture(autouse=True, scope="module")
def _stop_pools() -> Iterator[None]:
    yield
    math_rubric.shutdown_math_pools()


def state(content: str, answer: str) -> State:
    return State(
        prompt=[{"role": "user", "content": "q"}],
        completion=[{"role": "assistant", "content": content}],
        answer=answer,
    )


async def test_correct_answers_by_math_equivalence() -> None:
    rubric = vf.MathRubric(max_workers=2)
    cases = [
        ("so the answer is \\boxed{0.5}", "\\frac{1}{2}", 1.0),
        ("\\boxed{\\frac{2}{4}}", "1/2", 1.0),
        ("\\boxed{x^2 + 2x + 1}", "(x+1)^2", 1.0),
        ("\\boxed{\\{1, 2\\}}", "\\{2, 1\\}", 1.0),
        ("\\boxed{3}", "4", 0.0),
        ("the answer is 0.5", "0.5", 0.0),  # no box: the default parser is strict
        ("<think>maybe \\boxed{7}</think> so \\boxed{8}", "7", 0.0),  # thinking is stripped
        ("<think>maybe \\boxed{7}</think> so \\boxed{8}", "8", 1.0),
        ("<think>unfinished \\boxed{7}", "7", 0.0),
    ]
    states = [state(c, a) for c, a, _ in cases]
    await rubric.score_group(states)
    assert [s["reward"] for s in states] == [expected for _, _, expected in cases]
    for s in states:
        assert s["reward_errors"] == []
        assert s["metrics"]["math_verify_timeout"] == 0.0
    assert rubric.reward_weights == {"correct_answer": 1.0}


async def test_pathological_answer_times_out_scores_zero_and_is_flagged() -> None:
    rubric = vf.MathRubric(max_workers=2, timeout_seconds=0.5)
    slow, fine = state(PATHOLOGICAL, "5"), state("\\boxed{5}", "5")
    await rubric.score_group([slow, fine])
    assert slow["reward"] == 0.0 and slow["reward_errors"] == []
    assert slow["metrics"] == {"math_verify_timeout": 1.0, "correct_answer": 0.0}
    assert fine["reward"] == 1.0 and fine["metrics"]["math_verify_timeout"] == 0.0


async def test_stuck_worker_is_killed_and_the_pool_replaced() -> None:
    # the warm-up starts the worker; its first verification can take over a second on a busy
    # machine (sympy's first parse), so it gets a generous timeout, the stuck call a short one
    rubric = vf.MathRubric(max_workers=1, timeout_seconds=30)
    warm = state("\\boxed{1}", "1")
    await rubric.score_rollout(warm)
    assert warm["reward"] == 1.0
    rubric.timeout_seconds = 0.5
    rubric.hard_timeout_grace = 1.0
    pool = math_rubric._pools[1]
    workers = list(pool._processes.values())  # type: ignore[attr-defined]
    assert workers
    for p in workers:  # a worker the alarm cannot wake: stuck as if in C code
        os.kill(p.pid, signal.SIGSTOP)
    stuck = state("\\boxed{2}", "2")
    await rubric.score_rollout(stuck)
    assert stuck["reward"] == 0.0 and stuck["metrics"]["math_verify_timeout"] == 1.0
    for p in workers:
        assert not p.is_alive()
    assert math_rubric._pools.get(1) is not pool
    rubric.hard_timeout_grace = 60.0  # the fresh pool's worker starts within this call
    after = state("\\boxed{3}", "3")
    await rubric.score_rollout(after)
    assert after["reward"] == 1.0


async def test_custom_parser_and_extra_functions() -> None:
    def short(completion: list[dict[str, str]]) -> float:
        return 1.0 if len(completion[-1]["content"]) < 40 else 0.0

    rubric = vf.MathRubric(
        funcs=[short], weights=[0.5], parser=vf.XMLParser(fields=["answer"]), max_workers=2
    )
    s = state("<answer>0.25</answer>", "\\frac14")
    await rubric.score_rollout(s)
    assert s["metrics"]["correct_answer"] == 1.0 and s["reward"] == 1.5


def test_import_starts_no_process_and_loads_no_math_verify() -> None:
    code = (
        "import sys, multiprocessing\n"
        "import verifiers as vf\n"
        "from verifiers.rubrics import math_rubric\n"
        "r = vf.MathRubric()\n"
        "assert 'math_verify' not in sys.modules and 'sympy' not in sys.modules, 'heavy import'\n"
        "assert not multiprocessing.active_children() and not math_rubric._pools, 'pool started'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(vf.ConfigError, match="timeout_seconds"):
        vf.MathRubric(timeout_seconds=0)
    with pytest.raises(vf.ConfigError, match="max_workers"):
        vf.MathRubric(max_workers=0)


def test_interpreter_exits_with_a_stuck_worker(tmp_path: os.PathLike[str]) -> None:
    script = os.path.join(tmp_path, "stuck.py")
    with open(script, "w") as f:
        f.write(
            "import asyncio, os, signal\n"
            "import verifiers as vf\n"
            "from verifiers.rubrics import math_rubric\n"
            "from verifiers.types import State\n"
            "async def main():\n"
            "    s = State(prompt=[], completion=[{'role': 'assistant', 'content': '\\\\boxed{1}'}],"
            " answer='1')\n"
            "    await vf.MathRubric(max_workers=1).score_rollout(s)\n"
            "    assert s['reward'] == 1.0, s\n"
            "    for p in math_rubric._pools[1]._processes.values():\n"
            "        os.kill(p.pid, signal.SIGSTOP)\n"
            "if __name__ == '__main__':\n"
            "    asyncio.run(main())\n"
        )
    subprocess.run([sys.executable, script], check=True, timeout=120)


def test_the_timeout_counts_cpu_time_not_time_spent_waiting_for_a_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # on a busy machine a worker waits for a core; that wait is not the answer's fault. A
    # verification that spends 0.6 s off the CPU (here: asleep, as a descheduled worker is)
    # under a 0.2 s budget completes; one that burns 0.6 s of CPU is cut off.
    import time

    def off_cpu(text: str, **kwargs: object) -> list[str]:
        time.sleep(0.6)
        return [text]

    monkeypatch.setattr(math_rubric, "parse", off_cpu, raising=False)
    monkeypatch.setattr(math_rubric, "verify", lambda gold, pred, **kw: gold == pred, raising=False)
    assert math_rubric._verify("\\boxed{4}", "4", 0.2) == (1.0, False)

    def on_cpu(text: str, **kwargs: object) -> list[str]:
        end = time.process_time() + 0.6
        while time.process_time() < end:
            pass
        return [text]

    monkeypatch.setattr(math_rubric, "parse", on_cpu, raising=False)
    assert math_rubric._verify("\\boxed{4}", "4", 0.2) == (0.0, True)
