"""What the hub says about a pushed run: its provenance in words, its rank, its
leaderboard row and the bounded numbers kept from its summary (DESIGN 4.4)."""

from __future__ import annotations

import math
from typing import Any

import orjson

from hub_server import models as m
from verifiers.hub import schemas as s

PASS_K_CAP = 64  # pass@k is reported for k = 1 .. min(rollouts per example, this)


def _count(v: Any, default: int) -> int:
    """A count from the run's metadata (anything else: ``default``)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 else default


def _claimed(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def provenance(row: m.EvalResult) -> str:
    """What the hub knows of a run's results, in words (DESIGN 4.4). ``re-scored`` only when
    a worker recomputed every record's reward and each agreed; ``gold`` only when, besides,
    the worker's own oracle rollouts of the release earned the same rewards."""
    if not row.verified:
        return "unpinned"
    if row.gold and row.rescore_status == "agree":
        return "gold"
    return {
        "agree": "re-scored",
        "mismatch": "re-score mismatch",
        "unscorable": "not re-scorable",
        "pending": "self-reported (re-score pending)",
        "failed": "self-reported (re-score failed)",
    }.get(row.rescore_status or "", "self-reported")


_RANK = {"re-scored": 0, "self-reported": 1, "not re-scorable": 2, "re-score mismatch": 3,
         "unpinned": 4, "gold": 5}  # fmt: skip


def _rank(p: str) -> int:
    return _RANK.get(p, 2)  # self-reported with a pending or failed re-score


def _bounded_summary(summary: dict[str, Any]) -> dict[str, Any]:
    out = dict(summary)
    out["pass_at_k"] = dict(list((summary.get("pass_at_k") or {}).items())[:PASS_K_CAP])
    out["metrics"] = dict(list((summary.get("metrics") or {}).items())[:100])
    out["error_types"] = dict(list((summary.get("error_types") or {}).items())[:50])
    return out


def run_url(owner: str, name: str, run_id: str) -> str:
    return f"/{owner}/{name}/runs/{run_id}/"


def _metrics(summary: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in ("avg_reward", "reward_stderr"):
        v = _finite(summary.get(key))
        if v is not None:
            out["reward" if key == "avg_reward" else "reward_stderr"] = v
    for k, v in list((summary.get("pass_at_k") or {}).items())[:PASS_K_CAP]:
        if (f := _finite(v)) is not None:
            out[f"pass@{k}"] = f
    return out


def _jsonable(obj: Any) -> Any:
    return orjson.loads(orjson.dumps(obj, default=str))


def _leader_row(r: m.EvalResult, pusher: str, owner: str, name: str) -> s.LeaderboardRow:
    metrics = r.metrics or {}
    avg = _finite(metrics.get("reward", metrics.get("avg_reward")))
    ks = [k for k in metrics if k.startswith("pass@")][:PASS_K_CAP]
    return s.LeaderboardRow(
        run_id=r.run_id,
        model=r.model,
        num_examples=r.num_examples,
        rollouts_per_example=r.rollouts_per_example,
        avg_reward=avg,
        reward_stderr=_finite(metrics.get("reward_stderr")),
        pass_at_k={
            k.removeprefix("pass@"): float(metrics[k])
            for k in ks
            if _finite(metrics[k]) is not None
        },
        pinned=bool(r.verified),
        verified=bool(r.verified),
        provenance=provenance(r),
        gold=provenance(r) == "gold",
        hidden=bool(r.hidden),
        rescore=r.rescore_detail,
        submitted_by=pusher,
        created_at=r.created_at,
        url=run_url(owner, name, r.run_id) if r.run_id and r.results_key else None,
    )
