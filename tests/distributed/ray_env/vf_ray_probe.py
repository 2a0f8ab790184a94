"""A test environment for distributed runs: the oracle answers; the reward is the exact match
plus a seeded per-rollout term (so that records differ per rollout and a wrong merge shows),
and each rollout can take ``delay`` seconds (so that a run is still going when a test kills a
worker or a node)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import verifiers as vf


def load_environment(num_rows: int = 12, delay: float = 0.0, seed: int = 0) -> vf.Environment:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(num_rows)]

    async def correct(completion: vf.Messages, answer: str) -> float:
        if delay:
            await asyncio.sleep(delay)
        return float(completion[-1]["content"] == answer)

    def seeded(state: Any) -> float:
        key = f"{seed}/{state['example_id']}/{state['rollout_index']}"
        return round(random.Random(key).random(), 6)

    rubric = vf.Rubric(funcs=[correct, seeded], weights=[1.0, 0.5])
    return vf.SingleTurnEnv(dataset=rows, eval_dataset=rows, rubric=rubric)
