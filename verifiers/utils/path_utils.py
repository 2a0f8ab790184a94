"""Where 0.3.x's ``vf-eval`` put its results, and how it found a run to resume.

The layout: ``<base>/<subdir>/<env id>--<model with "/" as "--">/<8 hex characters>/``, holding
``results.jsonl`` and ``metadata.json``. ``<base>`` is the ``output_dir`` when given, else the
environment's ``outputs/`` folder when the environment lives in ``<env_dir_path>/<module>``,
else ``./outputs``. This verifiers' own evaluator (``vf eval``) saves through
:mod:`verifiers.utils.save_utils`; these helpers serve code written for 0.3.x.
"""

from __future__ import annotations

import json
import logging
import tempfile
import uuid
from pathlib import Path
from typing import Any

__all__ = [
    "CACHE_DIR",
    "find_latest_incomplete_eval_results_path",
    "get_eval_results_path",
    "get_eval_runs_dir",
    "get_gepa_results_path",
    "get_results_path",
    "home_dir",
    "is_valid_eval_results_path",
    "write_temp_file",
]

logger = logging.getLogger(__name__)


def home_dir() -> Path:
    """The user's home directory, or the temporary directory where there is none."""
    try:
        return Path.home()
    except RuntimeError:
        return Path(tempfile.gettempdir())


CACHE_DIR = home_dir() / ".cache" / "verifiers"


def write_temp_file(content: str, suffix: str = ".txt") -> str:
    """Write ``content`` to a new temporary file (kept after closing); return its path."""
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as handle:
        handle.write(content)
    return handle.name


def _outputs_base(env_id: str, env_dir_path: str, output_dir: str | None) -> Path:
    if output_dir is not None:
        return Path(output_dir)
    env_dir = Path(env_dir_path) / env_id.replace("-", "_")
    return env_dir / "outputs" if env_dir.exists() else Path("./outputs")


def _run_group(env_id: str, model: str) -> str:
    return env_id + "--" + model.replace("/", "--")


def get_results_path(
    env_id: str, model: str, base_path: Path = Path("./outputs"), subdir: str = "evals"
) -> Path:
    """A fresh run folder: ``<base_path>/<subdir>/<env_id>--<model>/<8 hex characters>``."""
    return base_path / subdir / _run_group(env_id, model) / uuid.uuid4().hex[:8]


def get_eval_results_path(config: Any) -> Path:
    """A fresh run folder for an ``EvalConfig`` (its ``name`` names the folder when set)."""
    base = _outputs_base(config.env_id, config.env_dir_path, config.output_dir)
    return get_results_path(config.name or config.env_id, config.model, base)


def get_eval_runs_dir(
    env_id: str,
    model: str,
    env_dir_path: str = "./environments",
    output_dir: str | None = None,
    name: str | None = None,
) -> Path:
    """The folder holding every eval run of ``env_id`` with ``model``."""
    base = _outputs_base(env_id, env_dir_path, output_dir)
    return base / "evals" / _run_group(name or env_id, model)


def get_gepa_results_path(
    env_id: str, model: str, env_dir_path: str = "./environments", output_dir: str | None = None
) -> Path:
    """A fresh run folder under ``gepa/`` instead of ``evals/``."""
    base = _outputs_base(env_id, env_dir_path, output_dir)
    return get_results_path(env_id, model, base, subdir="gepa")


def is_valid_eval_results_path(path: Path) -> bool:
    """Whether ``path`` is a folder holding both ``results.jsonl`` and ``metadata.json``."""
    return path.is_dir() and all((path / f).is_file() for f in ("results.jsonl", "metadata.json"))


def _saved_rollouts(run_dir: Path, rollouts_per_example: int) -> int:
    """Rollouts saved in ``results.jsonl``, at most ``rollouts_per_example`` per example
    (unreadable rows and rows without an ``example_id`` are skipped)."""
    per_example: dict[Any, int] = {}
    results = run_dir / "results.jsonl"
    with results.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError:  # JSONDecodeError and UnicodeDecodeError
                logger.warning("skipping unreadable row %d of %s", number, results)
                continue
            if isinstance(row, dict) and "example_id" in row:
                key = row["example_id"]
                try:
                    per_example[key] = min(per_example.get(key, 0) + 1, rollouts_per_example)
                except TypeError:  # an unhashable id
                    continue
    return sum(per_example.values())


def _matches(
    metadata: dict[str, Any],
    env_id: str,
    model: str,
    num_examples: int,
    rollouts_per_example: int,
    shuffle: bool,
    shuffle_seed: int | None,
) -> bool:
    if (metadata.get("env_id"), metadata.get("model")) != (env_id, model):
        return False
    if metadata.get("rollouts_per_example") != rollouts_per_example:
        return False
    if bool(metadata.get("shuffle", False)) is not shuffle:
        return False
    if shuffle and metadata.get("shuffle_seed") != (shuffle_seed or 0):
        return False
    saved = metadata.get("num_examples")
    return isinstance(saved, int) and saved <= num_examples


def find_latest_incomplete_eval_results_path(
    env_id: str,
    model: str,
    num_examples: int,
    rollouts_per_example: int,
    shuffle: bool = False,
    shuffle_seed: int | None = None,
    env_dir_path: str = "./environments",
    output_dir: str | None = None,
    name: str | None = None,
) -> Path | None:
    """The most recently modified run of the same configuration that saved fewer than
    ``num_examples * rollouts_per_example`` rollouts, or ``None``."""
    runs = get_eval_runs_dir(env_id, model, env_dir_path, output_dir, name)
    if not runs.is_dir():
        return None
    candidates = [d for d in runs.iterdir() if is_valid_eval_results_path(d)]
    for run_dir in sorted(candidates, key=lambda d: d.stat().st_mtime, reverse=True):
        try:
            metadata = json.loads((run_dir / "metadata.json").read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(metadata, dict) or not _matches(
            metadata, env_id, model, num_examples, rollouts_per_example, shuffle, shuffle_seed
        ):
            continue
        if _saved_rollouts(run_dir, rollouts_per_example) < num_examples * rollouts_per_example:
            return run_dir
    return None


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
