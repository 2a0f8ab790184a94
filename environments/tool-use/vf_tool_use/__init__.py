"""tool-use: questions answered by calling a calculator, a unit converter and a table lookup.

The model calls tools (OpenAI function calling) over several turns and ends with a message
holding ``<answer>NUMBER</answer>``. Reward: the final number matches the gold answer (within
0.1% or 0.01). ``ToolEnv`` reports ``total_tool_calls`` and per-tool call counts as metrics.
"""

from __future__ import annotations

import json
import re
from typing import Any

import verifiers as vf
from vf_tool_use.tasks import generate
from vf_tool_use.tools import calculator, convert_units, lookup

__all__ = ["ToolUseEnv", "load_environment", "parse_number"]

SYSTEM_PROMPT = (
    "Answer the question using the tools: `calculator` for arithmetic, `convert_units` for "
    "units and `lookup` for the reference tables (products, cities). Do not guess table values: "
    "look them up. When you know the answer, reply without calling a tool and put only the "
    "number, rounded to 2 decimal places, inside <answer>...</answer>."
)

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")


def parse_number(text: str | None) -> float | None:
    """The first number in ``text`` (thousands separators allowed), or ``None``."""
    if not text:
        return None
    m = _NUMBER.search(text)
    if m is None:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


class ToolUseEnv(vf.ToolEnv):
    """A :class:`verifiers.ToolEnv` whose oracle replays each task's tool plan."""

    async def oracle_response(self, state: vf.State) -> vf.Message:
        """Replay the task's plan; the independent lookups at its start go out as parallel
        tool calls in one message."""
        plan: list[list[Any]] = state["info"]["plan"]
        turns = _plan_turns(plan)
        step = sum(1 for m in state["completion"] if m.get("role") == "assistant")
        if step < len(turns):
            return vf.tool_call_message(
                *(
                    vf.tool_call(tool, args, id=f"call_{step}_{i}")
                    for i, (tool, args) in enumerate(turns[step])
                )
            )
        return {"role": "assistant", "content": f"<answer>{state['answer']}</answer>"}


def _plan_turns(plan: list[list[Any]]) -> list[list[list[Any]]]:
    """The plan as assistant turns: the leading lookups together, then one call per turn."""
    lookups = 0
    while lookups < len(plan) and plan[lookups][0] == "lookup":
        lookups += 1
    head = [plan[:lookups]] if lookups else []
    return head + [[step] for step in plan[lookups:]]


def load_environment(
    num_examples: int = 200,
    seed: int = 0,
    max_turns: int = 10,
    system_prompt: str = SYSTEM_PROMPT,
    **kwargs: Any,
) -> vf.Environment:
    """Build the tool-use environment.

    Args:
        num_examples: number of generated questions.
        seed: seed of the question generator.
        max_turns: model calls per rollout.
        system_prompt: instructions to the model.
        **kwargs: passed on to :class:`verifiers.ToolEnv`.
    """
    if num_examples < 1:
        raise vf.ConfigError(f"tool-use: num_examples must be >= 1, not {num_examples}")
    rows = [
        {
            "question": t["question"],
            "answer": t["answer"],
            "task": f"tool-use-{t['family']}",
            # JSON text: plans mix argument types that Arrow cannot hold in one column
            "info": json.dumps({"plan": t["plan"], "family": t["family"]}),
        }
        for t in generate(num_examples, seed=seed)
    ]
    parser = vf.XMLParser(["think", "answer"], answer_field="answer")

    def correct_answer(completion: vf.Messages, answer: str) -> float:
        """1.0 when the final <answer> is within 0.1% (or 0.01) of the gold number."""
        got = parse_number(parser.parse_answer(completion))
        gold = float(answer)
        if got is None:
            return 0.0
        return 1.0 if abs(got - gold) <= max(0.01, 1e-3 * abs(gold)) else 0.0

    rubric = vf.Rubric(funcs=[correct_answer], weights=[1.0], parser=parser)
    return ToolUseEnv(
        tools=[calculator, convert_units, lookup],
        max_turns=max_turns,
        dataset=rows,
        eval_dataset=rows,
        system_prompt=system_prompt,
        parser=parser,
        rubric=rubric,
        **kwargs,
    )
