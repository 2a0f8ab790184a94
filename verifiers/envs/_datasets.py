"""Rows of an environment's datasets: building a ``datasets.Dataset`` from what callers pass,
selecting rows, and normalising a formatted row for rollouts."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from verifiers.errors import ConfigError

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = ["DatasetLike", "normalise_row", "select_rows", "to_dataset"]

DatasetLike = Any  # datasets.Dataset | list[dict] | dict of columns | Callable[[], Dataset]


def to_dataset(raw: DatasetLike) -> Dataset:
    """A ``datasets.Dataset`` from what environments and ``generate`` accept: a Dataset, a
    zero-argument builder, a list of row dicts, a dict of columns, or anything with
    ``to_list()``."""
    from datasets import Dataset

    if callable(raw) and not isinstance(raw, Dataset):
        raw = raw()
    if isinstance(raw, Dataset):
        return raw
    if isinstance(raw, list):
        try:
            return Dataset.from_list(raw)
        except (TypeError, ValueError) as e:  # pyarrow's ArrowTypeError / ArrowInvalid
            raise ConfigError(
                f"the rows cannot form a datasets.Dataset ({type(e).__name__}: {e}); each column "
                "must hold one type in every row (store an 'info' that varies as a JSON string)"
            ) from None
    if isinstance(raw, dict):  # columns, the classic ``generate(inputs={...})`` shape
        lengths = {k: len(v) for k, v in raw.items() if isinstance(v, list)}
        if len(lengths) != len(raw) or len(set(lengths.values())) > 1:
            raise ConfigError(
                "a dict of inputs must map each column name to a list, all of one length; got "
                + ", ".join(f"{k}: {type(v).__name__}" for k, v in raw.items())
            )
        return Dataset.from_dict(raw)
    to_list = getattr(raw, "to_list", None)
    if callable(to_list):  # e.g. an IterableDataset slice or a pandas frame
        return Dataset.from_list(list(to_list()))
    raise ConfigError(
        f"dataset must be a datasets.Dataset, a list of dicts or a dict of columns, not "
        f"{type(raw).__name__}"
    )


def select_rows(ds: Dataset, n: int, seed: int | None) -> Dataset:
    """The first ``n`` rows (``-1``: all), of a ``seed``-shuffled copy when a seed is given."""
    if seed is not None:
        ds = ds.shuffle(seed=seed)
    if 0 <= n < len(ds):
        ds = ds.select(range(n))
    return ds


def normalise_row(row: dict[str, Any]) -> dict[str, Any]:
    """A formatted row as rollouts use it: ``info`` a dict (decoded from JSON text), prompt
    messages without the ``None`` fields Arrow adds."""
    info = row.get("info")
    if isinstance(info, str):
        try:
            row["info"] = json.loads(info) if info else {}
        except ValueError:
            row["info"] = {"text": info}
    elif info is None:
        row["info"] = {}
    prompt = row.get("prompt")
    if isinstance(prompt, list):
        # Arrow fills absent struct fields with None; drop them so the wire format is clean
        row["prompt"] = [
            {k: v for k, v in m.items() if v is not None or k == "content"} for m in prompt
        ]
    return row
