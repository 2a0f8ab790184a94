"""A toy environment a tiny random model learns in a few dozen steps: answer with the letter A."""

from __future__ import annotations

from typing import Any

import verifiers as vf


def share_of_a(completion: Any, **_: Any) -> float:
    """Fraction of the answer's characters that are ``A`` (0 for an empty answer)."""
    text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
    return text.count("A") / len(text) if text else 0.0


def load_environment(num_examples: int = 16, **kwargs: Any) -> vf.Environment:
    rows = [{"question": f"Say A ({i})", "answer": "A"} for i in range(num_examples)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[share_of_a]), **kwargs)
