"""The full-dataset loaders map Hugging Face rows correctly. ``datasets.load_dataset`` is
replaced by an in-memory stand-in with the real column layout: nothing is downloaded."""

from __future__ import annotations

from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf

CALLS: list[tuple[Any, ...]] = []

FAKE: dict[str, list[dict[str, Any]]] = {
    "openai/gsm8k": [
        {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3 + 4 = 7\n#### 7"}
    ],
    "HuggingFaceH4/MATH-500": [
        {"problem": "Compute $1+1$.", "answer": "2", "subject": "Prealgebra", "level": 1}
    ],
    "EleutherAI/hendrycks_math": [
        {
            "problem": "Find $x$ if $2x=1$.",
            "solution": "So $x=\\boxed{\\frac{1}{2}}$.",
            "type": "Algebra",
            "level": "Level 1",
        }
    ],
    "google-research-datasets/mbpp": [
        {
            "task_id": 11,
            "prompt": "Write a function to double a number.",
            "code": "def double(x):\n    return 2 * x\n",
            "test_list": ["assert double(2) == 4", "assert double(-1) == -2"],
            "test_imports": ["import math"],
        }
    ],
}


@pytest.fixture(autouse=True)
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def load_dataset(path: str, name: str | None = None, split: str | None = None) -> Dataset:
        CALLS.append((path, name, split))
        return Dataset.from_list(FAKE[path])

    CALLS.clear()
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


def test_gsm8k_answers_come_from_the_hash_marker() -> None:
    env = vf.load_environment("math", source="gsm8k", split="train")
    (row,) = env.get_rows("eval")
    assert row["answer"] == "7" and row["task"] == "gsm8k"
    assert CALLS == [("openai/gsm8k", "main", "train")]


def test_math500_and_math() -> None:
    (row,) = vf.load_environment("math", source="math500").get_rows("eval")
    assert row["answer"] == "2" and row["info"]["family"] == "Prealgebra"
    rows = vf.load_environment("math", source="math").get_rows("eval")
    assert len(rows) == 7  # one per subject config (the stand-in returns the same row)
    assert {r["answer"] for r in rows} == {"\\frac{1}{2}"}
    assert {c[1] for c in CALLS if c[0] == "EleutherAI/hendrycks_math"} >= {"algebra", "prealgebra"}


async def test_mbpp_tasks_show_the_first_test_and_hide_the_rest() -> None:
    from verifiers.testing.check import check_environment_async

    env = vf.load_environment("code", source="mbpp")
    (row,) = env.get_rows("eval")
    question = row["prompt"][-1]["content"]
    assert "assert double(2) == 4" in question and "double(-1)" not in question
    assert row["info"]["tests"] == [
        "import math\nassert double(2) == 4",
        "import math\nassert double(-1) == -2",
    ]
    assert row["info"]["task_id"] == "mbpp-11"
    assert CALLS == [("google-research-datasets/mbpp", "sanitized", "test")]
    # the reference solution passes its tests in the sandbox; a no-op answer does not
    (await check_environment_async(env, num_examples=1)).raise_for_failures()
