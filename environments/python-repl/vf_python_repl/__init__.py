"""python-repl: numeric problems solved with a persistent Python REPL in a sandbox.

The model has one tool, ``python(code)``, backed by :class:`verifiers.PythonEnv`: an
interpreter running in the rollout's own sandbox (bubblewrap by default), whose variables and
functions persist between calls. It ends with ``<answer>INTEGER</answer>`` in a message
without a tool call. Reward: exact match with the gold integer.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import verifiers as vf
from vf_python_repl.problems import generate

__all__ = ["SOURCES", "PythonReplEnv", "load_environment", "load_problems"]

SOURCES = ("bundled", "generated")

SYSTEM_PROMPT = (
    "Solve the problem by computing with the `python` tool: a persistent Python interpreter "
    "(variables and functions you define stay available in later calls; only the standard "
    "library). Check your result, then reply without calling a tool and give only the final "
    "integer inside <answer>...</answer>."
)

_INT = re.compile(r"-?\d+")


def load_problems() -> list[dict[str, Any]]:
    """The bundled problems (``generate(100, seed=2026)``)."""
    text = resources.files("vf_python_repl").joinpath("data/problems.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def parse_integer(text: str | None) -> int | None:
    """The integer in ``text`` (thousands separators and spaces between digit groups allowed),
    or ``None`` when there is none or more than one."""
    if not text:
        return None
    cleaned = re.sub(r"(?<=\d)[,_ ](?=\d{3}\b)", "", text.strip())
    found = _INT.findall(cleaned)
    return int(found[0]) if len(found) == 1 else None


class PythonReplEnv(vf.PythonEnv):
    """:class:`verifiers.PythonEnv` whose oracle runs the reference cells in the sandbox and
    answers with what they printed."""

    async def oracle_response(self, state: vf.State) -> vf.Message:
        cells: list[str] = state["info"]["cells"]
        step = sum(1 for m in state["completion"] if m.get("role") == "assistant")
        if step < len(cells):
            return vf.tool_call_message(
                vf.tool_call("python", {"code": cells[step]}, id=f"call_{step}")
            )
        # what the sandboxed interpreter printed: a broken REPL shows up as a wrong answer
        last = next(
            (m for m in reversed(state["completion"]) if m.get("role") == "tool"), {"content": ""}
        )
        numbers = _INT.findall(str(last.get("content") or ""))
        return {
            "role": "assistant",
            "content": f"<answer>{numbers[-1] if numbers else ''}</answer>",
        }


def load_environment(
    source: str = "bundled",
    num_examples: int = -1,
    seed: int = 0,
    max_turns: int = 12,
    sandbox_backend: str | None = None,
    timeout_per_command_seconds: float = 30.0,
    system_prompt: str = SYSTEM_PROMPT,
    **kwargs: Any,
) -> vf.Environment:
    """Build the python-repl environment.

    Args:
        source: ``bundled`` (100 problems in the package) or ``generated`` (fresh, seeded).
        num_examples: keep the first N problems (-1: all; ``generated`` makes 100).
        seed: seed of the ``generated`` source.
        max_turns: model calls per rollout.
        sandbox_backend: ``None`` (bwrap on Linux), ``docker``, ``remote``; ``subprocess``
            only for trusted models.
        timeout_per_command_seconds: time limit of one REPL cell.
        system_prompt: instructions to the model.
        **kwargs: passed on to :class:`verifiers.PythonEnv` (``pip_install_packages``, ...).
    """
    if source not in SOURCES:
        raise vf.ConfigError(
            f"python-repl: unknown source {source!r}; choose one of {', '.join(SOURCES)}"
        )
    if source == "bundled":
        problems = load_problems()
    else:
        problems = generate(num_examples if num_examples > 0 else 100, seed=seed)
    if num_examples > 0:
        problems = problems[:num_examples]
    rows = [
        {
            "question": p["question"],
            "answer": p["answer"],
            "task": f"python-repl-{p['family']}",
            "info": {"cells": p["cells"], "family": p["family"]},
        }
        for p in problems
    ]
    parser = vf.XMLParser(["think", "answer"], answer_field="answer")

    def correct_answer(completion: vf.Messages, answer: str) -> float:
        """1.0 when the final <answer> is the gold integer."""
        return 1.0 if parse_integer(parser.parse_answer(completion)) == int(answer) else 0.0

    kwargs.setdefault("pip_install_packages", "")
    return PythonReplEnv(
        dataset=rows,
        eval_dataset=rows,
        system_prompt=system_prompt,
        parser=parser,
        rubric=vf.Rubric(funcs=[correct_answer], weights=[1.0], parser=parser),
        max_turns=max_turns,
        sandbox_backend=sandbox_backend,
        timeout_per_command_seconds=timeout_per_command_seconds,
        **kwargs,
    )
