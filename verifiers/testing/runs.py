"""Synthetic run directories in vf-eval's format, for the viewer's tests and benchmarks."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

__all__ = ["write_run"]


def write_run(
    run_dir: Path,
    n: int,
    *,
    rollouts_per_example: int = 1,
    meta: dict[str, Any] | None = None,
    error_every: int = 0,
) -> Path:
    """A run directory in vf-eval's format: ``n`` rollouts, rewards i/n, every
    ``error_every``-th rollout errored (tests and bench/view_bench.py)."""
    from verifiers.results import summarize

    run_dir.mkdir(parents=True, exist_ok=True)
    light: list[dict[str, Any]] = []  # what the summary needs, kept small for huge runs
    with (run_dir / "results.jsonl").open("wb") as f:
        for i in range(n):
            errored = bool(error_every) and i % error_every == 0
            rec = {
                "example_id": i // rollouts_per_example,
                "rollout_index": i % rollouts_per_example,
                "task": "default",
                "prompt": [
                    {"role": "system", "content": "Answer with a number."},
                    {"role": "user", "content": f"What is {i} + {i}? (question {i})"},
                ],
                "completion": [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"call_{i}",
                                "type": "function",
                                "function": {"name": "add", "arguments": {"a": i, "b": i}},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": f"call_{i}", "content": str(2 * i)},
                    {"role": "assistant", "content": f"The answer is {2 * i}."},
                ],
                "answer": str(2 * i),
                "info": {},
                "reward": None if errored else i / max(n - 1, 1),
                "metrics": {} if errored else {"correct": float(i % 2), "format": 1.0},
                "reward_errors": [],
                "error": (
                    {"type": "ModelError", "message": f"boom {i}", "traceback": "Traceback: boom"}
                    if errored
                    else None
                ),
                "stop_condition": "error" if errored else "no_tools",
                "is_completed": not errored,
                "is_truncated": False,
                "num_turns": 2,
                "usage": {"prompt_tokens": 20, "completion_tokens": 7},
                "timing": {"generation_ms": 12.5, "scoring_ms": 0.5},
            }
            f.write(orjson.dumps(rec) + b"\n")
            light.append({k: rec[k] for k in ("example_id", "reward", "error", "metrics", "usage")})
    metadata = {
        "run_id": hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:32],
        "env_id": "toy-env",
        "model": "toy-model",
        "num_examples": n // rollouts_per_example,
        "rollouts_per_example": rollouts_per_example,
        "status": "completed",
        "started_at": "2026-11-24T10:00:00+00:00",
        "wall_time_s": 1.5,
        "summary": summarize(light, rollouts_per_example),
        **(meta or {}),
    }
    (run_dir / "metadata.json").write_bytes(orjson.dumps(metadata))
    return run_dir
