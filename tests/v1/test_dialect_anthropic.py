"""The Anthropic Messages dialect: requests read as v1 messages, tools and chat sampling
arguments; model replies written as Messages objects and their server-sent events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from verifiers.types import ModelResponse, Usage
from verifiers.v1.dialects import AnthropicDialect
from verifiers.v1.dialects.anthropic import AnthropicRequestError, error_body
from verifiers.v1.types import (
    AssistantMessage,
    ImageUrlContentPart,
    SystemMessage,
    TextContentPart,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
)

DIALECT = AnthropicDialect()


def test_request_reads_system_blocks_tool_use_and_tool_results() -> None:
    request = DIALECT.parse_request(
        {
            "model": "claude",
            "max_tokens": 10,
            "system": [
                {"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "AAA"},
                        },
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "look first", "signature": "s"},
                        {"type": "text", "text": "checking"},
                        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": "boom",
                            "is_error": True,
                        },
                        {"type": "text", "text": "go on"},
                    ],
                },
            ],
            "tools": [{"name": "bash", "description": "shell", "input_schema": {"type": "object"}}],
        }
    )
    assert request.messages == [
        SystemMessage(content="be brief"),
        UserMessage(
            content=[
                TextContentPart(text="what is this?"),
                ImageUrlContentPart.model_validate(
                    {"image_url": {"url": "data:image/png;base64,AAA"}}
                ),
            ]
        ),
        AssistantMessage(
            content="checking",
            reasoning_content="look first",
            tool_calls=[ToolCall(id="t1", name="bash", arguments='{"cmd": "ls"}')],
        ),
        ToolMessage(tool_call_id="t1", name="bash", content="Error: boom"),
        UserMessage(content="go on"),
    ]
    assert request.tools == [Tool(name="bash", description="shell", parameters={"type": "object"})]


def test_sampling_maps_to_chat_arguments() -> None:
    body: dict[str, Any] = {
        "max_tokens": 300,
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 20,
        "stop_sequences": ["###"],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 10000},
        "metadata": {"user_id": "u"},
    }
    assert DIALECT.parse_sampling(body) == {
        "max_tokens": 300,
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 20,
        "stop": ["###"],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "reasoning_effort": "medium",
    }
    named = DIALECT.parse_sampling({"tool_choice": {"type": "tool", "name": "bash"}})
    assert named == {"tool_choice": {"type": "function", "function": {"name": "bash"}}}
    assert DIALECT.parse_sampling({"output_config": {"effort": "high"}}) == {
        "reasoning_effort": "high"
    }
    assert DIALECT.parse_sampling({"thinking": {"type": "disabled"}}) == {}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"role": "user"}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "messages[0].content[0].type"),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "b", "input": []}]}]},
            "messages[0].content[0].input",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
            "messages[0].content[0].tool_use_id",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "tools": {}}, "tools"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
            "tools[0].type",
        ),
    ],
)  # fmt: skip
def test_malformed_requests_name_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(AnthropicRequestError) as error:
        DIALECT.parse_request(body)
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": "9"}, "max_tokens"),
        ({"temperature": "hot"}, "temperature"),
        ({"stop_sequences": "x"}, "stop_sequences"),
        ({"tool_choice": {"type": "maybe"}}, "tool_choice.type"),
        ({"thinking": {"type": "enabled"}}, "thinking.budget_tokens"),
    ],
)
def test_malformed_sampling_names_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(AnthropicRequestError) as error:
        DIALECT.parse_sampling(body)
    assert error.value.field == field


def reply(**message: Any) -> ModelResponse:
    return ModelResponse(
        message={"role": "assistant", **message},
        usage=Usage(prompt_tokens=12, completion_tokens=7),
    )


def test_response_body_blocks_and_stop_reasons() -> None:
    response = reply(
        content="running",
        reasoning_content="plan",
        tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"a": 1}'}}
        ],
    )
    body = DIALECT.response_body(response, "claude-x")
    assert body["id"].startswith("msg_") and body["model"] == "claude-x"
    assert body["type"] == "message" and body["role"] == "assistant"
    assert body["content"] == [
        {"type": "thinking", "thinking": "plan", "signature": ""},
        {"type": "text", "text": "running"},
        {"type": "tool_use", "id": "c1", "name": "bash", "input": {"a": 1}},
    ]
    assert body["stop_reason"] == "tool_use" and body["stop_sequence"] is None
    assert body["usage"] == {"input_tokens": 12, "output_tokens": 7}

    def stop(response: ModelResponse) -> tuple[str, str | None]:
        out = DIALECT.response_body(response, "m")
        return out["stop_reason"], out["stop_sequence"]

    assert stop(ModelResponse(message={"role": "assistant", "content": "x"})) == ("end_turn", None)
    cut = ModelResponse(message={"role": "assistant", "content": "x"}, finish_reason="length")
    assert stop(cut) == ("max_tokens", None)
    matched = ModelResponse(
        message={"role": "assistant", "content": "x"}, finish_reason="stop", stop_sequence="###"
    )
    assert stop(matched) == ("stop_sequence", "###")


def test_stream_events_rebuild_the_message() -> None:
    response = reply(
        content="hi",
        reasoning_content="hmm",
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    )
    raw = DIALECT.stream_events(response, "m").decode()
    events = []
    for chunk in raw.strip().split("\n\n"):
        kind_line, data_line = chunk.split("\n")
        assert kind_line.startswith("event: ") and data_line.startswith("data: ")
        data = json.loads(data_line[6:])
        assert data["type"] == kind_line[7:]
        events.append(data)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert events[0]["message"]["usage"] == {"input_tokens": 12, "output_tokens": 0}
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert {"type": "thinking_delta", "thinking": "hmm"} in deltas
    assert {"type": "text_delta", "text": "hi"} in deltas
    assert {"type": "input_json_delta", "partial_json": "{}"} in deltas
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"] == {"output_tokens": 7}


def test_error_body_type_follows_the_status() -> None:
    assert error_body(400, "bad") == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "bad"},
    }
    assert error_body(429, "slow")["error"]["type"] == "rate_limit_error"
    assert error_body(502, "model")["error"]["type"] == "api_error"


def test_a_system_role_message_stays_where_claude_code_puts_it() -> None:
    body = {
        "system": "you are an agent",
        "messages": [
            {"role": "user", "content": "fix the bug"},
            {"role": "system", "content": [{"type": "text", "text": "reminder: be brief"}]},
            {"role": "assistant", "content": "ok"},
        ],
    }
    messages = AnthropicDialect().parse_request(body).messages
    assert [m.role for m in messages] == ["system", "user", "system", "assistant"]
    assert messages[2] == SystemMessage(content="reminder: be brief")
