"""math: single-turn math problems graded by math-verify.

Sources (``source=``):

- ``"bundled"`` (default): 200 problems shipped in the package (made by :mod:`vf_math.generator`
  with seed 2026), usable offline.
- ``"generated"``: fresh procedural problems (``num_examples``, ``seed``, ``kind``).
- ``"gsm8k"``: GSM8K from the Hugging Face hub (``openai/gsm8k``, config ``main``).
- ``"math"``: the MATH benchmark (``EleutherAI/hendrycks_math``, all subjects), answers taken
  from the ``\\boxed{}`` of the reference solution.
- ``"math500"``: the MATH-500 subset (``HuggingFaceH4/MATH-500``).

The model thinks freely and puts the final answer in ``\\boxed{}``; thinking blocks
(``<think>...</think>``) are stripped before the answer is parsed.
"""

from __future__ import annotations

import json
from functools import partial
from importlib import resources
from typing import Any

import verifiers as vf
from vf_math.generator import generate

__all__ = ["SOURCES", "load_environment"]

SOURCES = ("bundled", "generated", "gsm8k", "math", "math500")

SYSTEM_PROMPT = (
    "Solve the problem. Reason step by step, then give only the final answer inside "
    "\\boxed{}, e.g. \\boxed{42} or \\boxed{\\frac{3}{4}}."
)

MATH_SUBJECTS = (
    "algebra",
    "counting_and_probability",
    "geometry",
    "intermediate_algebra",
    "number_theory",
    "prealgebra",
    "precalculus",
)


def _bundled() -> list[dict[str, str]]:
    text = resources.files("vf_math").joinpath("data/sample.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _rows(source: str, split: str, num_examples: int, seed: int, kind: str) -> list[dict[str, Any]]:
    if source == "bundled":
        rows: list[dict[str, Any]] = list(_bundled())
    elif source == "generated":
        rows = list(generate(num_examples if num_examples > 0 else 1000, seed=seed, kind=kind))  # type: ignore[arg-type]
    else:
        rows = _load_hf(source, split)
    if num_examples > 0:
        rows = rows[:num_examples]
    return [
        {
            "question": r["question"],
            "answer": r["answer"],
            "task": r.get("task", f"math-{source}"),
            "info": {"source": source, "family": r.get("family", "")},
        }
        for r in rows
    ]


def _load_hf(source: str, split: str) -> list[dict[str, Any]]:
    """The full datasets, fetched through ``datasets`` (network or local HF cache)."""
    from datasets import concatenate_datasets, load_dataset

    if source == "gsm8k":
        ds = load_dataset("openai/gsm8k", "main", split=split)
        return [
            {
                "question": r["question"],
                "answer": vf.extract_hash_answer(r["answer"]) or "",
                "task": "gsm8k",
            }
            for r in ds
        ]
    if source == "math500":
        ds = load_dataset("HuggingFaceH4/MATH-500", split="test")
        return [
            {
                "question": r["problem"],
                "answer": r["answer"],
                "task": "math500",
                "family": r.get("subject", ""),
            }
            for r in ds
        ]
    parts = [load_dataset("EleutherAI/hendrycks_math", s, split=split) for s in MATH_SUBJECTS]
    ds = concatenate_datasets(parts)
    out = []
    for r in ds:
        answer = vf.extract_boxed_answer(r["solution"])
        if answer:
            out.append(
                {
                    "question": r["problem"],
                    "answer": answer,
                    "task": "math",
                    "family": r.get("type", ""),
                }
            )
    return out


def load_environment(
    source: str = "bundled",
    split: str = "test",
    num_examples: int = -1,
    seed: int = 0,
    kind: str = "mixed",
    system_prompt: str = SYSTEM_PROMPT,
    **kwargs: Any,
) -> vf.Environment:
    """Build the math environment.

    Args:
        source: ``bundled`` | ``generated`` | ``gsm8k`` | ``math`` | ``math500``.
        split: dataset split for the Hugging Face sources.
        num_examples: keep the first N problems (-1: all; ``generated`` defaults to 1000).
        seed: seed of the ``generated`` source.
        kind: ``word`` | ``competition`` | ``mixed`` (``generated`` source only).
        system_prompt: instructions shown to the model.
        **kwargs: passed on to :class:`verifiers.SingleTurnEnv`.
    """
    if source not in SOURCES:
        raise vf.ConfigError(f"math: unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    if kind not in ("word", "competition", "mixed"):
        raise vf.ConfigError(f"math: kind must be 'word', 'competition' or 'mixed', not {kind!r}")
    from datasets import Dataset

    dataset = Dataset.from_list(_rows(source, split, num_examples, seed, kind))
    # strict: a reply without a \boxed{} answer scores 0, so restating the problem (which
    # math-verify may evaluate to the answer) earns nothing
    parser = vf.MaybeThinkParser(extract_fn=partial(vf.extract_boxed_answer, strict=True))
    rubric = vf.MathRubric(parser=parser)
    return vf.SingleTurnEnv(
        dataset=dataset,
        eval_dataset=dataset,
        system_prompt=system_prompt,
        parser=parser,
        rubric=rubric,
        **kwargs,
    )
