"""Harnesses written to 0.4.0's program API: ``setup(runtime)`` provisions, ``launch(ctx,
trace, runtime, endpoint, secret, mcp_urls, data)`` runs the program to its end
(``runtime.run_program``), its model calls going to ``endpoint`` with ``secret``; as upstream's
``compact`` example does, including a program that rebuilds its context every turn."""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

import pytest

import verifiers.v1 as vf
from verifiers.testing import OpenAITestServer
from verifiers.v1.clients import ModelContext
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.harness import Harness
from verifiers.v1.runtimes import ProgramResult, SubprocessConfig
from verifiers.v1.task import TaskData
from verifiers.v1.task_runtime import TaskRuntime

# A context-rewriting program (standard library only): each turn sends a fresh [system, user];
# the user message is the task on the first turn, then the notes the model saved with `save`.
PROGRAM = r"""
import json, os, sys, urllib.request

def ask(messages):
    body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": messages,
                       "tools": [{"type": "function", "function": {"name": "save",
                       "parameters": {"type": "object", "properties": {"notes": {"type": "string"}}}}}]})
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body.encode(), headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                                     "Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read())["choices"][0]["message"]

notes = None
for _ in range(5):
    user = "Task: " + sys.argv[1] if notes is None else "Notes: " + notes
    reply = ask([{"role": "system", "content": "Work in turns."}, {"role": "user", "content": user}])
    calls = reply.get("tool_calls") or []
    if not calls:
        print(reply.get("content") or "")
        break
    notes = json.loads(calls[0]["function"]["arguments"])["notes"]
"""


class RewriteHarnessConfig(HarnessConfig):
    id: str = "rewrite"


class RewriteHarness(Harness[RewriteHarnessConfig]):
    SUPPORTS_MCP = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False
    seen: list[Any] = []

    async def setup(self, runtime: Any) -> None:
        await runtime.write("program.py", PROGRAM)

    async def launch(
        self,
        ctx: ModelContext,
        trace: vf.Trace,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: TaskData,
    ) -> ProgramResult:
        _, prompt = self.resolve_text_prompt(data)
        assert prompt is not None
        self.seen.append((ctx.model, mcp_urls))
        env = {"OPENAI_BASE_URL": endpoint, "OPENAI_API_KEY": secret, "OPENAI_MODEL": ctx.model}
        result: ProgramResult = await runtime.run_program(["python3", "program.py", prompt], env)
        return result


class Lookup(vf.Toolset):
    TOOL_PREFIX = "facts"

    @vf.tool
    def lookup(self, name: str) -> str:
        """What a thing is known for."""
        return {"ada": "the first programmer"}.get(name.lower(), "unknown")


class LookupTask(vf.Task[vf.TaskData]):
    @classmethod
    def toolsets(cls, config: Any) -> list[vf.Toolset]:
        return [Lookup()]

    @vf.reward
    async def answered(self, trace: vf.Trace) -> float:
        return float("the first programmer" in (trace.last_reply or ""))


def _respond(requests: list[dict[str, Any]]) -> Any:
    def respond(request: dict[str, Any]) -> Any:
        requests.append(request)
        messages = request["messages"]
        user = messages[1]["content"]
        if messages[-1]["role"] == "tool":
            return {
                "tool_calls": [{"name": "save", "arguments": {"notes": messages[-1]["content"]}}]
            }
        if user.startswith("Notes: "):
            return "<answer>" + user[len("Notes: ") :] + "</answer>"
        return {"tool_calls": [{"name": "facts_lookup", "arguments": {"name": "Ada"}}]}

    return respond


async def test_a_launch_harness_runs_its_program_against_the_rollouts_model() -> None:
    requests: list[dict[str, Any]] = []
    seat = vf.AgentConfig(runtime={"type": "subprocess"})  # type: ignore[arg-type]
    async with OpenAITestServer(responder=_respond(requests)) as server:
        agent = vf.Agent(server.base_url, "m", seat, harness=RewriteHarness())
        trace = await agent.run(LookupTask(vf.TaskData(idx=0, prompt="Who is Ada?")))
    assert trace.ok, trace.errors
    assert trace.reward == 1.0 and trace.stop_condition == "agent_completed"
    assert RewriteHarness.seen[-1] == ("m", {})
    # the toolset's exchange belongs to the first context only: the rebuilt context of the
    # next turn does not carry it
    assert [m["role"] for m in requests[-1]["messages"]] == ["system", "user"]
    assert requests[-1]["messages"][1]["content"] == "Notes: the first programmer"
    assert len(trace.branches) == 2 and trace.num_turns == 3


def test_a_harness_with_neither_run_nor_launch_says_so() -> None:
    class Empty(Harness[HarnessConfig]):
        pass

    import asyncio

    with pytest.raises(NotImplementedError, match="neither run"):
        asyncio.run(Empty().run(None, None, None))  # type: ignore[arg-type]


def test_prompts_resolve_as_upstreams_harnesses_read_them() -> None:
    harness = RewriteHarness()
    data = TaskData(idx=0, prompt="Q", system_prompt="S")
    assert harness.resolve_text_prompt(data) == (None, "S\n\nQ")
    listed = TaskData(idx=0, prompt=[vf.UserMessage(content="Q")])
    with pytest.raises(ValueError, match="text prompt"):
        harness.resolve_text_prompt(listed)


@pytest.mark.skipif(
    shutil.which("uv") is None
    and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "uv")),
    reason="no uv on this machine",
)
async def test_a_uv_script_runs_in_a_subprocess_runtime_with_the_hosts_uv() -> None:
    script = '# /// script\n# dependencies = []\n# ///\nimport sys\nprint("hi", sys.argv[1])\n'
    runtime = TaskRuntime(SubprocessConfig())
    async with runtime:
        argv = await runtime.prepare_uv_script(script)
        result = await runtime.run_program([*argv, "there"], {})
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "hi there"
    assert json.dumps(argv)  # a plain argv
