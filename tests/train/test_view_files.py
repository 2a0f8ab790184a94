"""What ``vf train`` keeps for ``vf view`` (torch-free parts): sample rollouts spread over the
reward range, shortened, and a rollouts log that stops keeping rollouts at its size bound."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verifiers.train.rollout_previews import PREVIEW_CHARS, pick_previews
from verifiers.train.rollout_source import _Group
from verifiers.train.run_files import RolloutLog
from verifiers.types import State


def _state(reward: float | None, text: str = "hi", error: Any = None) -> State:
    return State(
        {
            "prompt": [{"role": "user", "content": "q"}],
            "completion": [{"role": "assistant", "content": text}],
            "reward": reward,
            "example_id": 3,
            "error": error,
        }
    )


def test_previews_spread_over_the_rewards_with_an_errored_one_first() -> None:
    a = _Group(0, 0, 0, 0, [_state(r / 10) for r in range(10)])
    b = _Group(1, 1, 0, 0, [_state(None, error=RuntimeError("boom")), _state(0.55)])
    got = pick_previews([(a, True), (b, False)], 4)
    assert got[0]["error"] == "RuntimeError: boom" and got[0]["used"] is False
    assert [p["reward"] for p in got[1:]] == [0.0, 0.5, 0.9]
    assert pick_previews([(a, True)], 0) == []
    assert [p["reward"] for p in pick_previews([(a, True)], 1)] == [0.9]


def test_previews_are_shortened() -> None:
    long = _Group(0, 0, 0, 0, [_state(1.0, text="x" * 10 * PREVIEW_CHARS)])
    (p,) = pick_previews([(long, True)], 2)
    assert len(p["completion"][0]["content"]) == PREVIEW_CHARS
    assert p["prompt"] == [{"role": "user", "content": "q"}]


def test_the_rollouts_log_keeps_rewards_only_past_its_bound(tmp_path: Path) -> None:
    log = RolloutLog(tmp_path, max_bytes=400)
    preview = {"reward": 1.0, "completion": [{"role": "assistant", "content": "y" * 200}]}
    for step in range(3):
        log.write(step, [0.123456789, 1.0], [preview])
    rows = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert [len(r["rollouts"]) for r in rows] == [1, 1, 0]
    assert rows[2]["rollouts_dropped"] == 1
    assert rows[2]["rewards"] == [0.123457, 1.0]
