"""The rollout driver (``verifiers.v1.rollout.Rollout``) behind ``Agent.run`` and
``Agent.interaction``: stage timeouts, segments, failures; the ``rlm`` harness's config and ACP
result handling."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import verifiers.v1 as vf
from verifiers.v1.configs.agent import AgentTimeoutConfig
from verifiers.v1.decorators import invoke_all
from verifiers.v1.graph import continue_branch
from verifiers.v1.harnesses.rlm.harness import (
    RLM_RUNTIME_METADATA_KEY,
    RLM_SESSION_METADATA_KEY,
    CompactionConfig,
    RLMHarness,
    RLMHarnessConfig,
)
from verifiers.v1.rollout import Rollout, RolloutTimeouts
from verifiers.v1.types import content_text


class EchoHarness(vf.Harness[vf.NullHarnessConfig]):
    """Answers each user message with its text (a sampled reply, no model call); then sleeps
    ``linger`` seconds inside the segment."""

    def __init__(self, linger: float = 0.0, fail: bool = False) -> None:
        super().__init__(vf.NullHarnessConfig())
        self.linger, self.fail = linger, fail

    async def run(self, task: vf.Task[Any, Any, Any], trace: vf.Trace, agent: Any) -> bool:
        if self.fail:
            raise vf.HarnessError("the program broke")
        said = content_text(trace.messages[-1].content)
        trace.append(vf.AssistantMessage(content=said), sampled=True)
        stops = task.hooks("stop")
        hits = await invoke_all(stops, {"task": task.data, "trace": trace, "state": trace.state})
        for fn, hit in zip(stops, hits, strict=True):
            if hit:
                trace.stop(fn.__name__)
                return True
        await asyncio.sleep(self.linger)
        return False


class Data(vf.TaskData):
    answer: str = "hi"


class EchoTask(vf.Task[Data]):
    @vf.reward
    async def echoed(self, trace: vf.Trace) -> float:
        return float(trace.last_reply == self.data.answer)


class OneTurnTask(EchoTask):
    @vf.stop
    async def one_turn(self, trace: vf.Trace) -> bool:
        return trace.num_turns >= 1


class BrokenSetupTask(EchoTask):
    async def setup(self, trace: vf.Trace) -> None:
        raise RuntimeError("no sandbox today")


def agent(harness: vf.Harness[Any], **config: Any) -> vf.Agent:
    return vf.Agent("http://127.0.0.1:9", "toy", vf.AgentConfig(**config), harness=harness)


async def test_run_is_one_segment_then_finalize_and_scoring() -> None:
    trace = await agent(EchoHarness()).run(EchoTask(Data(prompt="hi")))
    assert trace.ok and trace.is_completed and trace.stop_condition == "agent_completed"
    assert [m.role for m in trace.messages] == ["user", "assistant"]
    assert trace.reward == 1.0 and trace.timing.scoring.end >= trace.timing.scoring.start > 0


async def test_an_expired_agent_budget_is_a_timeout_stop_and_the_partial_trace_is_scored() -> None:
    seat = agent(EchoHarness(linger=30.0), timeout=AgentTimeoutConfig(rollout=0.2))
    trace = await asyncio.wait_for(seat.run(EchoTask(Data(prompt="hi"))), 10)
    assert trace.stop_condition == "agent_timeout" and trace.is_timeout
    assert trace.ok and trace.num_turns == 1 and trace.reward == 1.0 and not trace.errors


async def test_a_harness_failure_is_recorded_and_skips_scoring() -> None:
    trace = await agent(EchoHarness(fail=True)).run(EchoTask(Data(prompt="hi")))
    assert not trace.ok and trace.is_completed and trace.rewards == {}
    assert trace.errors[0].type == "HarnessError" and "the program broke" in trace.errors[0].message


async def test_a_promptless_task_outside_an_interaction_says_what_to_do() -> None:
    trace = await agent(EchoHarness()).run(EchoTask(Data()))
    assert not trace.ok and "agent.interaction()" in trace.errors[0].message


async def test_interaction_turns_return_segments_and_closing_scores() -> None:
    seat = agent(EchoHarness())
    async with seat.interaction(EchoTask(Data(system_prompt="Repeat."))) as talk:
        with pytest.raises(ValueError, match="needs the user's message"):
            await talk.turn()
        first = await talk.turn("hello")
        assert not first.terminated and first.last_reply == "hello"
        assert [m.content for m in first.messages] == ["hello"]
        second = await talk.turn([vf.UserMessage(content="hi")])
        assert second.last_reply == "hi"
    trace = talk.trace
    assert trace.ok and trace.stop_condition == "user_closed" and trace.reward == 1.0
    assert [m.role for m in trace.messages] == ["system"] + ["user", "assistant"] * 2
    assert trace.num_branches == 1  # each user turn continued the one conversation


async def test_a_stop_surfaces_as_the_next_turns_terminated_segment() -> None:
    async with agent(EchoHarness()).interaction(OneTurnTask(Data())) as talk:
        assert (await talk.turn("hi")).last_reply == "hi"
        end = await talk.turn("again")
        assert end.terminated and end.messages == []
        with pytest.raises(vf.AgentError, match="already ended"):
            await talk.turn("more")
    assert talk.trace.stop_condition == "one_turn" and talk.trace.ok


async def test_a_prompted_task_speaks_first() -> None:
    async with agent(EchoHarness()).interaction(EchoTask(Data(prompt="hi"))) as talk:
        with pytest.raises(ValueError, match="bare turn"):
            await talk.turn("hello")
        assert (await talk.turn()).last_reply == "hi"
    assert talk.trace.ok


async def test_a_failed_setup_raises_from_the_interaction_and_keeps_the_failed_trace() -> None:
    seat = agent(EchoHarness())
    with pytest.raises(RuntimeError, match="no sandbox today"):
        async with seat.interaction(BrokenSetupTask(Data())):
            pytest.fail("the block must not run")
    (trace,) = seat.traces
    assert trace.is_completed and not trace.ok and trace.errors[0].type == "RuntimeError"


async def test_an_error_inside_the_interaction_fails_the_trace() -> None:
    async with agent(EchoHarness()).interaction(EchoTask(Data())) as talk:
        await talk.turn("hi")
        raise ValueError("the user simulator crashed")
    assert not talk.trace.ok and talk.trace.errors[-1].message == "the user simulator crashed"
    assert talk.trace.rewards == {}


async def test_the_agent_budget_counts_only_segments() -> None:
    harness = EchoHarness(linger=0.5)
    run = Rollout(
        task=EchoTask(Data()),
        agent=agent(harness),
        has_user=True,
        timeouts=RolloutTimeouts(agent=3.0),
    )
    assert await run.open()
    assert await run.step([vf.UserMessage(content="a")])
    await asyncio.sleep(3.5)  # the user thinking longer than the whole budget spends none of it
    assert await run.step([vf.UserMessage(content="b")])
    harness.linger = 30.0  # this segment runs past what is left of the budget
    assert not await asyncio.wait_for(run.step([vf.UserMessage(content="c")]), 15)
    trace = await run.close()
    assert trace.stop_condition == "agent_timeout" and trace.ok and trace.num_turns == 3


def test_continue_branch_extends_the_last_branch_not_a_lookalike() -> None:
    trace = vf.Trace(
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        task=vf.TraceTask(type="Task", data=vf.TaskData(idx=0, prompt="q")),
        nodes=[
            vf.MessageNode(parent=None, message=vf.UserMessage(content="q")),
            vf.MessageNode(parent=0, message=vf.AssistantMessage(content="a"), sampled=True),
            vf.MessageNode(parent=None, message=vf.UserMessage(content="q")),
            vf.MessageNode(parent=2, message=vf.AssistantMessage(content="a"), sampled=True),
        ],
    )
    continue_branch(trace, [vf.UserMessage(content="next")]).commit_prompt()
    assert trace.nodes[-1].parent == 3 and trace.num_branches == 2


def test_rlm_is_a_registered_harness_with_upstreams_policy() -> None:
    harness = vf.harness_for("rlm")
    assert isinstance(harness, RLMHarness)
    with pytest.raises(ValueError, match="must be at least max_depth"):
        RLMHarnessConfig(max_depth=3, max_concurrent_subagents=2)
    with pytest.raises(ValueError, match="builtin_tools"):
        RLMHarnessConfig(disabled_tools=["bash"])
    assert harness.policy() == {"max_total_tokens": 10_000_000}
    unbounded = RLMHarness(
        RLMHarnessConfig(
            max_total_tokens=0, max_depth=6, compaction=CompactionConfig(max_attempts=2)
        )
    )
    assert unbounded.policy() == {
        "max_depth": 6,
        "max_concurrent_subagents": 6,
        "compaction": True,
        "max_compaction_attempts": 2,
        "max_total_tokens": None,
    }


def test_rlm_session_config_carries_the_rollout_and_the_task_prompt() -> None:
    harness = RLMHarness(RLMHarnessConfig(append_to_system_prompt="Be brief."))
    task = EchoTask(Data(prompt="solve it", system_prompt="You are careful."))
    trace = agent(harness).new_trace(task)
    config = harness.acp_config(task, trace, agent(harness), endpoint="http://m/v1", secret="s")
    assert config.command[-1] == "--acp" and config.prompt == "solve it"
    assert config.env["RLM_HOME"].endswith(f"{trace.id}/home")
    assert config.session_meta is not None
    payload = config.session_meta[RLM_RUNTIME_METADATA_KEY]
    assert isinstance(payload, dict) and payload["session_id"] == trace.id
    assert payload["provider"] == {"base_url": "http://m/v1", "api_key": "s"}
    assert payload["append_to_system_prompt"] == "You are careful.\n\nBe brief."


def test_rlm_snapshots_must_be_the_rollouts_own() -> None:
    harness = RLMHarness(RLMHarnessConfig())
    trace = agent(harness).new_trace(EchoTask(Data(prompt="q")))
    other = {RLM_SESSION_METADATA_KEY: {"session_id": "someone-else", "metrics": {}}}
    with pytest.raises(ValueError, match="not of this rollout"):
        harness.acp_turn_result(trace, vf.ACPTurn(reply="x", response_metadata=other))
    harness.acp_close_result(trace, {})  # a close without a snapshot changes nothing
    assert trace.metrics == {} and trace.stop_condition is None


async def test_running_rlm_says_what_is_missing() -> None:
    trace = await agent(RLMHarness(RLMHarnessConfig())).run(EchoTask(Data(prompt="q")))
    assert not trace.ok and trace.errors[0].type == "HarnessError"
    assert "nano-rlm" in trace.errors[0].message and "ACP session driver" in trace.errors[0].message
