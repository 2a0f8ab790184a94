"""Rows of an environment's datasets: building a ``datasets.Dataset`` from what callers pass,
selecting rows, normalising a formatted row for rollouts, and :class:`DatasetSplits`, the
dataset half of an environment (its ``dataset`` / ``eval_dataset`` and their formatting)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from verifiers.errors import ConfigError
from verifiers.types import Messages, MessageType

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = ["DatasetLike", "DatasetSplits", "normalise_row", "select_rows", "to_dataset"]

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


class DatasetSplits:
    """The training and evaluation rows of an environment, formatted on first use.

    ``Environment.__init__`` sets ``_raw`` (the splits as given), ``_formatted`` and ``_rows``
    (caches), ``message_type``, ``system_prompt`` and ``few_shot``."""

    _raw: dict[str, DatasetLike | None]
    _formatted: dict[str, Dataset]
    _rows: dict[str, list[dict[str, Any]]]
    message_type: MessageType
    system_prompt: str | None
    few_shot: Messages

    # 0.3.x keeps the datasets as plain attributes that environments assign, also before
    # calling Environment.__init__ and after building the environment: both are settable
    @property
    def dataset(self) -> Dataset | None:
        """The formatted training dataset (``None`` when the environment has only eval rows)."""
        if "_raw" not in self.__dict__:  # read before Environment.__init__: what was assigned
            return self.__dict__.get("_preset_splits", {}).get("train")
        return self._get_formatted("train") if self._raw["train"] is not None else None

    @dataset.setter
    def dataset(self, value: DatasetLike | None) -> None:
        self._set_split("train", value)

    @property
    def eval_dataset(self) -> Dataset | None:
        """The formatted evaluation dataset (``None`` when not given)."""
        if "_raw" not in self.__dict__:  # read before Environment.__init__: what was assigned
            return self.__dict__.get("_preset_splits", {}).get("eval")
        return self._get_formatted("eval") if self._raw["eval"] is not None else None

    @eval_dataset.setter
    def eval_dataset(self, value: DatasetLike | None) -> None:
        self._set_split("eval", value)

    def _set_split(self, split: str, value: DatasetLike | None) -> None:
        raw = self.__dict__.get("_raw")
        if raw is None:  # before Environment.__init__: it takes the value
            self.__dict__.setdefault("_preset_splits", {})[split] = value
            return
        raw[split] = value
        self._formatted.pop(split, None)
        self._rows.pop(split, None)

    def get_dataset(self, n: int = -1, seed: int | None = None) -> Dataset:
        """The training dataset (falls back to the eval dataset), first ``n`` rows or a seeded
        shuffle of them."""
        split = "train" if self._raw["train"] is not None else "eval"
        return select_rows(self._get_formatted(split), n, seed)

    def get_eval_dataset(self, n: int = -1, seed: int | None = None) -> Dataset:
        """The evaluation dataset (falls back to the training dataset)."""
        split = "eval" if self._raw["eval"] is not None else "train"
        return select_rows(self._get_formatted(split), n, seed)

    def get_rows(self, split: str = "eval", n: int = -1) -> list[dict[str, Any]]:
        """Formatted rows as plain dicts (cached): what rollouts are driven from."""
        if self._raw.get(split) is None:
            split = "train" if split == "eval" else "eval"
        rows = self._rows.get(split)
        if rows is None:
            rows = [normalise_row(r) for r in self._get_formatted(split).to_list()]
            self._rows[split] = rows
        return rows if n < 0 else rows[:n]

    def format_inputs(self, inputs: Any) -> list[dict[str, Any]]:
        """Caller-given rows formatted like dataset rows (prompt built, ids added)."""
        if isinstance(inputs, list):
            # info dicts of different shapes (rows of several environments) cannot share an
            # Arrow column: they travel as JSON, which normalise_row decodes
            inputs = [
                {**r, "info": json.dumps(r["info"])} if isinstance(r.get("info"), dict) else r
                for r in inputs
            ]
        return [normalise_row(r) for r in self.format_dataset(to_dataset(inputs)).to_list()]

    def _get_formatted(self, split: str) -> Dataset:
        ds = self._formatted.get(split)
        if ds is None:
            raw = self._raw[split]
            if raw is None:
                raise ConfigError(f"{type(self).__name__} has no {split} dataset")
            ds = self.format_dataset(to_dataset(raw))
            self._formatted[split] = ds
        return ds

    def format_dataset(self, dataset: Dataset) -> Dataset:
        """Add ``prompt`` (from ``question``), ``example_id``, ``answer``, ``info`` and ``task``
        columns where missing."""
        cols = set(dataset.column_names)
        if "prompt" not in cols and "question" not in cols:
            raise ConfigError(
                f"{type(self).__name__}: the dataset needs a 'prompt' or a 'question' column; "
                f"it has {sorted(cols)}"
            )
        if "example_id" not in cols:
            dataset = dataset.add_column("example_id", list(range(len(dataset))))
        if "prompt" not in cols:
            prompts = [self._prompt_from_question(q) for q in dataset["question"]]
            dataset = dataset.add_column("prompt", prompts)  # type: ignore[arg-type]
        elif self.message_type == "chat" and self.system_prompt:
            system = {"role": "system", "content": self.system_prompt}
            prompts = [
                [system, *p]
                if isinstance(p, list) and (not p or p[0].get("role") != "system")
                else p
                for p in dataset["prompt"]
            ]
            dataset = dataset.remove_columns("prompt").add_column("prompt", prompts)  # type: ignore[arg-type]
        if "answer" not in cols:
            dataset = dataset.add_column("answer", [""] * len(dataset))
        if "task" not in cols:
            dataset = dataset.add_column("task", ["default"] * len(dataset))
        return dataset

    def _prompt_from_question(self, question: str) -> Messages | str:
        if self.message_type == "completion":
            return question
        prompt: Messages = []
        if self.system_prompt:
            prompt.append({"role": "system", "content": self.system_prompt})
        prompt.extend(self.few_shot)
        prompt.append({"role": "user", "content": question})
        return prompt
