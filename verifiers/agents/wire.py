"""A model's answer in the OpenAI chat-completions wire format, whole or as server-sent events
(what the interception server writes back to an agent of that dialect)."""

from __future__ import annotations

import secrets
import time
from typing import Any

import orjson

from verifiers.types import ModelResponse

__all__ = ["chat_completion_body", "finish_reason", "message_out", "sse_events", "usage_body"]


def message_out(response: ModelResponse) -> dict[str, Any]:
    msg = response.message
    out: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
    calls = msg.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": c.get("id") or f"call_{i}",
                "type": "function",
                "function": {
                    "name": c["function"]["name"],
                    "arguments": c["function"].get("arguments") or "{}",
                },
            }
            for i, c in enumerate(calls)
        ]
    reasoning = msg.get("reasoning_content")
    if reasoning:
        out["reasoning_content"] = reasoning
    return out


def usage_body(response: ModelResponse) -> dict[str, int]:
    u = response.usage
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }


def finish_reason(response: ModelResponse) -> str:
    if response.finish_reason:
        return response.finish_reason
    return "tool_calls" if response.message.get("tool_calls") else "stop"


def chat_completion_body(response: ModelResponse, model: str) -> dict[str, Any]:
    """``response`` as an OpenAI ``chat.completion`` object."""
    return {
        "id": response.id or f"chatcmpl-{secrets.token_hex(8)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message_out(response),
                "finish_reason": finish_reason(response),
                "logprobs": None,
            }
        ],
        "usage": usage_body(response),
    }


def sse_events(response: ModelResponse, model: str, include_usage: bool) -> bytes:
    """``response`` as the server-sent events of a streamed ``chat.completion.chunk``."""
    base = {
        "id": response.id or f"chatcmpl-{secrets.token_hex(8)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    message = message_out(response)
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("reasoning_content"):
        delta["reasoning_content"] = message["reasoning_content"]
    chunks: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    ]
    for i, call in enumerate(message.get("tool_calls") or []):
        tc = {"index": i, **call}
        chunks.append(
            {
                **base,
                "choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}],
            }
        )
    chunks.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason(response)}]}
    )
    if include_usage:
        chunks.append({**base, "choices": [], "usage": usage_body(response)})
    out = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks)
    return out + b"data: [DONE]\n\n"
