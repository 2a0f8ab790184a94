from __future__ import annotations

import json
from importlib import resources

import pytest
from vf_math.generator import fmt, generate

import verifiers as vf
from verifiers.testing import ScriptedClient


def test_bundled_sample_is_the_seeded_generator_output() -> None:
    text = resources.files("vf_math").joinpath("data/sample.jsonl").read_text("utf-8")
    assert [json.loads(line) for line in text.splitlines()] == generate(200, seed=2026)


def test_generator_is_reproducible_and_distinct() -> None:
    rows = generate(100, seed=3, kind="competition")
    assert rows == generate(100, seed=3, kind="competition")
    assert len({r["question"] for r in rows}) == 100
    assert {r["task"] for r in rows} == {"math-competition"}
    with pytest.raises(ValueError, match="kind"):
        generate(1, kind="geometry")  # type: ignore[arg-type]


def test_answers_are_canonical() -> None:
    from fractions import Fraction

    assert fmt(Fraction(-3, 4)) == "-\\frac{3}{4}"
    assert fmt(Fraction(8, 2)) == "4"


async def test_equivalent_answers_score_and_thinking_is_stripped() -> None:
    rows = [{"question": "What is 3/4 as a decimal?", "answer": "\\frac{3}{4}"}]
    env = vf.load_environment("math", source="generated", num_examples=1)
    env = vf.SingleTurnEnv(dataset=rows, parser=env.parser, rubric=env.rubric)
    replies = [
        "It is \\boxed{0.75}",
        "<think>maybe \\boxed{0.75}</think> so the answer is \\boxed{0.7}",
        "<think>so \\boxed{0.75}",  # unclosed thinking: nothing answered
    ]
    rewards = []
    for reply in replies:
        result = await vf.evaluate_async(
            env, client=ScriptedClient([reply]), model="m", num_examples=-1, rollouts_per_example=1
        )
        rewards.append(result.records[0]["reward"])
    assert rewards == [1.0, 0.0, 0.0]


async def test_an_answer_without_a_box_scores_zero() -> None:
    # math-verify evaluates the restated sum to 10/11; only a \boxed{} answer may count
    rows = [{"question": "Evaluate the sum.", "answer": "\\frac{10}{11}"}]
    env = vf.load_environment("math", source="generated", num_examples=1)
    env = vf.SingleTurnEnv(dataset=rows, parser=env.parser, rubric=env.rubric)
    rewards = []
    for reply in ["Evaluate $\\sum_{k=1}^{10} \\frac{1}{k(k+1)}$.", "\\boxed{\\frac{10}{11}}"]:
        result = await vf.evaluate_async(
            env, client=ScriptedClient([reply]), model="m", num_examples=-1, rollouts_per_example=1
        )
        rewards.append(result.records[0]["reward"])
    assert rewards == [0.0, 1.0]


def test_unknown_source_is_a_config_error() -> None:
    with pytest.raises(vf.ConfigError, match="unknown source 'gsm9k'"):
        vf.load_environment("math", source="gsm9k")


def test_generated_source_honours_size_and_seed() -> None:
    env = vf.load_environment("math", source="generated", num_examples=7, seed=9, kind="word")
    rows = env.get_rows("eval")
    assert len(rows) == 7
    assert {r["task"] for r in rows} == {"math-word"}
