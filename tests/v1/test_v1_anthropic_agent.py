"""An agent program written against Anthropic's Messages API (the ``anthropic`` SDK) runs in a
program harness against an OpenAI-compatible model (the project's test server): its tool loop
is intercepted turn by turn, each call one sampled node with the server's token ids, and the
task's reward sees its tool results."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.sandbox.bwrap import bwrap_available
from verifiers.testing import OpenAITestServer
from verifiers.v1.harnesses import ProgramHarness, ProgramHarnessConfig
from verifiers.v1.runtimes import SubprocessConfig
from verifiers.v1.types import AssistantMessage, content_text

PROGRAM = r"""
import os, subprocess, anthropic
client = anthropic.Anthropic(
    base_url=os.environ["ANTHROPIC_BASE_URL"], api_key=os.environ["ANTHROPIC_API_KEY"], max_retries=0
)
tools = [{
    "name": "bash",
    "description": "run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}]
messages = [{"role": "user", "content": os.environ["TASK_PROMPT"]}]
for _ in range(5):
    with client.messages.stream(
        model=os.environ["ANTHROPIC_MODEL"], max_tokens=200, system="use bash",
        messages=messages, tools=tools,
    ) as stream:
        reply = stream.get_final_message()
    messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
    if reply.stop_reason != "tool_use":
        break
    results = []
    for block in reply.content:
        if block.type == "tool_use":
            run = subprocess.run(block.input["command"], shell=True, capture_output=True, text=True)
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": run.stdout})
    messages.append({"role": "user", "content": results})
print(reply.content[-1].text)
"""


class Data(vf.TaskData):
    marker: str = ""


class EchoTask(vf.Task[Data]):
    @vf.reward
    async def saw_marker(self, trace: vf.Trace) -> float:
        return float(any(self.data.marker in content_text(m.content) for m in trace.tool_messages))


SITE = os.path.realpath(sysconfig.get_paths()["purelib"])  # has the ``anthropic`` SDK
SITE_INSIDE = "/opt/vf-site"


def _others_can_enter(path: str) -> bool:
    """Whether a sandbox's uid can reach ``path`` (every directory on the way is o+x)."""
    parts = Path(path).parents
    return all(p.stat().st_mode & stat.S_IXOTH for p in [*parts, Path(path)])


def _system_python_matches() -> bool:
    found = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    if found is None:
        return False
    out = subprocess.run(
        [found, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
    )
    return out.stdout.strip() == str(tuple(sys.version_info[:2]))


SYSTEM_PYTHON = _system_python_matches()
#: the sandbox can run the program (else the test opts in to subprocess, by name)
SANDBOXED = bwrap_available() and (SYSTEM_PYTHON or _others_can_enter(sys.base_prefix))


class AnthropicProgram(ProgramHarness):
    """The program above, run in the default (bwrap) runtime: the sandbox's ``python3`` of
    this interpreter's version, with this environment's site-packages (the ``anthropic`` SDK)
    mounted read-only and on its path; where the sandbox has no such interpreter, this one's
    installation is mounted too. Where neither can run in a sandbox here, the harness names
    the ``subprocess`` runtime and runs this interpreter."""

    def binds(self) -> dict[str, str]:
        binds = {SITE: SITE_INSIDE}
        if not SYSTEM_PYTHON:
            base = os.path.realpath(sys.base_prefix)
            binds[base] = base
        return binds

    def command(self, task: Any, trace: Any, agent: Any) -> tuple[list[str], dict[str, str]]:
        env = {"TASK_PROMPT": content_text(trace.messages[-1].content)}
        if not SANDBOXED:
            return [sys.executable, "-c", PROGRAM], env
        python = "python3" if SYSTEM_PYTHON else os.path.realpath(sys.executable)
        return [python, "-c", PROGRAM], {**env, "PYTHONPATH": SITE_INSIDE}


def anthropic_program() -> AnthropicProgram:
    if SANDBOXED:
        return AnthropicProgram()
    return AnthropicProgram(ProgramHarnessConfig(runtime=SubprocessConfig()))


async def test_anthropic_sdk_program_gets_a_reward() -> None:
    seen: list[dict[str, Any]] = []

    def respond(request: dict[str, Any]) -> Any:
        seen.append(request)
        if not any(m["role"] == "tool" for m in request["messages"]):
            return {"tool_calls": [{"name": "bash", "arguments": {"command": "echo marker-9"}}]}
        return "it printed the marker"

    task = EchoTask(Data(idx=0, prompt="print marker-9", marker="marker-9"))
    sampling = {"extra_body": {"return_token_ids": True}, "logprobs": True}
    async with OpenAITestServer(responder=respond) as server:
        agent = vf.Agent(server.base_url, "policy", harness=anthropic_program(), sampling=sampling)
        trace = await agent.run(task)
    assert trace.ok, trace.errors
    assert trace.stop_condition == "agent_completed"
    assert trace.rewards["saw_marker"] == vf.Reward(score=1.0)
    assert trace.num_turns == 2 and len(seen) == 2
    assert [m.role for m in trace.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [t.name for t in trace.tools] == ["bash"]
    sampled = [n for n in trace.nodes if n.sampled]
    assert len(sampled) == 2 and len(trace.nodes) == 5  # one branch
    assert all(n.prompt_token_ids and n.completion_token_ids for n in sampled)
    last = trace.messages[-1]
    assert isinstance(last, AssistantMessage) and last.content == "it printed the marker"
    assert seen[0]["model"] == "policy" and seen[0]["max_tokens"] == 200
    assert seen[1]["messages"][-1]["content"].strip() == "marker-9"
