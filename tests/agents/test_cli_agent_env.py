"""``vf.CliAgentEnv`` on bwrap sandboxes, with the bash-loop agent and the project's test
server: each model call of the agent is one trajectory step with the server's token ids."""

from __future__ import annotations

import logging
import shlex
from collections.abc import AsyncIterator
from typing import Any

import pytest

import verifiers as vf
from tests.sandbox.conftest import marker, needs_bwrap, pids_with
from verifiers.agents.bash_loop import bash_loop_command
from verifiers.clients.native import NativeClient
from verifiers.testing import OpenAITestServer

pytestmark = needs_bwrap

TOKENS = {"extra_body": {"return_token_ids": True}, "logprobs": True}


def script(*commands: str, final: str = "done") -> Any:
    """A responder: the k-th call (counted by the agent's own assistant messages) runs
    ``commands[k]`` with the bash tool; after them, ``final`` with no tool call."""

    def respond(request: dict[str, Any]) -> Any:
        step = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if step < len(commands):
            return {"tool_calls": [{"name": "bash", "arguments": {"command": commands[step]}}]}
        return final

    return respond


@pytest.fixture
async def served() -> AsyncIterator[dict[str, Any]]:
    """A test server whose responder the test sets, and the requests it saw."""
    seen: list[dict[str, Any]] = []
    box: dict[str, Any] = {"responder": script(), "seen": seen}

    def respond(request: dict[str, Any]) -> Any:
        seen.append(request)
        return box["responder"](request)

    async with OpenAITestServer(responder=respond) as srv:
        box["client"] = NativeClient(srv.base_url)
        yield box


def rows(n: int = 1) -> list[dict[str, Any]]:
    return [{"question": f"task {i}", "answer": ""} for i in range(n)]


async def run(env: vf.Environment, client: Any, args: dict[str, Any] | None = None) -> vf.State:
    try:
        return await env.run_rollout(env.get_rows()[0], client, "policy", args or TOKENS)
    finally:
        await env.close()


@pytest.mark.parametrize("stream", [False, True])
async def test_each_agent_call_is_one_step_with_token_ids(
    served: dict[str, Any], stream: bool
) -> None:
    served["responder"] = script("echo $((6 * 7)) > answer.txt", "cat answer.txt", final="42")
    env = vf.CliAgentEnv(
        run_command=bash_loop_command(stream=stream),
        dataset=rows(),
        max_turns=10,
        timeout_seconds=120,
    )
    state = await run(env, served["client"])
    assert state["error"] is None, state.get("agent_stderr")
    assert state["stop_condition"] == "agent_completed"
    assert state["agent_exit_code"] == 0
    steps = state["trajectory"]
    assert len(steps) == len(served["seen"]) == 3 == state["turn"]
    for step, request in zip(steps, served["seen"], strict=True):
        assert step["tokens"] is not None and step["tokens"]["completion_ids"]
        assert step["tokens"]["completion_logprobs"] is not None
        # the step's prompt is what the agent sent
        assert step["extras"]["prompt"] == request["messages"]
        assert step["prompt_len"] == len(request["messages"])
    # the agent ran the first command and read its output back on the second call
    last_prompt = steps[2]["extras"]["prompt"]
    assert last_prompt[-1]["role"] == "tool" and last_prompt[-1]["content"].strip() == "42"
    assert state["prompt"][-1]["content"] == "task 0"
    assert state["completion"][-1]["content"] == "42"
    assert state["metrics"]["agent_error"] == 0.0 and state["metrics"]["agent_timeout"] == 0.0
    # the trajectory's tokens extend call to call (the agent appends to its history)
    first, second = steps[0]["tokens"], steps[1]["tokens"]
    assert first is not None and second is not None
    assert second["prompt_ids"][: len(first["prompt_ids"])] == first["prompt_ids"]


async def test_the_callers_sampling_arguments_win_over_the_agents(
    served: dict[str, Any],
) -> None:
    served["responder"] = script(final="ok")
    agent = (
        "python3 -c 'import json, os, urllib.request as u;"
        'b = os.environ["OPENAI_BASE_URL"];'
        'body = {"model": "mine", "messages": [{"role": "user", "content": "hi"}],'
        ' "temperature": 1.7, "top_p": 0.5, "max_tokens": 99, "logit_bias": {"1": 5}};'
        'r = u.Request(b + "/chat/completions", json.dumps(body).encode(),'
        ' {"Content-Type": "application/json"});'
        "print(u.urlopen(r).read().decode())'"
    )
    env = vf.CliAgentEnv(run_command=agent, dataset=rows(), max_turns=3, timeout_seconds=60)
    state = await run(env, served["client"], {"temperature": 0.0, **TOKENS})
    assert state["error"] is None, state.get("agent_stderr")
    (request,) = served["seen"]
    assert request["temperature"] == 0.0  # pinned by the caller
    assert request["top_p"] == 0.5 and request["max_tokens"] == 99  # the agent's, not pinned
    assert "logit_bias" not in request  # not a sampling argument passed on
    assert request["model"] == "policy"  # the rollout's model, not the agent's name
    assert '"content":"ok"' in state["agent_stdout"].replace(" ", "")


async def test_a_flooding_agent_stops_at_max_turns_and_is_stopped(
    served: dict[str, Any],
) -> None:
    served["responder"] = lambda request: {
        "tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]
    }
    env = vf.CliAgentEnv(
        run_command=bash_loop_command(max_steps=1000),
        dataset=rows(),
        max_turns=4,
        timeout_seconds=120,
    )
    state = await run(env, served["client"])
    assert state["stop_condition"] == "max_turns_reached"
    assert state["turn"] == 4 == len(state["trajectory"])
    assert len(served["seen"]) == 4
    assert state["sandbox_id"] and not state.get("sandbox")


async def test_a_hanging_agent_stops_at_its_timeout_and_leaves_nothing(
    served: dict[str, Any],
) -> None:
    tag = marker()
    agent = f"(sleep {tag} &) ; setsid sleep {tag} & exec sleep {tag}"
    env = vf.CliAgentEnv(run_command=agent, dataset=rows(), timeout_seconds=3)
    state = await run(env, served["client"])
    assert state["stop_condition"] == "timeout_reached"
    assert state["metrics"]["agent_timeout"] == 1.0
    assert state["trajectory"] == []
    assert pids_with(tag) == []


async def test_an_agent_that_fails_is_an_errored_rollout(served: dict[str, Any]) -> None:
    env = vf.CliAgentEnv(
        run_command="echo something broke >&2; exit 3", dataset=rows(), timeout_seconds=60
    )
    state = await run(env, served["client"])
    assert state["agent_exit_code"] == 3
    assert state["metrics"]["agent_error"] == 1.0
    assert state["error"]["type"] == "AgentError"
    assert "status 3" in state["error"]["message"]
    assert "something broke" in state["error"]["message"]
    assert state["reward"] is None  # not scored: trainers drop it


async def test_environment_vars_reach_the_agent_and_cannot_redirect_it(
    served: dict[str, Any],
) -> None:
    with pytest.raises(vf.ConfigError, match="OPENAI_BASE_URL"):
        vf.CliAgentEnv(
            run_command="true", dataset=rows(), environment_vars={"OPENAI_BASE_URL": "x"}
        )
    env = vf.CliAgentEnv(
        run_command='test "$GREETING" = hello && test -n "$OPENAI_API_KEY" && '
        'case "$OPENAI_BASE_URL" in http://127.0.0.1:*/vf/*/v1) exit 0;; esac; exit 9',
        dataset=rows(),
        environment_vars={"GREETING": "hello"},
        timeout_seconds=60,
    )
    state = await run(env, served["client"])
    assert state["agent_exit_code"] == 0, state


def test_classic_hosted_options_are_accepted_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="verifiers.agents.cli_agent_env"):
        env = vf.CliAgentEnv(
            run_command="true",
            dataset=rows(),
            docker_image="python:3.11-slim",
            cpu_cores=2,
            team_id="t",
            interception_url="https://tunnel.example",
            poll_interval=1.0,
            labels=["x"],
            keep_sandbox_for_scoring=True,
        )
    assert "ignoring hosted-sandbox options" in caplog.text
    assert env.keep_sandbox_for_scoring
    with pytest.raises(vf.ConfigError, match="GPUs"):
        vf.CliAgentEnv(run_command="true", dataset=rows(), gpu_count=1)
    with pytest.raises(vf.ConfigError, match="bwrap"):
        vf.CliAgentEnv(run_command="true", dataset=rows(), sandbox_backend="remote")
    with pytest.raises(vf.ConfigError, match="run_command"):
        vf.CliAgentEnv(run_command=" ", dataset=rows())


async def test_keep_sandbox_for_scoring_lets_rewards_look_inside(
    served: dict[str, Any],
) -> None:
    served["responder"] = script("echo fixed > result.txt", final="ok")
    seen: dict[str, Any] = {}

    async def wrote_it(state: vf.State) -> float:
        sandbox = state["sandbox"]
        seen["running"] = sandbox.running
        return float((await sandbox.read_file("result.txt")).strip() == b"fixed")

    env = vf.CliAgentEnv(
        run_command=bash_loop_command(),
        dataset=rows(),
        rubric=vf.Rubric(funcs=[wrote_it]),
        keep_sandbox_for_scoring=True,
        timeout_seconds=60,
    )
    state = await run(env, served["client"])
    assert state["reward"] == 1.0 and seen["running"]
    assert "sandbox" not in state  # stopped by cleanup


async def test_nothing_the_agent_left_runs_while_the_kept_sandbox_is_scored(
    served: dict[str, Any],
) -> None:
    tag = marker()
    seen: dict[str, Any] = {}

    async def left_behind(state: vf.State) -> float:
        seen["pids"] = pids_with(tag)
        seen["file"] = (await state["sandbox"].read_file("left.txt")).strip()
        return 0.0

    env = vf.CliAgentEnv(
        # a process that detaches from the agent and outlives it
        run_command=f"echo here > left.txt; (setsid sleep {tag} &); exit 0",
        dataset=rows(),
        rubric=vf.Rubric(funcs=[left_behind]),
        keep_sandbox_for_scoring=True,
        timeout_seconds=60,
    )
    state = await run(env, served["client"])
    assert state["error"] is None and state["agent_exit_code"] == 0
    assert seen == {"pids": [], "file": b"here"}


async def test_rollouts_in_parallel_each_talk_to_their_own_channel(
    served: dict[str, Any],
) -> None:
    served["responder"] = lambda request: (
        f"you said {request['messages'][1]['content']}" if len(request["messages"]) == 2 else "?"
    )
    agent = "python3 -c " + shlex.quote(
        "import json, os, urllib.request as u\n"
        'b = os.environ["OPENAI_BASE_URL"]\n'
        'body = {"messages": [{"role": "system", "content": "s"},'
        ' {"role": "user", "content": os.environ["VF_TASK"]}]}\n'
        'r = u.Request(b + "/chat/completions", json.dumps(body).encode())\n'
        'print(json.loads(u.urlopen(r).read())["choices"][0]["message"]["content"])\n'
    )
    env = vf.CliAgentEnv(run_command=agent, dataset=rows(6), timeout_seconds=60)
    try:
        import asyncio

        states = await asyncio.gather(
            *(env.run_rollout(r, served["client"], "m") for r in env.get_rows())
        )
    finally:
        await env.close()
    for i, state in enumerate(states):
        assert state["agent_stdout"].strip() == f"you said task {i}"
        assert len(state["trajectory"]) == 1
