"""The shared request builder and response parser."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from openai.types.chat import ChatCompletionMessage

from verifiers.clients._wire import build_request, json_default, parse_response
from verifiers.errors import ConfigError, EmptyModelResponseError, InvalidModelResponseError

USER = [{"role": "user", "content": "hi"}]


def _chat(message: Any, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"message": message, "finish_reason": "stop", **extra}]}


def test_sampling_args_extra_body_headers_and_timeout() -> None:
    path, body, opts = build_request(
        USER,
        "m",
        {
            "temperature": 0.7,
            "max_tokens": None,
            "extra_body": {"return_token_ids": True, "top_k": 20},
            "extra_headers": {"X-Run": "1"},
            "timeout": 5,
        },
        None,
        "chat",
    )
    assert path == "/chat/completions"
    assert body == {
        "model": "m",
        "messages": USER,
        "temperature": 0.7,
        "return_token_ids": True,
        "top_k": 20,
    }
    assert opts.headers == {"X-Run": "1"} and opts.timeout == 5.0


def test_completion_logprobs_flag_becomes_a_count() -> None:
    _, body, _ = build_request("p", "m", {"logprobs": True}, None, "completion")
    assert body["logprobs"] == 0
    _, body, _ = build_request("p", "m", {"logprobs": False}, None, "completion")
    assert "logprobs" not in body
    with pytest.raises(ConfigError, match="tools need"):
        build_request("p", "m", None, [{"type": "function"}], "completion")
    with pytest.raises(ConfigError, match="message_type"):
        build_request("p", "m", None, None, "responses")  # type: ignore[arg-type]


def test_pydantic_messages_serialize() -> None:
    msg = ChatCompletionMessage(role="assistant", content="hello")
    data = orjson.loads(orjson.dumps({"messages": [msg]}, default=json_default))
    assert data == {"messages": [{"role": "assistant", "content": "hello"}]}
    with pytest.raises(TypeError):
        orjson.dumps({"x": object()}, default=json_default)


def test_parse_content_parts_reasoning_and_usage() -> None:
    r = parse_response(
        {
            **_chat(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                    "reasoning": "why",
                }
            ),
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
            "model": "m",
        }
    )
    assert r.message == {"role": "assistant", "content": "ab", "reasoning_content": "why"}
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (3, 2)


def test_truncated_reasoning_is_returned_not_raised() -> None:
    data = {
        "choices": [
            {
                "message": {"role": "assistant", "content": None, "reasoning_content": "hmm"},
                "finish_reason": "length",
            }
        ]
    }
    r = parse_response(data)
    assert r.finish_reason == "length" and r.content == ""


@pytest.mark.parametrize(
    ("data", "error", "needle"),
    [
        ({"choices": []}, EmptyModelResponseError, "no choices"),
        ({}, EmptyModelResponseError, "no choices"),
        (_chat({"role": "assistant", "content": ""}), EmptyModelResponseError, "neither"),
        ({"error": {"message": "overloaded"}}, InvalidModelResponseError, "overloaded"),
        ([1, 2], InvalidModelResponseError, "JSON object"),
        ({"choices": "x"}, InvalidModelResponseError, "list of objects"),
        ({"choices": [{"text": "x"}]}, InvalidModelResponseError, "message"),
        (_chat({"content": 5}), InvalidModelResponseError, "string"),
        (_chat({"content": None, "tool_calls": [{"id": "1"}]}), InvalidModelResponseError, "name"),
        (_chat({"content": "x"}, token_ids="nope"), InvalidModelResponseError, "token_ids"),
        (
            _chat({"content": "x"}, logprobs={"content": [{"token": "x"}]}),
            InvalidModelResponseError,
            "logprobs",
        ),
    ],
)
def test_bad_shapes(data: Any, error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle):
        parse_response(data)


def test_tool_call_arguments_are_normalised_to_strings() -> None:
    data = _chat(
        {
            "content": None,
            "tool_calls": [
                {"function": {"name": "f", "arguments": {"a": 1}}},
                {"id": "c2", "type": "function", "function": {"name": "g"}},
            ],
        }
    )
    calls = parse_response(data).tool_calls
    assert calls == [
        {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]


def test_completions_shape() -> None:
    data = {
        "choices": [
            {
                "text": "out",
                "finish_reason": "stop",
                "prompt_token_ids": [1, 2],
                "token_ids": [3],
                "logprobs": {"token_logprobs": [-0.5]},
            }
        ]
    }
    r = parse_response(data, "completion")
    assert r.content == "out"
    assert (r.prompt_token_ids, r.completion_token_ids, r.completion_logprobs) == (
        [1, 2],
        [3],
        [-0.5],
    )
