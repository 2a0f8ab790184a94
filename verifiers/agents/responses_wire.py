"""OpenAI's Responses API on the interception server (``POST .../v1/responses``, what Codex
speaks): a request read into the chat-shaped :class:`~verifiers.agents.calls.InterceptedCall`
through :class:`verifiers.v1.dialects.responses.ResponsesDialect`, and a model reply written
back as a ``response`` object or its server-sent events.

Function tools pass through as they are. A ``custom`` (free-form) tool is offered to the model
as a function taking one string, ``input``; a call of it goes back to the agent as a
``custom_tool_call`` with that string, and the agent's history of such calls is read back the
same way, so the model sees one consistent function. Provider tools without a schema
(``web_search``, ``local_shell`` ...) cannot be run by an OpenAI-compatible model and are left
out.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import ValidationError

from verifiers.agents._http import HttpError, json_object
from verifiers.agents.calls import InterceptedCall
from verifiers.types import ModelResponse

__all__ = ["RESPONSES_ROUTE", "response_body", "responses_call", "stream_events"]

RESPONSES_ROUTE = b"/v1/responses"
"""The Responses endpoint (under the channel's base path)."""

_CUSTOM_PARAMETERS = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "the tool's free-form input"}},
    "required": ["input"],
}


def _tool_schemas(tools: list[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The request's tools as chat function schemas, and the names of its custom tools."""
    schemas: list[dict[str, Any]] = []
    custom: list[str] = []
    for tool in tools:
        if tool.type not in ("function", "custom"):
            continue
        if tool.type == "custom":
            custom.append(tool.name)
        schemas.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": _CUSTOM_PARAMETERS if tool.type == "custom" else tool.parameters,
                },
            }
        )
    return schemas, custom


def _wire_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """v1 messages as chat messages, custom tool calls as calls of their function form (the
    Responses items an assistant message keeps are the agent's, not the model's: dropped)."""
    from verifiers.v1.dialects.chat import message_to_wire
    from verifiers.v1.types import AssistantMessage

    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls = [
                c.model_copy(
                    update={"type": "function", "arguments": json.dumps({"input": c.arguments})}
                )
                if c.type == "custom"
                else c
                for c in message.tool_calls or []
            ]
            message = message.model_copy(
                update={"provider_state": None, "tool_calls": calls or None}
            )
        out.append(message_to_wire(message))
    return out


def _sampling(body: Mapping[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for key in ("temperature", "top_p"):
        value = body.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            args[key] = value
    limit = body.get("max_output_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        args["max_tokens"] = limit
    if isinstance(body.get("parallel_tool_calls"), bool):
        args["parallel_tool_calls"] = body["parallel_tool_calls"]
    choice = body.get("tool_choice")
    if choice in ("auto", "none", "required"):
        args["tool_choice"] = choice
    elif isinstance(choice, Mapping) and isinstance(choice.get("name"), str):
        args["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    reasoning = body.get("reasoning")
    if isinstance(reasoning, Mapping) and isinstance(reasoning.get("effort"), str):
        args["reasoning_effort"] = reasoning["effort"]
    return args


def responses_call(raw: bytes | bytearray, default_model: str) -> InterceptedCall:
    """A Responses request as a chat-shaped call (a request it cannot read is a 400)."""
    from verifiers.v1.dialects.responses import ResponsesDialect

    body = json_object(raw)
    given = body.get("input")
    if not (isinstance(given, str) and given) and not (
        isinstance(given, list) and given and all(isinstance(i, dict) for i in given)
    ):
        raise HttpError(400, "'input' must be a non-empty string or list of item objects")
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise HttpError(400, "'tools' must be a list of objects")
    try:
        request = ResponsesDialect().parse_request(body)
        messages = _wire_messages(list(request.messages))
    except (ValidationError, TypeError, KeyError, AttributeError, ValueError) as exc:
        raise HttpError(400, f"invalid request: {type(exc).__name__}: {exc}"[:500]) from None
    schemas, custom = _tool_schemas(request.tools or [])
    model = body.get("model")
    return InterceptedCall(
        body=body,
        messages=messages,
        tools=schemas or None,
        stream=body.get("stream") is True,
        include_usage=True,
        sampling_args=_sampling(body),
        requested_model=model if isinstance(model, str) else default_model,
        dialect="responses",
        custom_tools=frozenset(custom),
    )


def _output_items(response: ModelResponse, custom: frozenset[str]) -> list[dict[str, Any]]:
    """The reply as Responses output items: reasoning, the message, then the tool calls."""
    message = response.message
    items: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{secrets.token_hex(12)}",
                "summary": [{"type": "summary_text", "text": reasoning}],
            }
        )
    content = message.get("content")
    if isinstance(content, str) and content:
        items.append(
            {
                "type": "message",
                "id": f"msg_{secrets.token_hex(12)}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": content, "annotations": []}],
            }
        )
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        arguments = function.get("arguments") or "{}"
        call_id = call.get("id") or f"call_{i}"
        if name in custom:
            try:
                parsed = json.loads(arguments)
            except (TypeError, ValueError):
                parsed = None
            text = (
                parsed["input"]
                if isinstance(parsed, dict) and isinstance(parsed.get("input"), str)
                else arguments
            )
            items.append(
                {"type": "custom_tool_call", "id": f"ctc_{secrets.token_hex(12)}",
                 "call_id": call_id, "name": name, "input": text, "status": "completed"}
            )  # fmt: skip
            continue
        items.append(
            {"type": "function_call", "id": f"fc_{secrets.token_hex(12)}", "call_id": call_id,
             "name": name, "arguments": arguments, "status": "completed"}
        )  # fmt: skip
    return items


def response_body(
    response: ModelResponse, model: str, custom: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``response`` as a Responses ``response`` object (``model``: the name the agent asked
    for; ``custom``: the request's custom tools)."""
    usage = response.usage
    incomplete = response.finish_reason == "length"
    return {
        "id": f"resp_{secrets.token_hex(12)}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "model": model,
        "output": _output_items(response, custom),
        "usage": {
            "input_tokens": usage.prompt_tokens,
            "output_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        },
    }


def stream_events(
    response: ModelResponse, model: str, custom: frozenset[str] = frozenset()
) -> bytes:
    """``response`` as the server-sent events of a streamed Responses reply:
    ``response.created``, each output item added (its text as one delta) and done, then
    ``response.completed`` (or ``response.incomplete``) with the whole response."""
    body = response_body(response, model, custom)
    seq = iter(range(1 << 30))

    def event(kind: str, data: dict[str, Any]) -> bytes:
        payload = {"type": kind, "sequence_number": next(seq), **data}
        return f"event: {kind}\ndata: ".encode() + orjson.dumps(payload) + b"\n\n"

    events = [
        event("response.created", {"response": {**body, "status": "in_progress", "output": []}})
    ]
    for index, item in enumerate(body["output"]):
        events.append(event("response.output_item.added", {"output_index": index, "item": item}))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events.append(event("response.output_text.delta", {**where, "delta": text}))
            events.append(event("response.output_text.done", {**where, "text": text}))
        events.append(event("response.output_item.done", {"output_index": index, "item": item}))
    final = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
    events.append(event(final, {"response": body}))
    return b"".join(events)
