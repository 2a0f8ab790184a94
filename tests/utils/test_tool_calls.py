"""``vf.tool_call`` / ``vf.tool_call_message``: assistant messages asking for tool calls, in the
shape the tool environments execute."""

from __future__ import annotations

import json
from typing import Any

import pytest

import verifiers as vf
from verifiers.testing import ScriptedClient


def test_builds_the_openai_shape_with_json_arguments() -> None:
    msg = vf.tool_call_message(
        vf.tool_call("add", {"a": 1, "b": 2}, id="c0"),
        vf.tool_call("echo", '{"text": "hi"}', id="c1"),
        content="two at once",
    )
    assert msg == {
        "role": "assistant",
        "content": "two at once",
        "tool_calls": [
            {
                "id": "c0",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            },
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "echo", "arguments": '{"text": "hi"}'},
            },
        ],
    }
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: vf.tool_call_message(), "at least one call"),
        (lambda: vf.tool_call("", {}, id="c0"), "tool's name"),
        (lambda: vf.tool_call("add", {}, id=""), "needs an id"),
        (
            lambda: vf.tool_call_message(
                vf.tool_call("a", {}, id="x"), vf.tool_call("b", {}, id="x")
            ),
            "unique",
        ),
    ],
)
def test_bad_calls_are_rejected_with_what_to_fix(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_a_tool_env_executes_the_calls_it_builds() -> None:
    from datasets import Dataset

    env = vf.ToolEnv(
        dataset=Dataset.from_list([{"question": "1+2?", "answer": "3"}]),
        tools=[add],
        max_turns=3,
    )
    client = ScriptedClient(
        [
            vf.tool_call_message(
                vf.tool_call("add", {"a": 1, "b": 2}, id="c0"),
                vf.tool_call("add", {"a": 3, "b": 4}, id="c1"),
            ),
            "3",
        ]
    )
    state = await env.run_rollout(env.get_rows("eval")[0], client, "m")
    tools = [m for m in state["completion"] if m.get("role") == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [("c0", "3"), ("c1", "7")]
    assert state["completion"][-1]["content"] == "3"
