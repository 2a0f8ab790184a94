"""The classic call shapes, end to end with the official ``openai`` client against the project's
OpenAI-compatible test server (thread mode)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from openai import AsyncOpenAI

import verifiers as vf
from verifiers.testing.server import OpenAITestServer


def correct(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    return 1.0 if parser.parse_answer(completion) == answer else 0.0


def tagged(request: dict[str, Any]) -> str:
    return "<think>\nadd\n</think>\n<answer>\n4\n</answer>"


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(responder=tagged) as srv:
        yield srv


def xml_env() -> vf.SingleTurnEnv:
    parser = vf.XMLParser(["think", "answer"], answer_field="answer")
    rubric = vf.Rubric(
        funcs=[correct, parser.get_format_reward_func()], weights=[1.0, 0.2], parser=parser
    )
    rows = [{"question": "2+2?", "answer": "4"}, {"question": "1+3?", "answer": "5"}]
    return vf.SingleTurnEnv(dataset=rows, system_prompt="Use tags.", parser=parser, rubric=rubric)


def test_one_async_openai_client_serves_successive_blocking_calls(
    server: OpenAITestServer,
) -> None:
    # the client's connection pool belongs to the loop that opened it: each blocking call
    # must not strand it on a closed loop
    env = xml_env()
    client = AsyncOpenAI(base_url=server.base_url, api_key="x")
    first = env.evaluate_sync(client=client, model="m", num_examples=2, rollouts_per_example=2)
    second = vf.evaluate(env, client, "m", num_examples=2, rollouts_per_example=1)
    third = env.evaluate_sync(client=client, model="m", num_examples=1)
    for result in (first, second, third):
        assert result.summary["num_errors"] == 0, [r["error"] for r in result.records]
    assert [r["reward"] for r in first.records] == [1.2, 1.2, 0.2, 0.2]
    assert [r["reward"] for r in second.records] == [1.2, 0.2]


async def test_results_read_like_classic_generate_outputs(server: OpenAITestServer) -> None:
    env = xml_env()
    client = AsyncOpenAI(base_url=server.base_url, api_key="x")
    results = await env.evaluate(client=client, model="m", num_examples=2, rollouts_per_example=2)
    assert "outputs" in results and results.get("nothing") is None
    outputs, metadata = results["outputs"], results["metadata"]
    assert len(outputs) == 4
    assert {"example_id", "prompt", "completion", "reward", "metrics", "is_completed"} <= set(
        outputs[0]
    )
    assert metadata["avg_reward"] == pytest.approx(0.7)
    assert metadata["avg_metrics"]["correct"] == pytest.approx(0.5)
    assert metadata["pass_at_k"] == {"1": 0.5, "2": 0.5}
    assert metadata["avg_error"] == 0.0
    assert metadata["base_url"] == server.base_url.rstrip("/") and metadata["time"] >= 0
    assert metadata["rollouts_per_example"] == 2 and metadata["model"] == "m"


async def test_a_sub_millisecond_run_reports_a_time_above_zero(
    server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``metadata["time"]`` of a run shorter than a millisecond (a mock client, as upstream
    0.3.1's own test uses) is still above 0: it was rounded to 0.0 at 3 decimals."""
    import itertools
    import time

    ticks = itertools.count()
    monkeypatch.setattr(time, "perf_counter", lambda: 100.0 + next(ticks) * 1e-6)
    env = xml_env()
    client = AsyncOpenAI(base_url=server.base_url, api_key="x")
    results = await env.generate(inputs=env.get_dataset(n=1), client=client, model="m")
    assert 0.0 < results["metadata"]["time"] < 0.001
