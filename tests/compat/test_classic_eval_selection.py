"""Which rows ``vf-eval -n N`` (``evaluate_async(num_examples=N)``) evaluates, as 0.3.1 picks
them: the first N rows of the eval dataset, in order and unshuffled; the training dataset when
there is no eval dataset; an ``EnvGroup``'s members' rows one member after the other. Shapes of
upstream's ``gsm8k`` (dataset builders with an eval split) and ``math_group`` (an EnvGroup of
members with training rows only) examples; checked against 0.3.1's vf-eval on the same
scripted model (see docs/compat.md, "vf-eval -n")."""

from __future__ import annotations

from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.eval_plan import select_rows
from verifiers.evaluation import evaluate_async
from verifiers.testing.server import OpenAITestServer


def _rows(tag: str, n: int) -> Dataset:
    return Dataset.from_dict({"question": [f"{tag}{i}" for i in range(n)], "answer": ["1"] * n})


def _echo(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


async def _questions(env: vf.Environment, n: int) -> list[str]:
    async with OpenAITestServer(responder=_echo) as srv:
        result = await evaluate_async(
            env, vf.AsyncOpenAI(base_url=srv.base_url, api_key="x"), "m",
            num_examples=n, rollouts_per_example=2,
        )  # fmt: skip
    records = sorted(result.records, key=lambda r: (r["example_id"], r["rollout_index"]))
    return [r["prompt"][-1]["content"] for r in records]


@pytest.mark.asyncio
async def test_first_n_eval_rows_in_order_gsm8k_shape() -> None:
    env = vf.SingleTurnEnv(
        dataset=lambda: _rows("train", 30), eval_dataset=lambda: _rows("test", 30)
    )
    got = await _questions(env, 4)
    assert got == [q for i in range(4) for q in [f"test{i}"] * 2]


@pytest.mark.asyncio
async def test_training_rows_without_an_eval_dataset_and_n_past_the_end() -> None:
    env = vf.SingleTurnEnv(dataset=_rows("train", 3))
    assert await _questions(env, 10) == [q for i in range(3) for q in [f"train{i}"] * 2]


def test_env_group_rows_member_after_member_math_group_shape() -> None:
    """The rows vf-eval's plan takes (``select_rows``) from an EnvGroup."""
    group = vf.EnvGroup(
        [vf.SingleTurnEnv(dataset=_rows("gsm", 5)), vf.SingleTurnEnv(dataset=_rows("math", 5))],
        env_names=["gsm8k", "math"],
    )
    picked = select_rows(group, 3)
    assert [r["prompt"][-1]["content"] for r in picked] == ["gsm0", "gsm1", "gsm2"]
    both = vf.EnvGroup(
        [
            vf.SingleTurnEnv(dataset=_rows("a", 2), eval_dataset=_rows("a-eval", 2)),
            vf.SingleTurnEnv(dataset=_rows("b", 2), eval_dataset=_rows("b-eval", 2)),
        ],
        env_names=["a", "b"],
    )
    picked = select_rows(both, 3)
    assert [r["prompt"][-1]["content"] for r in picked] == ["a-eval0", "a-eval1", "b-eval0"]
