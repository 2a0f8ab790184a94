"""``load_example_dataset``: common public benchmarks as ``question``/``answer`` datasets.

Downloads from the Hugging Face Hub on first use (and then reads the local cache). Nothing in
the SDK calls this implicitly; environments that want offline defaults ship their own sample.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from verifiers.errors import ConfigError, InfraError
from verifiers.parsers.extract import extract_boxed_answer, extract_hash_answer

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "BOXED_SYSTEM_PROMPT",
    "EXAMPLE_DATASETS",
    "THINK_BOXED_SYSTEM_PROMPT",
    "extract_boxed_answer",
    "extract_hash_answer",
    "get_preprocess_fn",
    "load_example_dataset",
]

# system prompts classic math environments pass as ``system_prompt=``
BOXED_SYSTEM_PROMPT = (
    "Reason through the problem step by step, then write your final answer inside \\boxed{}."
)
THINK_BOXED_SYSTEM_PROMPT = (
    "First think the problem through inside <think>...</think> tags, then write your final "
    "answer inside \\boxed{}."
)


@dataclass(frozen=True, slots=True)
class _Source:
    repo: str
    configs: tuple[str | None, ...]
    split: str
    question: str
    answer: Callable[[dict[str, Any]], str]


def _field(name: str) -> Callable[[dict[str, Any]], str]:
    return lambda row: str(row[name]).strip()


EXAMPLE_DATASETS: dict[str, _Source] = {
    "gsm8k": _Source(
        "openai/gsm8k", ("main",), "test", "question", lambda r: extract_hash_answer(r["answer"])
    ),
    "math": _Source(
        "chiayewken/competition_math",
        (None,),
        "train",
        "problem",
        lambda r: extract_boxed_answer(r["solution"]),
    ),
    "math500": _Source("HuggingFaceH4/MATH-500", (None,), "test", "problem", _field("answer")),
    "aime2024": _Source(
        "HuggingFaceH4/aime_2024", (None,), "train", "problem", lambda r: str(int(r["answer"]))
    ),
    "aime2025": _Source(
        "opencompass/AIME2025",
        ("AIME2025-I", "AIME2025-II"),
        "test",
        "question",
        lambda r: "".join(c for c in str(r["answer"]) if c.isdigit() or c == "."),
    ),
    "amc2023": _Source("knoveleng/AMC-23", (None,), "train", "problem", _field("answer")),
    "openrs": _Source("knoveleng/open-rs", (None,), "train", "problem", _field("answer")),
}


def get_preprocess_fn(name: str) -> Callable[[dict[str, Any]], dict[str, str]]:
    """The function turning one raw row of example dataset ``name`` into
    ``{"question", "answer"}`` (what :func:`load_example_dataset` applies)."""
    source = EXAMPLE_DATASETS.get(name)
    if source is None:
        raise ConfigError(
            f"unknown example dataset {name!r}; available: {', '.join(EXAMPLE_DATASETS)}"
        )

    def preprocess(row: dict[str, Any]) -> dict[str, str]:
        return {"question": str(row[source.question]), "answer": source.answer(row)}

    preprocess.__name__ = f"preprocess_{name}"
    return preprocess


def load_example_dataset(
    name: str = "gsm8k", split: str | None = None, n: int | None = None, seed: int = 0
) -> Dataset:
    """A public benchmark as a dataset with ``question`` and ``answer`` columns.

    Args:
        name: one of :data:`EXAMPLE_DATASETS` (``gsm8k``, ``math``, ``math500``, ``aime2024``,
            ``aime2025``, ``amc2023``, ``openrs``).
        split: the split to load (default: the benchmark's usual one).
        n: keep ``n`` rows, chosen by a shuffle with ``seed`` (default: all rows, in order).
        seed: the shuffle seed used with ``n``.
    """
    source = EXAMPLE_DATASETS.get(name)
    if source is None:
        close = difflib.get_close_matches(name, list(EXAMPLE_DATASETS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"unknown example dataset {name!r}{hint}; available: {', '.join(EXAMPLE_DATASETS)}"
        )
    from datasets import Dataset, concatenate_datasets, load_dataset

    parts = []
    for config in source.configs:
        try:
            loaded = load_dataset(source.repo, config, split=split or source.split)
        except (ConnectionError, OSError) as e:
            raise InfraError(
                f"could not load {source.repo} for {name!r} ({e}); it is downloaded from the "
                "Hugging Face Hub on first use, so this needs network access or a warm cache"
            ) from e
        parts.append(loaded)
    dataset = parts[0] if len(parts) == 1 else concatenate_datasets(parts)
    preprocess = get_preprocess_fn(name)
    rows = [preprocess(row) for row in dataset]
    out = Dataset.from_list(rows)
    if n is not None and 0 <= n < len(out):
        out = out.shuffle(seed=seed).select(range(n))
    return out


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
