"""An agent program written against Anthropic's Messages API (the ``anthropic`` SDK) runs in a
program harness against an OpenAI-compatible model (the project's test server): its tool loop
is intercepted turn by turn, each call one sampled node with the server's token ids, and the
task's reward sees its tool results."""

from __future__ import annotations

import sys
from typing import Any

import verifiers.v1 as vf
from verifiers.testing import OpenAITestServer
from verifiers.v1.harnesses import ProgramHarness
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


class AnthropicProgram(ProgramHarness):
    """The program above, run with this interpreter (which has the ``anthropic`` SDK)."""

    def command(self, task: Any, trace: Any, agent: Any) -> tuple[list[str], dict[str, str]]:
        prompt = content_text(trace.messages[-1].content)
        return [sys.executable, "-c", PROGRAM], {"TASK_PROMPT": prompt}


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
        agent = vf.Agent(server.base_url, "policy", harness=AnthropicProgram(), sampling=sampling)
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
