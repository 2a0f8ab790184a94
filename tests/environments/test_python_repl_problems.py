"""python-repl's problem generator."""

from __future__ import annotations

import random

import pytest
from vf_python_repl import problems


def few(r: random.Random) -> tuple[str, int, list[str]]:
    k = r.randint(1, 2)
    return f"few {k}?", k, [f"print({k})"]


def many(r: random.Random) -> tuple[str, int, list[str]]:
    k = r.randint(1, 10**9)
    return f"many {k}?", k, [f"print({k})"]


def test_a_family_with_few_problems_does_not_stall_a_large_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(problems, "FAMILIES", [few, many])
    out = problems.generate(30, seed=4)
    assert len({p["question"] for p in out}) == 30
    assert sum(p["family"] == "few" for p in out) == 2
    monkeypatch.setattr(problems, "FAMILIES", [few])
    with pytest.raises(RuntimeError, match="could not generate 3 distinct problems"):
        problems.generate(3)
