"""Shapes of 0.3.x code found in community environments (run by hand against 0.3.1 and here,
see docs/compat.md): errored rollouts the model caused are scored, datasets assigned as
attributes, rubric weights and functions edited in place."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.testing import ScriptedClient


def rows(n: int = 2) -> Dataset:
    return Dataset.from_list([{"question": f"q{i}", "answer": f"a{i}"} for i in range(n)])


def says_ok(completion: Any) -> float:
    return 1.0 if completion and "ok" in str(completion[-1].get("content")) else 0.0


def half(completion: Any) -> float:
    return 0.5


async def run(env: vf.Environment, client: vf.Client) -> vf.EvalResult:
    return await vf.evaluate_async(
        env, client, "m", num_examples=-1, rollouts_per_example=1, max_concurrent=1
    )


async def test_an_empty_reply_is_scored_as_0_3_scores_it_and_keeps_its_error() -> None:
    env = vf.SingleTurnEnv(dataset=rows(3), rubric=vf.Rubric(funcs=[says_ok]))
    client = ScriptedClient(
        replies=["ok", vf.EmptyModelResponseError("no content"), vf.EndpointError("down", 503)]
    )
    recs = (await run(env, client)).records
    assert recs[0]["reward"] == 1.0 and recs[0]["error"] is None
    # the model's own empty reply: a true 0.0, with the metric, as in 0.3.1
    assert recs[1]["error"]["type"] == "EmptyModelResponseError"
    assert recs[1]["reward"] == 0.0 and recs[1]["metrics"]["says_ok"] == 0.0
    # the endpoint failing is not the model's answer: unscored
    assert recs[2]["error"]["type"] == "EndpointError" and recs[2]["reward"] is None


def test_eval_dataset_assigned_before_init_is_the_environments() -> None:
    class MyEnv(vf.ToolEnv):
        def __init__(self, **kwargs: Any) -> None:
            self.eval_dataset = rows(1)
            super().__init__(tools=[], eval_dataset=self.eval_dataset, max_turns=2, **kwargs)

    assert len(MyEnv(rubric=vf.Rubric()).get_eval_dataset()) == 1


async def test_a_dataset_assigned_after_building_replaces_the_rows() -> None:
    env = vf.SingleTurnEnv(dataset=rows(2), rubric=vf.Rubric(funcs=[says_ok]))
    assert len(env.get_rows("train")) == 2
    env.dataset = rows(5)
    env.eval_dataset = rows(1)
    assert len(env.get_rows("train")) == 5 and len(env.get_eval_dataset()) == 1
    assert env.dataset is not None and env.dataset[0]["prompt"][-1]["content"] == "q0"


async def test_rubric_weights_and_functions_edit_in_place() -> None:
    rubric = vf.Rubric(funcs=[says_ok, half])
    rubric.weights[1] = 2.0  # 0.3.x: a plain list
    assert list(rubric.weights) == [1.0, 2.0]
    rubric.funcs.append(half)
    assert len(rubric.funcs) == 3 and list(rubric.weights) == [1.0, 2.0, 1.0]
    del rubric.funcs[2]
    # earlier 0.x's list by position, as mastermind's weight overrides write it
    rubric.reward_weights[0] = 3.0  # type: ignore[index]  # untyped 0.x code does this
    rubric.reward_weights["half"] = 0.0
    assert rubric.reward_weights == {"says_ok": 3.0, "half": 0.0}
    env = vf.SingleTurnEnv(dataset=rows(1), rubric=rubric)
    recs = (await run(env, ScriptedClient(replies=["ok"]))).records
    assert recs[0]["reward"] == 3.0 and recs[0]["metrics"]["half"] == 0.5
    with pytest.raises(vf.ConfigError, match="add_reward_func"):
        rubric.weights.append(1.0)
    with pytest.raises(vf.ConfigError, match="no reward function 'nope'"):
        rubric.reward_weights["nope"] = 1.0


async def test_a_rubric_subclass_assigns_its_weights(caplog: pytest.LogCaptureFixture) -> None:
    class R(vf.Rubric):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(funcs=[says_ok, half], **kwargs)
            self.weights = [1.0, 0.0]

    assert list(R().weights) == [1.0, 0.0]
    rubric = vf.Rubric(funcs=[says_ok, half])
    with caplog.at_level(logging.WARNING):
        rubric.weights = [2.0]  # zip() pairing, as 0.3.x scores: `half` becomes a metric
    assert list(rubric.weights) == [2.0, 0.0]
    assert "1 weights for 2 reward functions" in caplog.text
    rubric.funcs = [half]
    assert [f.__name__ for f in rubric.funcs] == ["half"] and list(rubric.weights) == [1.0]


async def test_reward_functions_get_the_rows_other_columns_by_name_as_0_3_passes_them() -> None:
    # a judge rubric reading the question and a metadata column by name (0.3.1 passes every
    # column of the row that is not prompt/answer/info/example_id; here they were missing, so
    # the reward was lost)
    seen: list[dict[str, Any]] = []

    class GradeRubric(vf.Rubric):
        def __init__(self) -> None:
            super().__init__()
            self.add_reward_func(self.graded)
            self.add_metric(self.everything)

        async def graded(self, question: str, topic: str, completion: Any, answer: str) -> float:
            return float(question == "q0" and topic == "geo" and says_ok(completion) == 1.0)

        def everything(self, completion: Any, **kwargs: Any) -> float:
            seen.append(kwargs)
            return 0.0

    ds = Dataset.from_list([{"question": "q0", "answer": "a0", "topic": "geo"}])
    env = vf.SingleTurnEnv(eval_dataset=ds, rubric=GradeRubric())
    recs = (await run(env, ScriptedClient(replies=["ok"]))).records
    assert recs[0]["reward"] == 1.0 and recs[0]["metrics"]["graded"] == 1.0
    # **kwargs gets the row's columns too, below the named arguments; the state keeps the row
    assert seen[0]["question"] == "q0" and seen[0]["topic"] == "geo"
    assert seen[0]["answer"] == "a0" and seen[0]["state"]["input"]["topic"] == "geo"


async def test_a_column_no_row_has_is_still_a_clear_scoring_error() -> None:
    def needs(completion: Any, difficulty: str) -> float:
        return 1.0

    env = vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric(funcs=[needs]))
    rec = (await run(env, ScriptedClient(replies=["ok"]))).records[0]
    assert rec["reward"] is None
    assert "difficulty" in rec["reward_errors"][0]["message"]
    assert "column of the dataset row" in rec["reward_errors"][0]["message"]


def test_evaluate_with_a_client_config_runs_as_0_3_does() -> None:
    # 0.3.1's evaluate/evaluate_sync/generate_sync take a vf.ClientConfig (and refuse a bare
    # AsyncOpenAI); here they refused the config
    from verifiers.testing.server import OpenAITestServer

    env = vf.SingleTurnEnv(eval_dataset=rows(3), rubric=vf.Rubric(funcs=[says_ok]))
    with OpenAITestServer(responder=lambda request: "ok") as server:
        config = vf.ClientConfig(api_base_url=server.base_url, api_key_var="VF_NO_SUCH_KEY")
        out = env.evaluate_sync(config, "m", num_examples=2)
        assert [o["reward"] for o in out["outputs"]] == [1.0, 1.0]
        assert out["metadata"]["num_examples"] == 2
        again = env.generate_sync(env._get_eval_inputs(1, 2), config, "m")
        assert [o["reward"] for o in again["outputs"]] == [1.0, 1.0]
        assert len(server.requests) == 4


async def test_a_classic_client_made_from_a_config_closes_its_connections() -> None:
    openai = pytest.importorskip("openai")
    config = vf.ClientConfig(api_base_url="http://127.0.0.1:9/v1")
    for cls in (vf.OpenAIChatCompletionsClient, vf.OpenAICompletionsClient):
        made = cls(config)
        await made.close()
        assert made.client.is_closed()
    # a caller's own openai client stays open (it may be passed again)
    own = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    await vf.OpenAIChatCompletionsClient(own).close()
    assert not own.is_closed()
    await own.close()


class _OwnGroupScoring(vf.Rubric):
    """Scores in an overridden score_group (0.3.x's evaluation calls it for every group)."""

    async def score_group(self, states: list[Any]) -> None:
        for state in states:
            state["reward"], state["metrics"] = 0.75, {"own": 0.75}


class _OwnRolloutScoring(vf.Rubric):
    """Overrides only score_rollout, which 0.3.x's evaluation never calls: its reward
    functions score the group."""

    async def score_rollout(self, state: Any) -> None:
        state["reward"], state["metrics"] = 0.25, {"own": 0.25}


@pytest.mark.parametrize("rollouts", [1, 2])
async def test_a_rubric_with_its_own_scoring_is_called_as_0_3_calls_it(rollouts: int) -> None:
    for rubric, reward in (
        (_OwnGroupScoring(funcs=[half]), 0.75),
        (_OwnRolloutScoring(funcs=[half]), 0.5),
    ):
        env = vf.SingleTurnEnv(dataset=rows(2), rubric=rubric)
        result = await vf.evaluate_async(
            env,
            ScriptedClient(replies=["ok"] * 4),
            "m",
            num_examples=-1,
            rollouts_per_example=rollouts,
            max_concurrent=1,
        )
        assert [r["reward"] for r in result.records] == [reward] * 2 * rollouts
