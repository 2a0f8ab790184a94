"""mini-swe-agent (from PyPI, installed once into a cached environment mounted read-only)
fixes swe-lite bugs in bwrap sandboxes with scripted model replies; the grader, outside its
sandbox, gives 1.0 for a fix and 0.0 otherwise. Each of its model calls is one step."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from tests.environments.conftest import ENV_DIRS
from tests.sandbox.conftest import needs_bwrap
from verifiers.agents.installs import MINI_SWE_AGENT_VERSION, mini_swe_agent_env
from verifiers.clients.native import NativeClient
from verifiers.clients.oracle import OracleClient
from verifiers.testing import OpenAITestServer

pytestmark = [needs_bwrap, pytest.mark.usefixtures("mini_swe_agent_dir")]
assert "swe-agent" in ENV_DIRS  # (the conftest import puts the package on sys.path)

import vf_swe_agent  # noqa: E402

TOKENS = {"extra_body": {"return_token_ids": True}, "logprobs": True}


async def run_over_server(
    env: vf.Environment, responder: Callable[[dict[str, Any]], Any]
) -> tuple[list[vf.State], list[dict[str, Any]]]:
    async with OpenAITestServer(responder=responder) as srv:
        client = NativeClient(srv.base_url)
        states = await asyncio.gather(
            *(env.run_rollout(r, client, "policy", TOKENS) for r in env.get_rows())
        )
        requests = list(srv.requests)
    return states, requests


def test_the_cached_environment_is_pinned_and_complete(mini_swe_agent_dir: Path) -> None:
    assert mini_swe_agent_dir.name == f"mini-swe-agent-{MINI_SWE_AGENT_VERSION}"
    assert (
        mini_swe_agent_dir / ".complete"
    ).read_text().strip() == f"mini-swe-agent=={MINI_SWE_AGENT_VERSION}"
    assert mini_swe_agent_env() == mini_swe_agent_dir  # installed once: found, not rebuilt


async def test_mini_swe_agent_fixes_bugs_with_the_scripted_oracle() -> None:
    env = vf_swe_agent.load_environment(num_examples=2, seed=3)
    try:
        states, requests = await run_over_server(env, vf_swe_agent.oracle_responder)
    finally:
        await env.close()
    for state in states:
        assert state["error"] is None, state.get("agent_stderr", "")[-2000:]
        assert state["reward"] == 1.0
        assert state["stop_condition"] == "agent_completed" and state["agent_exit_code"] == 0
        steps = state["trajectory"]
        assert len(steps) == 4  # find, fix, test, submit: one step per model call
        assert all(s["tokens"] and s["tokens"]["completion_ids"] for s in steps)
        # mini-swe-agent's own prompt (system + instance template holding the task)
        assert state["prompt"][0]["role"] == "system"
        assert "minilib" in state["prompt"][1]["content"]
        assert state["metrics"]["agent_error"] == 0.0
    assert len(requests) == sum(len(s["trajectory"]) for s in states) == 8
    # the agent asked with its own tool schema; the rollout's model name replaced its own
    assert all(r["tools"][0]["function"]["name"] == "bash" for r in requests)
    assert {r["model"] for r in requests} == {"policy"}


async def test_mini_swe_agent_with_wrong_replies_gets_zero() -> None:
    env = vf_swe_agent.load_environment(num_examples=2, seed=3)
    try:
        states, _ = await run_over_server(env, vf_swe_agent.wrong_responder)
    finally:
        await env.close()
    assert [s["error"] for s in states] == [None, None]
    assert [s["reward"] for s in states] == [0.0, 0.0]
    assert all(s["metrics"]["tests_failed"] > 0 for s in states)


async def test_the_oracle_model_solves_tasks_with_either_agent() -> None:
    for agent in ("bash-loop", "mini-swe-agent"):
        env = vf_swe_agent.load_environment(num_examples=2, seed=5, agent=agent)
        try:
            states = await asyncio.gather(
                *(env.run_rollout(r, OracleClient(), "oracle") for r in env.get_rows())
            )
        finally:
            await env.close()
        assert [s["reward"] for s in states] == [1.0, 1.0], agent
        assert [len(s["trajectory"]) for s in states] == [3, 3]


def test_the_scripted_oracle_fits_a_max_tokens_budget() -> None:
    """Over the test server every byte is a token: the oracle's probe names only the bugs
    that break the tests the task lists, so its replies fit vf-eval's max_tokens (4096)."""
    env = vf_swe_agent.load_environment(num_examples=-1, agent="bash-loop")
    for row in env.get_rows():
        task = row["prompt"][-1]["content"]
        request = {
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": task}]
        }
        reply = vf_swe_agent.oracle_responder(request)
        command = reply["tool_calls"][0]["arguments"]["command"]
        assert len(command) < 3000
        bug_id = row["info"]["bugs"][0]["bug_id"]
        assert bug_id in command  # the probe still looks for the task's own bug


def test_an_install_step_run_from_a_shell_shows_what_it_does(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # `python -m verifiers.agents.installs mini-swe-agent` printed nothing for 94 s: each step
    # now says what it is and passes the installer's output through as it comes
    import sys

    from verifiers.agents.installs import _run

    _run([sys.executable, "-c", "print('collecting mini-swe-agent')"], "installing", show=True)
    err = capfd.readouterr().err
    assert "agent install: installing" in err and "collecting mini-swe-agent" in err
    with pytest.raises(vf.SandboxError, match=r"installing failed: .*boom"):
        _run(
            [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"],
            "installing",
            show=True,
        )
