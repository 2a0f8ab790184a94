"""code: write a Python function; graded by hidden tests in a sandbox.

The model answers with a program (a fenced ```python block); :class:`verifiers.CodeTestEnv`
writes it to ``solution.py`` inside the rollout's sandbox (bubblewrap by default: no network,
read-only system, resource limits) and runs each hidden test there with its own timeout. The
reward is the fraction of tests passed.

Sources: ``bundled`` (30 tasks written for this package, each with a reference solution) and
``mbpp`` (the MBPP benchmark from the Hugging Face hub).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import verifiers as vf

__all__ = ["SOURCES", "CodeEnv", "load_environment", "load_tasks"]

SOURCES = ("bundled", "mbpp")

SYSTEM_PROMPT = (
    "Write the Python code the task asks for. Use only the standard library. Reply with the "
    "complete code in one ```python code block; it is tested by hidden unit tests."
)


def load_tasks() -> list[dict[str, Any]]:
    """The bundled tasks: ``task_id``, ``entry_point``, ``prompt``, ``solution``, ``tests``."""
    text = resources.files("vf_code").joinpath("data/tasks.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _mbpp(split: str) -> list[dict[str, Any]]:
    """MBPP (sanitized) as tasks; the first test is shown, as the benchmark intends, so that the
    function's name and signature are known."""
    from datasets import load_dataset

    rows = load_dataset("google-research-datasets/mbpp", "sanitized", split=split)
    tasks = []
    for r in rows:
        setup = "\n".join(r.get("test_imports") or [])
        tests = [f"{setup}\n{t}".strip() for t in r["test_list"]]
        tasks.append(
            {
                "task_id": f"mbpp-{r['task_id']}",
                "prompt": f"{r['prompt']}\nYour code should pass this test:\n{r['test_list'][0]}",
                "solution": r["code"],
                "tests": tests,
            }
        )
    return tasks


class CodeEnv(vf.CodeTestEnv):
    """:class:`verifiers.CodeTestEnv` whose oracle answers with the reference solution."""

    async def oracle_response(self, state: vf.State) -> vf.Message:
        solution = state["info"]["solution"]
        return {"role": "assistant", "content": f"```python\n{solution}```"}


def load_environment(
    source: str = "bundled",
    split: str = "test",
    num_examples: int = -1,
    test_timeout: float = 10.0,
    sandbox_backend: str | None = None,
    system_prompt: str = SYSTEM_PROMPT,
    **kwargs: Any,
) -> vf.Environment:
    """Build the code environment.

    Args:
        source: ``bundled`` (offline) or ``mbpp`` (Hugging Face: network or local cache).
        split: split of the ``mbpp`` source.
        num_examples: keep the first N tasks (-1: all).
        test_timeout: seconds each hidden test may run.
        sandbox_backend: ``None`` (bwrap on Linux), ``docker``, ``remote`` or, for trusted code
            only, ``subprocess``.
        system_prompt: instructions to the model.
        **kwargs: passed on to :class:`verifiers.CodeTestEnv` (sandbox limits, ...).
    """
    if source not in SOURCES:
        raise vf.ConfigError(f"code: unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    tasks = load_tasks() if source == "bundled" else _mbpp(split)
    if num_examples > 0:
        tasks = tasks[:num_examples]
    rows = [
        {
            "question": t["prompt"],
            "answer": "",
            "task": f"code-{source}",
            "info": {"task_id": t["task_id"], "tests": t["tests"], "solution": t["solution"]},
        }
        for t in tasks
    ]
    return CodeEnv(
        dataset=rows,
        eval_dataset=rows,
        system_prompt=system_prompt,
        test_timeout=test_timeout,
        sandbox_backend=sandbox_backend,
        **kwargs,
    )
