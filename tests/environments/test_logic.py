from __future__ import annotations

import pytest

import verifiers as vf
from verifiers.testing import ScriptedClient


def test_rows_interleave_tasks_and_are_seeded() -> None:
    tasks = ["knights_knaves", "syllogism", "maze"]
    env = vf.load_environment("logic", tasks=tasks, num_examples=7, seed=4)
    rows = env.get_rows("eval")
    assert [r["task"] for r in rows] == [*tasks, *tasks, "knights_knaves"]
    again = vf.load_environment("logic", tasks=",".join(tasks), num_examples=7, seed=4)
    assert [r["prompt"] for r in again.get_rows("eval")] == [r["prompt"] for r in rows]
    other = vf.load_environment("logic", tasks=tasks, num_examples=7, seed=5)
    assert [r["prompt"] for r in other.get_rows("eval")] != [r["prompt"] for r in rows]


def test_repeated_puzzles_are_skipped_while_the_level_has_new_ones() -> None:
    # at level 0, n_queens' first ten draws for seed 10 hold three repeats
    rows = vf.load_environment("logic", tasks="n_queens", num_examples=10, seed=10).get_rows()
    assert len({r["prompt"][-1]["content"] for r in rows}) == 10
    # tower_of_hanoi's level 0 has fewer distinct puzzles than asked for: repeats fill the rest
    rows = vf.load_environment("logic", tasks="tower_of_hanoi", num_examples=10).get_rows()
    assert len(rows) == 10
    assert len({r["prompt"][-1]["content"] for r in rows}) < 10


def test_difficulty_raises_the_curriculum_level() -> None:
    easy = vf.load_environment("logic", tasks=["knights_knaves"], num_examples=5, difficulty=0)
    hard = vf.load_environment("logic", tasks=["knights_knaves"], num_examples=5, difficulty=9)
    assert all(r["info"]["difficulty"] == 9 for r in hard.get_rows("eval"))
    # level 0 has 2 inhabitants, the top level (clamped) 5
    assert all(
        "You meet 2 inhabitants" in r["prompt"][-1]["content"] for r in easy.get_rows("eval")
    )
    assert all(
        "You meet 5 inhabitants" in r["prompt"][-1]["content"] for r in hard.get_rows("eval")
    )


def test_task_configs_override_generator_settings() -> None:
    env = vf.load_environment(
        "logic",
        tasks=["knights_knaves"],
        num_examples=3,
        task_configs={"knights_knaves": {"n_people": 3}},
    )
    assert all("You meet 3 inhabitants" in r["prompt"][-1]["content"] for r in env.get_rows("eval"))


async def test_scored_by_reasoning_gym() -> None:
    env = vf.load_environment("logic", tasks=["knights_knaves"], num_examples=1)
    answer = env.get_rows("eval")[0]["answer"]
    replies = [
        f"<think>hmm</think>\n<answer>\n{answer}\n</answer>",
        "<answer>nobody</answer>",
        answer,
    ]
    rewards = []
    for reply in replies:
        result = await vf.evaluate_async(
            env, client=ScriptedClient([reply]), model="m", num_examples=-1, rollouts_per_example=1
        )
        rewards.append(result.records[0]["reward"])
    assert rewards[0] == 1.0
    assert rewards[1] < 1.0
    assert rewards[2] == 0.0  # no <answer> tag: nothing was answered


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tasks": ["knights_knaves", "no_such_task"]}, "unknown reasoning-gym task"),
        ({"num_examples": 0}, "num_examples"),
        ({"difficulty": -1}, "difficulty"),
        ({"tasks": ["maze"], "task_configs": {"sudoku": {}}}, "not in tasks: sudoku"),
    ],
)
def test_bad_arguments_are_config_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(vf.ConfigError, match=message):
        vf.load_environment("logic", **kwargs)
