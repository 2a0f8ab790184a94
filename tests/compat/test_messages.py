"""Messages read both ways (``m.role`` and ``m["role"]``) and still serialise as plain JSON."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import orjson
import pytest

import verifiers as vf
from verifiers.clients._wire import parse_response
from verifiers.results import ResultsWriter, dumps, read_records, state_to_record
from verifiers.testing import ScriptedClient


def test_message_classes_answer_keys_and_attributes() -> None:
    m = vf.AssistantMessage(
        content="hi",
        tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
        ],
    )
    assert m.role == m["role"] == "assistant" and m.content == m["content"] == "hi"
    call = m.tool_calls[0]
    assert isinstance(call, vf.ToolCall)
    assert (call.id, call.name, call.arguments) == ("c1", "add", "{}")
    assert (call["name"], call["arguments"], call["function"]["name"]) == ("add", "{}", "add")
    assert m.reasoning_content is None and "reasoning_content" not in m
    user = vf.UserMessage(content="q")
    assert user == {"role": "user", "content": "q"} and user.tool_calls is None
    with pytest.raises(AttributeError, match="no field 'nope'"):
        user.nope  # noqa: B018
    user.content = "changed"
    assert user["content"] == "changed"


def test_classic_flat_tool_call_constructor_builds_the_openai_shape() -> None:
    call = vf.ToolCall(id="x", name="add", arguments={"a": 1})
    assert dict(call) == {
        "id": "x",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 1}'},
    }
    assert call.model_dump() == {"id": "x", "name": "add", "arguments": '{"a": 1}'}


def test_messages_serialise_as_plain_json_and_survive_copies() -> None:
    m = vf.AssistantMessage(
        content=None, tool_calls=[vf.ToolCall(id="i", name="f", arguments="{}")]
    )
    plain = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "i", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    assert json.loads(json.dumps(m)) == plain
    assert orjson.loads(orjson.dumps(m)) == plain
    for clone in (copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert clone == m and type(clone) is vf.AssistantMessage
        assert clone.tool_calls[0].name == "f"


def test_wire_decoding_gives_message_objects() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "t",
                            "type": "function",
                            "function": {"name": "g", "arguments": "{}"},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    message = parse_response(body).message
    assert isinstance(message, vf.AssistantMessage)
    assert message.tool_calls[0].name == "g" and message.tool_calls[0].id == "t"


def _reads_attributes(completion: Any, prompt: Any, answer: str) -> float:
    calls = [c.name for m in completion if m.role == "assistant" for c in (m.tool_calls or [])]
    last = completion[-1].content or ""
    return float(len(calls)) + (1.0 if answer in last else 0.0) + len(prompt[-1].content) / 100


def _reads_keys(completion: Any, prompt: Any, answer: str) -> float:
    calls = [
        c["function"]["name"]
        for m in completion
        if m["role"] == "assistant"
        for c in (m.get("tool_calls") or [])
    ]
    last = completion[-1]["content"] or ""
    return float(len(calls)) + (1.0 if answer in last else 0.0) + len(prompt[-1]["content"]) / 100


def _echo(text: str) -> str:
    """Echo the text.

    Args:
        text: what to echo
    """
    return text


async def test_rewards_written_either_way_agree(tmp_path: Any) -> None:
    rubric = vf.Rubric(funcs=[_reads_attributes, _reads_keys])
    env = vf.ToolEnv(dataset=[{"question": "say 42", "answer": "42"}], tools=[_echo], rubric=rubric)
    client = ScriptedClient(
        [{"content": None, "tool_calls": [{"name": "_echo", "arguments": {"text": "x"}}]}, "42"]
    )
    result = await env.evaluate(client=client, model="m", num_examples=1)
    record = result.records[0]
    assert record["error"] is None
    assert record["metrics"]["_reads_attributes"] == record["metrics"]["_reads_keys"] == 2.06
    # the records are plain JSON: written and read back unchanged
    writer = ResultsWriter(tmp_path / "results.jsonl")
    writer.write(record)
    writer.close()
    assert read_records(tmp_path / "results.jsonl") == [json.loads(dumps(record))]


async def test_prompt_completion_and_state_hold_message_objects() -> None:
    class Echo(vf.MultiTurnEnv):
        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            return [{"role": "user", "content": "again"}]  # a plain dict, converted

    env = Echo(dataset=[{"question": "hello", "answer": ""}], max_turns=2)
    row = env.get_rows("train")[0]
    state = await env.rollout(row, ScriptedClient(["one", "two"]), "m")
    assert [type(m).__name__ for m in state["prompt"]] == ["UserMessage"]
    assert [type(m).__name__ for m in state["completion"]] == [
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert state.completion[1].content == "again"
    record = state_to_record(state)
    assert json.loads(dumps(record))["completion"][0] == {"role": "assistant", "content": "one"}
