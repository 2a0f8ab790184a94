"""What a hub worker runs INSIDE a sandbox (this file is copied into the sandbox and run by its
python; it imports only ``verifiers`` and the environment under test, never ``hub_server``).

    python3 sandbox_tasks.py validate ENV_ID OUT_JSON
    python3 sandbox_tasks.py rescore ENV_ID RECORDS_JSONL [ORACLE] OUT_JSONL

``validate`` writes :func:`verifiers.testing.check_environment`'s report (what
``vf env validate --json`` prints). ``rescore`` loads the environment, rebuilds EVERY pushed
record's state (prompt, completion, answer, task, info, error, saved state columns), scores each
example's rollouts as the evaluation does (an errored rollout is scored or left unscored by the
same rule), and writes one line per record: its position, the recomputed reward and whether it
could not be computed here; with ORACLE ``1``, also the rewards of the worker's own oracle
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


_RECORD_KEYS = frozenset({
    "example_id", "rollout_index", "task", "prompt", "completion", "answer", "info", "reward",
    "metrics", "reward_errors", "error", "stop_condition", "is_completed", "is_truncated",
    "num_turns", "usage", "timing",
})  # fmt: skip
MAX_ORACLE_EXAMPLES = 1000


def _state(rec: dict[str, Any], env: Any) -> Any:
    """The finished rollout a record describes, as the rubric saw it at evaluation time: its
    error too (an errored rollout is scored, or left unscored, as the evaluation did), and any
    other saved column (``--state-columns``) readable as state again."""
    import time

    from verifiers.messages import as_message
    from verifiers.types import State

    prompt, completion = rec["prompt"], rec["completion"]
    state = State(
        prompt=[as_message(m) for m in prompt] if isinstance(prompt, list) else prompt,
        completion=[as_message(m) for m in completion]
        if isinstance(completion, list)
        else (completion if completion is not None else []),
        answer=rec.get("answer", ""),
        task=rec.get("task") or "default",
        info=rec.get("info") or {},
        example_id=rec["example_id"],
        rollout_index=rec.get("rollout_index", 0),
        trajectory=[],
        responses=[],
        turn=int(rec.get("num_turns") or 0),
        timing={"start": time.time(), "generation_ms": 0.0, "scoring_ms": 0.0},
        reward=None,
        metrics={},
        reward_errors=[],
        error=rec.get("error") or None,
        is_completed=True,
        stop_condition=rec.get("stop_condition"),
        is_truncated=bool(rec.get("is_truncated")),
        model="rescore",
        sampling_args={},
        client=None,
        oai_tools=getattr(env, "oai_tools", None),
    )
    for key, value in rec.items():
        if key not in _RECORD_KEYS:
            state[key] = value
    return state


def rescore(env_id: str, records: str, out: str, oracle: str = "0") -> int:
    """Score EVERY record (errored ones too) as the evaluation would have; one line per record:
    ``{"i", "reward", "failed"}`` where ``failed`` says the reward could not be computed here
    (the record lacks what the rubric reads, or a reward function raised). With ``oracle``
    set, the built-in oracle also answers each example the run holds, and a line
    ``{"oracle": example_id, "rewards": [...]}`` per example says what it earned."""
    import verifiers as vf

    env = vf.load_environment(env_id)
    groups: dict[str, list[tuple[int, Any]]] = {}
    unbuilt: list[int] = []
    clean: set[int] = set()
    with open(records, "rb") as src:
        for i, line in enumerate(src):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            try:
                state = _state(rec, env)
            except Exception:  # a record without the fields a rollout has: not computable
                unbuilt.append(i)
                continue
            if state.get("error") is None:
                clean.add(i)
            groups.setdefault(str(rec.get("example_id")), []).append((i, state))

    async def score() -> None:
        for members in groups.values():
            states = [s for _, s in members]
            await env._score(states, group=True)

    asyncio.run(score())
    with open(out, "w") as dst:
        for i in unbuilt:
            dst.write(json.dumps({"i": i, "reward": None, "failed": True}) + "\n")
        for members in groups.values():
            for i, s in members:
                reward = s.get("reward")
                # a reward function raised, or scoring timed out here (the record had no error)
                failed = bool(s.get("reward_errors")) or (i in clean and s.get("error") is not None)
                dst.write(json.dumps({"i": i, "reward": reward, "failed": failed}) + "\n")
        dst.write(json.dumps({"pass_threshold": getattr(env, "pass_threshold", 0.5)}) + "\n")
        if oracle == "1":
            for example_id, rewards in _oracle_rewards(env, list(groups)).items():
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
