"""``verifiers.v1.utils.platform.build_samples``: episodes as flat rows for run monitors (the
import prime-rl's platform monitor makes), one per episode, nothing of the episode lost."""

from __future__ import annotations

import json

import verifiers.v1 as vf
from verifiers.v1 import graph
from verifiers.v1.utils.platform import build_samples


def _trace(idx: int, *, trainable: bool = True, score: float = 1.0) -> vf.Trace:
    trace = vf.Trace(
        agent=vf.AgentInfo(config=vf.AgentConfig(), name="solver", trainable=trainable),
        task=vf.TraceTask(type="Task", data=vf.TaskData(idx=idx, prompt="q")),
    )
    reply = vf.Response(
        id="r",
        created=0,
        model="m",
        message=vf.AssistantMessage(content="4"),
        finish_reason="stop",
        tokens=vf.TurnTokens(
            prompt_ids=[1, 2, 3], completion_ids=[4, 5], completion_logprobs=[-0.1, -0.2]
        ),
    )
    graph.prepare_turn(trace, [vf.UserMessage(content="2+2?")]).commit(reply)
    trace.record_reward("correct", score)
    trace.record_metric("turns", 1)
    trace.stop("agent_completed")
    return trace


def _episode(*traces: vf.Trace) -> vf.Episode:
    return vf.Episode(task=traces[0].task, traces=list(traces), ok=True)


def test_one_row_per_episode_from_its_first_trainable_trace() -> None:
    judge = _trace(3, trainable=False, score=0.0)
    solver = _trace(3, score=1.0)
    episode = _episode(judge, solver)
    (row,) = build_samples([episode, vf.Episode(task=solver.task)])  # no traces: no row
    assert row["sample_id"] == episode.id and row["episode_id"] == episode.id
    assert row["example_id"] == 3 and row["rollout_number"] == 1
    assert row["reward"] == 1.0 and row["correct"] == 1.0 and row["metrics"] == {"turns": 1.0}
    assert row["completion"][-1] == {"role": "assistant", "content": "4"}
    (branch,) = row["trajectory"]
    assert (branch["num_input_tokens"], branch["num_output_tokens"]) == (3, 2)
    assert row["stop_condition"] == "agent_completed" and row["is_truncated"] is False
    assert row["info"]["native_trace_index"] == 1
    restored = vf.WireEpisode.model_validate(row["info"]["native_wrapper"])
    assert [t.reward for t in restored.traces] == [0.0, 1.0]
    json.dumps(row, allow_nan=False)  # plain JSON


def test_rollout_numbers_count_per_task_across_calls() -> None:
    numbers: dict[object, int] = {}
    first = build_samples([_episode(_trace(0)), _episode(_trace(1))], numbers)
    second = build_samples([_episode(_trace(0))], numbers)
    assert [r["rollout_number"] for r in first + second] == [1, 1, 2]
    assert numbers == {0: 2, 1: 1}
