"""What a hub worker runs INSIDE a sandbox (this file is copied into the sandbox and run by its
python; it imports only ``verifiers`` and the environment under test, never ``hub_server``).

    python3 sandbox_tasks.py validate ENV_ID OUT_JSON
    python3 sandbox_tasks.py rescore ENV_ID RECORDS_JSONL [ORACLE] OUT_JSONL

``validate`` writes :func:`verifiers.testing.check_environment`'s report (what
``vf env validate --json`` prints). ``rescore`` loads the environment, replays EVERY pushed
record with its recorded model answers (the environment's turns run again, so the state fields
and sandbox artefacts its rubric reads are recomputed, not read from the record), scores each
example's rollouts as the evaluation does, and writes one line per record: its position, the
recomputed reward and whether it could not be computed here (with the reason); with ORACLE ``1``, also the rewards of the worker's own oracle
rollouts of the run's examples. The comparison with the pushed rewards happens outside, in the worker: this
process runs the environment's code and is not trusted with the verdict.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


def validate(env_id: str, out: str) -> int:
    from verifiers.testing.check import check_environment

    report = check_environment(env_id, num_examples=3, timeout_s=120.0)
    with open(out, "w") as f:
        json.dump(report.as_dict(), f, default=str)
    return 0


MAX_ORACLE_EXAMPLES = 1000


def rescore(env_id: str, records: str, out: str, oracle: str = "0") -> int:
    """Replay EVERY record (errored ones too) with its recorded model answers
    (:func:`verifiers.replay.replay_records`: the environment's turns, state and sandbox
    artefacts are recomputed, never taken from the record) and score it as the evaluation
    would have; one line per record: ``{"i", "reward", "failed", "reason"}`` where ``failed``
    says the reward could not be computed here (the replay was not exact, or a reward function
    raised). With ``oracle`` set, the built-in oracle also answers each example the run holds,
    and a line ``{"oracle": example_id, "rewards": [...]}`` per example says what it earned."""
    import verifiers as vf
    from verifiers.replay import replay_records

    env = vf.load_environment(env_id)
    positions: list[int] = []
    parsed: list[dict[str, Any]] = []
    unbuilt: list[int] = []
    with open(records, "rb") as src:
        for i, line in enumerate(src):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict) or "example_id" not in rec:
                unbuilt.append(i)  # not a rollout's record: not computable
                continue
            positions.append(i)
            parsed.append(rec)
    outcomes = asyncio.run(replay_records(env, parsed, model="rescore", max_concurrent=8))
    with open(out, "w") as dst:
        for i in unbuilt:
            dst.write(json.dumps({"i": i, "reward": None, "failed": True}) + "\n")
        for i, outcome in zip(positions, outcomes, strict=True):
            state = outcome.state
            if state is None:
                item = {"i": i, "reward": None, "failed": True, "reason": outcome.reason}
            else:
                raised = bool(state.get("reward_errors"))
                item = {"i": i, "reward": state.get("reward"), "failed": raised}
                if raised:  # which reward function raised, and what: for the job's log
                    item["reason"] = str(state.get("reward_errors"))[:1000]
            dst.write(json.dumps(item) + "\n")
        dst.write(json.dumps({"pass_threshold": getattr(env, "pass_threshold", 0.5)}) + "\n")
        if oracle == "1":
            examples = list(dict.fromkeys(str(r.get("example_id")) for r in parsed))
            for example_id, rewards in _oracle_rewards(env, examples).items():
                dst.write(json.dumps({"oracle": example_id, "rewards": rewards}) + "\n")
    return 0


def _oracle_rewards(env: Any, example_ids: list[str]) -> dict[str, list[Any]]:
    """The worker's own oracle rollouts (one per example) of the examples a run holds, by
    example id; nothing when the ids are not row numbers of the eval dataset."""

    try:
        wanted = sorted({int(e) for e in example_ids})
    except ValueError:
        return {}
    if not wanted or wanted[0] < 0 or wanted[-1] >= MAX_ORACLE_EXAMPLES:
        return {}
    try:
        result = _oracle_run(env, wanted[-1] + 1)
    except Exception as e:  # no gold answers, no oracle_response: no gold, the re-score stands
        print(f"the oracle could not run: {type(e).__name__}: {e}", file=sys.stderr)
        return {}
    out: dict[str, list[Any]] = {}
    for rec in result.records:
        out.setdefault(str(rec.get("example_id")), []).append(
            None if rec.get("error") else rec.get("reward")
        )
    return {str(e): out.get(str(e), []) for e in wanted}


def _oracle_run(env: Any, n: int) -> Any:
    import verifiers as vf

    return vf.evaluate(
        env, None, "oracle", num_examples=n, rollouts_per_example=1,
        max_concurrent=8,
    )  # fmt: skip


def main(argv: list[str]) -> int:
    if argv[1] == "validate":
        return validate(argv[2], argv[3])
    if argv[1] == "rescore":
        if len(argv) > 5:  # ... RECORDS ORACLE OUT
            return rescore(argv[2], argv[3], argv[5], argv[4])
        return rescore(argv[2], argv[3], argv[4])
    print(f"unknown task {argv[1]!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
