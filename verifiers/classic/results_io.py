"""0.3.x's on-disk results of an eval run (``results.jsonl`` + ``metadata.json``): reading,
appending, writing the metadata atomically, and checking that a run may be resumed with the
current settings. Served from :mod:`verifiers.utils.save_utils` (0.3.x's home for them)."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "get_hf_hub_dataset_name",
    "load_outputs",
    "make_dataset",
    "push_results_to_hf_hub",
    "save_metadata",
    "save_new_outputs",
    "save_outputs",
    "validate_resume_metadata",
]

logger = logging.getLogger("verifiers.utils.save_utils")

RESULTS = "results.jsonl"
METADATA = "metadata.json"


def load_outputs(results_path: Path) -> list[dict[str, Any]]:
    """The rows of ``results.jsonl``; unreadable rows, non-objects and rows without an
    ``example_id`` are skipped with a warning (a run cut off mid-write stays readable)."""
    source = results_path / RESULTS
    rows: list[dict[str, Any]] = []
    with source.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                logger.warning("Ignoring malformed JSONL row in %s at line %s", source, number)
                continue
            if not isinstance(row, dict):
                logger.warning("Ignoring non-object JSONL row in %s at line %s", source, number)
                continue
            if "example_id" not in row:
                logger.warning(
                    "Ignoring JSONL row without example_id in %s at line %s", source, number
                )
                continue
            rows.append(row)
    return rows


def _needs_newline(path: Path) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"


def save_outputs(outputs: list[Mapping[str, Any]], results_path: Path, mode: str = "a") -> None:
    """Write ``outputs`` as JSON lines to ``results_path/results.jsonl`` (``mode`` ``"a"``
    appends, ``"w"`` replaces); a row that cannot be serialised is logged and left out."""
    from verifiers.utils.json_utils import make_serializable

    lines = []
    for index, output in enumerate(outputs):
        try:
            lines.append(json.dumps(output, default=make_serializable) + "\n")
        except (TypeError, ValueError) as e:
            example_id = output.get("example_id", "unknown")
            logger.error(f"Failed to save result with index {index} ({example_id=}): {e}")
    text = "".join(lines)
    results_path.mkdir(parents=True, exist_ok=True)
    target = results_path / RESULTS
    if "a" in mode and text and _needs_newline(target):
        text = "\n" + text
    with target.open(mode) as handle:
        handle.write(text)


def save_new_outputs(new_outputs: list[Mapping[str, Any]], results_path: Path) -> None:
    """Append ``new_outputs`` to the run's ``results.jsonl``."""
    save_outputs(new_outputs, results_path)


def save_metadata(metadata: Mapping[str, Any], result_path: Path) -> None:
    """Write ``metadata`` (less ``path_to_save`` and ``date``) to ``metadata.json``, replacing
    it atomically."""
    from verifiers.utils.json_utils import make_serializable

    record = {k: v for k, v in metadata.items() if k not in ("path_to_save", "date")}
    text = json.dumps(record, default=make_serializable)
    result_path.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("w", dir=result_path, delete=False)
    try:
        with handle:
            handle.write(text)
        os.replace(handle.name, result_path / METADATA)
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)


def validate_resume_metadata(
    results_path: Path,
    env_id: str,
    model: str,
    num_examples: int,
    rollouts_per_example: int,
    shuffle: bool = False,
    shuffle_seed: int | None = None,
) -> None:
    """``ValueError`` listing every setting that differs from the saved run's metadata
    (``num_examples`` may grow, not shrink)."""
    source = results_path / METADATA
    try:
        saved = json.loads(source.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(
            f"Cannot resume from {results_path}: metadata at {source} is not valid JSON."
        ) from e
    if not isinstance(saved, dict):
        raise ValueError(
            f"Cannot resume from {results_path}: metadata at {source} must be a JSON object."
        )
    problems = []
    current: dict[str, object] = {
        "env_id": env_id,
        "model": model,
        "rollouts_per_example": rollouts_per_example,
    }
    for key, value in current.items():
        if (was := saved.get(key, "<missing>")) != value:
            problems.append(f"{key}: saved={was!r}, current={value!r}")
    was_n = saved.get("num_examples", "<missing>")
    if not isinstance(was_n, int):
        problems.append(f"num_examples: saved={was_n!r}, current={num_examples!r}")
    elif num_examples < was_n:
        problems.append(
            f"num_examples: saved={was_n!r}, current={num_examples!r} (current must be >= saved)"
        )
    was_shuffle = bool(saved.get("shuffle", False))
    if was_shuffle != shuffle:
        problems.append(f"shuffle: saved={was_shuffle!r}, current={shuffle!r}")
    if shuffle:
        seed = 0 if shuffle_seed is None else shuffle_seed
        if (was_seed := saved.get("shuffle_seed", "<missing>")) != seed:
            problems.append(f"shuffle_seed: saved={was_seed!r}, current={seed!r}")
    if problems:
        raise ValueError(
            f"Cannot resume from {results_path}: metadata mismatch ({'; '.join(problems)}). "
            "Use matching evaluation settings or provide a new results path."
        )


def get_hf_hub_dataset_name(outputs: Mapping[str, Any]) -> str:
    """``<env_id>_<model, "/" as "_">_n<num_examples>_r<rollouts_per_example>`` from a run's
    ``metadata``."""
    meta = outputs["metadata"]
    model = meta["model"].replace("/", "_")
    return f"{meta['env_id']}_{model}_n{meta['num_examples']}_r{meta['rollouts_per_example']}"


def make_dataset(results: Mapping[str, Any]) -> Any:
    """A ``datasets.Dataset`` of a run's (already serialised) ``outputs``."""
    from datasets import Dataset

    return Dataset.from_list(list(results["outputs"]))


def push_results_to_hf_hub(results: Mapping[str, Any], dataset_name: str | None = None) -> None:
    """Push a run's outputs to the Hugging Face Hub as a dataset (named by
    :func:`get_hf_hub_dataset_name` unless given); a failure is logged, not raised."""
    name = dataset_name or get_hf_hub_dataset_name(results)
    try:
        make_dataset(results).push_to_hub(name)
    except Exception as e:  # network, credentials, quota: the run's files are saved already
        logger.error(f"Error pushing results to Hugging Face Hub: {e}")
        return
    logger.info(f"Results pushed to Hugging Face Hub: {name}")
