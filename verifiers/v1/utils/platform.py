"""Flat sample rows for run monitors and dashboards (``build_samples``).

A trainer's monitor (prime-rl's platform monitor imports :func:`build_samples` from here) or a
results table wants one flat row per rollout, not the nested episode. Each episode becomes one
row: the flat view of its *summary trace* (the first trainable one, else the first), with the
whole episode kept under ``info["native_wrapper"]`` so nothing is lost. Non-finite numbers
become ``None`` (JSON has no NaN); the row is plain JSON data.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, MutableMapping, Sequence
from typing import Any

from pydantic import BaseModel

from verifiers.v1.trace import Episode, Trace

__all__ = ["build_samples", "summary_trace_index", "trace_sample"]


def summary_trace_index(episode: Episode[Any, Any, Any]) -> int:
    """The trace that stands for the episode in a flat row: the first trainable one, else 0."""
    return next((i for i, t in enumerate(episode.traces) if t.agent.trainable), 0)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _dump(items: Sequence[BaseModel]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", exclude_none=True) for item in items]


def trace_sample(
    trace: Trace[Any, Any, Any], rollout_number: int = 1, episode_id: str | None = None
) -> dict[str, Any]:
    """One trace as a flat row: its final branch as ``completion``, every branch (messages and
    token counts) in ``trajectory``, scores, timing, usage and the stop reason. Each reward is
    also a top-level key (its score), unless it would shadow a row field."""
    data = trace.task.data.model_dump(mode="json", exclude_none=True)
    branches = trace.branches
    trajectory = []
    for branch in branches:
        mask = branch.sampled_mask
        trajectory.append(
            {
                "messages": _dump(branch.messages),
                "num_input_tokens": mask.count(False),
                "num_output_tokens": mask.count(True),
            }
        )
    if trajectory and not any(t["num_input_tokens"] or t["num_output_tokens"] for t in trajectory):
        # no token spans recorded (an eval against an API): the provider's counts instead
        trajectory[-1]["num_input_tokens"] = trace.num_input_tokens
        trajectory[-1]["num_output_tokens"] = trace.num_output_tokens
    usage = trace.usage
    error = trace.last_error
    row: dict[str, Any] = {
        "sample_id": trace.id,
        "example_id": data.get("idx"),
        "rollout_number": rollout_number,
        "episode_id": episode_id,
        "agent": trace.agent.name,
        "trainable": trace.agent.trainable,
        "task": data,
        "prompt": [],
        "completion": trajectory[-1]["messages"] if trajectory else [],
        "answer": data.get("answer"),
        "tool_defs": _dump(trace.tools) if trace.tools else None,
        "reward": trace.reward,
        "rewards": {k: (r.score if r is not None else None) for k, r in trace.rewards.items()},
        "metrics": dict(trace.metrics),
        "timing": trace.timing.model_dump(mode="json", exclude_none=True),
        "is_completed": trace.is_completed,
        "is_truncated": trace.is_truncated,
        "stop_condition": trace.stop_condition,
        "error": error.model_dump(mode="json", exclude_none=True) if error else None,
        "trajectory": trajectory,
        "token_usage": usage.model_dump(mode="json", exclude_none=True) if usage else None,
        "info": dict(trace.info) or None,
    }
    for name, reward in trace.rewards.items():
        if reward is not None:
            row.setdefault(name, reward.score)
    result: dict[str, Any] = _finite(row)
    return result


def build_samples(
    episodes: Sequence[Episode[Any, Any, Any]],
    rollout_numbers: MutableMapping[Hashable, int] | None = None,
) -> list[dict[str, Any]]:
    """One flat row per episode (episodes without traces give none). ``rollout_number`` counts
    the episodes of each task (``task.data.idx``) from 1; pass the same ``rollout_numbers``
    dict to every call of a streaming producer so that the count goes on across calls."""
    counts: MutableMapping[Hashable, int] = {} if rollout_numbers is None else rollout_numbers
    rows: list[dict[str, Any]] = []
    for episode in episodes:
        if not episode.traces:
            continue
        index = summary_trace_index(episode)
        trace = episode.traces[index]
        key = trace.task.data.idx
        counts[key] = counts.get(key, 0) + 1
        row = trace_sample(trace, counts[key], episode.id)
        row["sample_id"] = episode.id
        row["info"] = _finite(
            {
                **(row["info"] or {}),
                "native_wrapper": episode.to_record(),
                "native_trace_index": index,
            }
        )
        rows.append(row)
    return rows
