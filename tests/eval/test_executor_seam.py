"""``evaluate_async(executor=...)``: the run's jobs go to the executor, the records it hands
back land in the run directory once each, and its summary is saved in the metadata."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from verifiers.eval_plan import RunPlan


def exact(completion: vf.Messages, answer: str) -> float:
    return float(completion[-1]["content"] == answer)


def env() -> vf.SingleTurnEnv:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(4)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))


class InProcessExecutor:
    """Runs each job as one group in this process, as a remote worker would."""

    backend = "test"

    def __init__(self) -> None:
        self.jobs: list[tuple[Any, list[int]]] = []

    async def run(
        self,
        plan: RunPlan,
        model: str,
        max_concurrent: int,
        add_record: Callable[[dict[str, Any]], None],
        state_columns: Sequence[str] = (),
    ) -> None:
        from verifiers.distributed.worker import RolloutWorker

        worker = RolloutWorker.__new__(RolloutWorker)
        worker.env, worker.client, worker.node_id, worker.groups = env(), vf.OracleClient(), "n", 0
        for row, indices in plan.jobs:
            self.jobs.append((row["example_id"], list(indices)))
            result = await worker.run_job(row, indices, model, plan.settings.sampling_args)
            for record in result["records"]:
                add_record(record)

    def summary(self) -> dict[str, Any]:
        return {"backend": self.backend, "jobs": len(self.jobs)}


async def test_records_from_an_executor_land_once_and_resume_sends_only_what_is_missing(
    tmp_path: Path,
) -> None:
    first = InProcessExecutor()
    result = await vf.evaluate_async(
        env(), num_examples=4, rollouts_per_example=2, output_dir=tmp_path, executor=first
    )
    assert len(first.jobs) == 4 and all(idx == [0, 1] for _, idx in first.jobs)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 8 and result.avg_reward == 1.0
    assert json.loads((tmp_path / "metadata.json").read_text())["executor"] == {
        "backend": "test",
        "jobs": 4,
    }
    # drop one rollout: the resumed run sends only that one
    (tmp_path / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    again = InProcessExecutor()
    await vf.evaluate_async(
        env(),
        num_examples=4,
        rollouts_per_example=2,
        output_dir=tmp_path,
        resume=True,
        executor=again,
    )
    assert len(again.jobs) == 1 and len(again.jobs[0][1]) == 1
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 8


async def test_keep_states_with_an_executor_is_refused() -> None:
    with pytest.raises(vf.ConfigError, match="keep_states"):
        await vf.evaluate_async(env(), keep_states=True, executor=InProcessExecutor())


def test_lanes_keep_rollouts_in_flight_under_the_global_limit() -> None:
    from verifiers.distributed.executor import _lanes

    jobs: list[Any] = [({}, [0, 1, 2, 3])] * 10
    assert _lanes(jobs, 8) == 2  # 2 groups of 4
    assert _lanes(jobs, 3) == 1  # a group never splits: one at a time
    assert _lanes(jobs, -1) == 10
    assert _lanes(jobs[:1], 100) == 1
