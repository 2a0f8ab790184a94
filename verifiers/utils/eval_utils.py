"""0.3.x's ``vf-eval`` helpers that need no service: eval-config normalisation, resume input
filtering and per-output environment ids.

The rest of 0.3.x's module (its evaluation runner, printing and endpoint-file loading) is
0.3.1's ``vf-eval`` itself: those names raise a ``ConfigError`` pointing to ``vf eval`` and
:mod:`verifiers.evaluation` (:mod:`verifiers.classic.unavailable`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CHAT_TEMPLATE_KWARG_FIELDS",
    "FREEFORM_ABLATION_SWEEP_FIELDS",
    "eval_env_id",
    "filter_inputs",
    "get_log_level",
    "normalize_env_id_alias",
    "normalize_sampling_args",
    "normalize_sampling_config",
    "output_env_id",
]

FREEFORM_ABLATION_SWEEP_FIELDS = {"args", "env_args"}
# sampling keys that 0.3.x moves into extra_body.chat_template_kwargs
CHAT_TEMPLATE_KWARG_FIELDS = ("reasoning_effort", "enable_thinking")


def _table(value: object, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a table.")
    return dict(value)


def normalize_env_id_alias(config: Mapping[str, Any], section: str) -> dict[str, Any]:
    """``id`` renamed to ``env_id``; both at once is a ``ValueError``."""
    out = dict(config)
    if "id" in out:
        if "env_id" in out:
            raise ValueError(f"{section} cannot contain both id and env_id.")
        out["env_id"] = out.pop("id")
    return out


def eval_env_id(config: Mapping[str, Any], section: str) -> str:
    """The section's ``env_id``, else its taskset's ``id``/``taskset_id`` (top-level
    ``taskset`` or ``env_args.config.taskset``)."""
    env_id = config.get("env_id")
    if isinstance(env_id, str) and env_id:
        return env_id
    taskset = config.get("taskset")
    if not isinstance(taskset, Mapping):
        env_args = config.get("env_args")
        inner = env_args.get("config") if isinstance(env_args, Mapping) else None
        taskset = inner.get("taskset") if isinstance(inner, Mapping) else None
    if isinstance(taskset, Mapping):
        found = taskset.get("id") or taskset.get("taskset_id")
        if isinstance(found, str) and found:
            return found
    raise ValueError(f"{section} must contain env_id or taskset.id.")


def normalize_sampling_args(sampling_args: Mapping[str, Any], section: str) -> dict[str, Any]:
    """Copy ``reasoning_effort``/``enable_thinking`` into
    ``extra_body.chat_template_kwargs`` (which they override), keeping them at the top too."""
    out = dict(sampling_args)
    moved = {key: out[key] for key in CHAT_TEMPLATE_KWARG_FIELDS if key in out}
    if not moved:
        return out
    extra_body = _table(out.get("extra_body", {}), f"{section}.extra_body")
    kwargs = _table(
        extra_body.get("chat_template_kwargs", {}), f"{section}.extra_body.chat_template_kwargs"
    )
    extra_body["chat_template_kwargs"] = {**kwargs, **moved}
    out["extra_body"] = extra_body
    return out


def _merge_sampling(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``, merging ``extra_body`` and its ``chat_template_kwargs``
    one level deep when both sides have them as tables."""
    merged = {**base, **override}
    low, high = base.get("extra_body"), override.get("extra_body")
    if isinstance(low, Mapping) and isinstance(high, Mapping):
        body = {**low, **high}
        low_kw, high_kw = low.get("chat_template_kwargs"), high.get("chat_template_kwargs")
        if isinstance(low_kw, Mapping) and isinstance(high_kw, Mapping):
            body["chat_template_kwargs"] = {**low_kw, **high_kw}
        merged["extra_body"] = body
    return merged


def normalize_sampling_config(
    config: Mapping[str, Any], section: str, *, merge_sampling_with_existing: bool = False
) -> dict[str, Any]:
    """Normalise ``sampling_args`` and fold a ``sampling`` table into it (a section with both
    is a ``ValueError`` unless ``merge_sampling_with_existing``)."""
    out = dict(config)
    if "sampling_args" in out:
        raw = out["sampling_args"]
        if not isinstance(raw, Mapping):
            raise ValueError(f"{section}.sampling_args must be a table.")
        out["sampling_args"] = normalize_sampling_args(raw, f"{section}.sampling_args")
    if "sampling" not in out:
        return out
    existing: Mapping[str, Any] = {}
    if "sampling_args" in out:
        if not merge_sampling_with_existing:
            raise ValueError(f"{section} cannot contain both sampling and sampling_args.")
        existing = out["sampling_args"]
    sampling = out.pop("sampling")
    if not isinstance(sampling, Mapping):
        raise ValueError(f"{section}.sampling must be a table.")
    out["sampling_args"] = _merge_sampling(
        existing, normalize_sampling_args(sampling, f"{section}.sampling")
    )
    return out


def filter_inputs(
    inputs: list[Mapping[str, Any]], outputs: list[Mapping[str, Any]], rollouts_per_example: int
) -> list[Mapping[str, Any]]:
    """The inputs still to run when resuming: per example (in first-seen order), its first
    ``rollouts_per_example`` minus already-saved-outputs inputs."""
    by_example: dict[Any, list[Mapping[str, Any]]] = {}
    for row in inputs:
        by_example.setdefault(row["example_id"], []).append(row)
    done: dict[Any, int] = {}
    for row in outputs:
        done[row["example_id"]] = done.get(row["example_id"], 0) + 1
    left: list[Mapping[str, Any]] = []
    for example_id, rows in by_example.items():
        remaining = rollouts_per_example - done.get(example_id, 0)
        if remaining > 0:
            left += rows[:remaining]
    return left


def output_env_id(output: Mapping[str, Any]) -> str:
    """The environment an output came from: ``info["env_id"]`` (a list/tuple joined with
    ``/``; ``info`` may be a JSON string), else ``output["env_id"]``, else ``"default"``."""
    info = output.get("info") or {}
    if isinstance(info, str):
        info = json.loads(info)
    value = info.get("env_id") if isinstance(info, Mapping) else None
    if isinstance(value, list | tuple):
        return "/".join(map(str, value))
    return str(value) if value is not None else str(output.get("env_id", "default"))


def get_log_level(verbose: bool) -> str:
    """``DEBUG`` when verbose, else ``$VF_LOG_LEVEL`` (default ``INFO``)."""
    return "DEBUG" if verbose else os.getenv("VF_LOG_LEVEL", "INFO")


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
