"""The Anthropic Messages dialect (``POST /v1/messages``: the ``anthropic`` SDK, Claude Code).

Request side: a Messages body read as v1 messages and tools (:meth:`AnthropicDialect.parse_request`)
and as chat-completions sampling arguments (:meth:`AnthropicDialect.parse_sampling`), so that an
agent written against the Messages API can be answered by any OpenAI-compatible model. Response
side: a model reply (:class:`verifiers.types.ModelResponse`, chat shaped) written as a Messages
``message`` object (:meth:`AnthropicDialect.response_body`) or as its server-sent events
(:meth:`AnthropicDialect.stream_events`), and errors in Anthropic's error shape.

A malformed request raises :class:`AnthropicRequestError`, whose message names the field.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

from verifiers.types import ModelResponse
from verifiers.v1.types import (
    AssistantMessage,
    ContentPart,
    ImageUrl,
    ImageUrlContentPart,
    Message,
    MessageContent,
    Request,
    SystemMessage,
    TextContentPart,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
)

__all__ = [
    "ERROR_TYPES",
    "STOP_REASONS",
    "AnthropicDialect",
    "AnthropicRequestError",
    "error_body",
    "parse_content",
    "parse_messages",
    "parse_tools",
    "response_body",
    "stream_events",
]

STOP_REASONS: dict[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
"""A chat-completions ``finish_reason`` as a Messages ``stop_reason``."""

ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    411: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    431: "request_too_large",
    529: "overloaded_error",
}
"""Anthropic's error ``type`` for an HTTP status (any other status: ``api_error``)."""

# thinking budgets (tokens) below which the request reads as a low / medium reasoning effort
_EFFORT_BUDGETS = ((4096, "low"), (16384, "medium"))


class AnthropicRequestError(ValueError):
    """A Messages request that cannot be read; ``field`` is the offending path."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise AnthropicRequestError(where, f"must be an object, not {type(value).__name__}")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise AnthropicRequestError(where, f"must be a string, not {type(value).__name__}")
    return value


def _blocks(content: Any, where: str) -> list[Mapping[str, Any]]:
    """Content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise AnthropicRequestError(
            where, f"must be a string or a list of content blocks, not {type(content).__name__}"
        )
    blocks = [_object(block, f"{where}[{i}]") for i, block in enumerate(content)]
    for i, block in enumerate(blocks):
        _string(block.get("type"), f"{where}[{i}].type")
    return blocks


def _image(block: Mapping[str, Any], where: str) -> ImageUrlContentPart:
    source = _object(block.get("source"), f"{where}.source")
    if source.get("type") == "url":
        url = _string(source.get("url"), f"{where}.source.url")
    elif source.get("type") == "base64":
        media = _string(source.get("media_type"), f"{where}.source.media_type")
        url = f"data:{media};base64,{_string(source.get('data'), f'{where}.source.data')}"
    else:
        raise AnthropicRequestError(
            f"{where}.source.type", "an image source must be 'base64' or 'url'"
        )
    return ImageUrlContentPart(image_url=ImageUrl(url=url))


def parse_content(content: Any, where: str = "content") -> MessageContent:
    """User-side content as v1 content: text and image blocks are kept (a lone text block is
    plain text), other block kinds (documents, citations, cache hints) are dropped."""
    if isinstance(content, str):
        return content
    parts: list[ContentPart] = []
    for i, block in enumerate(_blocks(content, where)):
        if block["type"] == "text":
            parts.append(TextContentPart(text=_string(block.get("text"), f"{where}[{i}].text")))
        elif block["type"] == "image":
            parts.append(_image(block, f"{where}[{i}]"))
    if len(parts) == 1 and isinstance(parts[0], TextContentPart):
        return parts[0].text
    return parts


def _assistant(content: Any, where: str) -> AssistantMessage:
    """An assistant turn's blocks folded into one message: text is its content, thinking its
    reasoning, tool_use blocks its tool calls (the input as a JSON string)."""
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    for i, block in enumerate(_blocks(content, where)):
        at = f"{where}[{i}]"
        kind = block["type"]
        if kind == "text":
            text.append(_string(block.get("text"), f"{at}.text"))
        elif kind == "thinking":
            thinking.append(_string(block.get("thinking"), f"{at}.thinking"))
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=_string(block.get("id"), f"{at}.id"),
                    name=_string(block.get("name"), f"{at}.name"),
                    arguments=json.dumps(dict(_object(block.get("input", {}), f"{at}.input"))),
                )
            )
    return AssistantMessage(
        content="".join(text) or None,
        reasoning_content="".join(thinking) or None,
        tool_calls=calls or None,
    )


def _tool_result(block: Mapping[str, Any], where: str, names: Mapping[str, str]) -> ToolMessage:
    call_id = _string(block.get("tool_use_id"), f"{where}.tool_use_id")
    content = block.get("content", "")
    parsed = parse_content(content, f"{where}.content") if content is not None else ""
    if block.get("is_error") is True:
        # the chat shape has no error flag: the model reads it from the text instead
        prefix = TextContentPart(text="Error: ")
        parsed = f"Error: {parsed}" if isinstance(parsed, str) else [prefix, *parsed]
    return ToolMessage(tool_call_id=call_id, content=parsed, name=names.get(call_id))


def parse_messages(body: Mapping[str, Any]) -> list[Message]:
    """``system`` and ``messages`` as v1 messages (a ``system`` role in ``messages``, which
    Claude Code sends, is a system message where it stands). A user turn's ``tool_result`` blocks become
    tool messages (named after the call they answer), its other blocks one user message after
    them."""
    out: list[Message] = []
    system = body.get("system")
    if system is not None and system != "" and system != []:
        out.append(SystemMessage(content=parse_content(system, "system")))
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise AnthropicRequestError("messages", "must be a non-empty list of messages")
    names: dict[str, str] = {}
    for i, item in enumerate(raw):
        where = f"messages[{i}]"
        message = _object(item, where)
        role = message.get("role")
        if "content" not in message:
            raise AnthropicRequestError(f"{where}.content", "is missing")
        content = message["content"]
        if role == "assistant":
            reply = _assistant(content, f"{where}.content")
            names.update({call.id: call.name for call in reply.tool_calls or []})
            out.append(reply)
        elif role == "user":
            rest: list[Mapping[str, Any]] = []
            for j, block in enumerate(_blocks(content, f"{where}.content")):
                if block["type"] == "tool_result":
                    out.append(_tool_result(block, f"{where}.content[{j}]", names))
                else:
                    rest.append(block)
            if isinstance(content, str):
                out.append(UserMessage(content=content))
            elif rest:
                out.append(UserMessage(content=parse_content(rest, f"{where}.content")))
        elif role == "system":  # Claude Code sends these mid-conversation (reminders)
            out.append(SystemMessage(content=parse_content(content, f"{where}.content")))
        else:
            raise AnthropicRequestError(
                f"{where}.role", f"must be 'user', 'assistant' or 'system', not {role!r}"
            )
    return out


def parse_tools(raw: Any) -> list[Tool] | None:
    """Client tools (``name``, ``description``, ``input_schema``) as v1 function tools.
    Anthropic's own typed tools (``web_search_...``, ``bash_...``) run at Anthropic or need its
    fixed schemas, which an OpenAI-compatible model does not have: they are refused."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise AnthropicRequestError("tools", "must be a list of tool declarations")
    tools: list[Tool] = []
    for i, item in enumerate(raw):
        where = f"tools[{i}]"
        declaration = _object(item, where)
        kind = declaration.get("type")
        if kind not in (None, "custom"):
            raise AnthropicRequestError(
                f"{where}.type",
                f"Anthropic's own tool {kind!r} cannot be run by an OpenAI-compatible model; "
                "declare it as a client tool with a name and an input_schema",
            )
        schema = _object(declaration.get("input_schema"), f"{where}.input_schema")
        description = declaration.get("description") or ""
        tools.append(
            Tool(
                name=_string(declaration.get("name"), f"{where}.name"),
                description=_string(description, f"{where}.description"),
                parameters=dict(schema),
            )
        )
    return tools or None


def _tool_choice(choice: Any) -> tuple[Any, bool | None]:
    """``tool_choice`` in the chat shape, and ``parallel_tool_calls`` where it is switched
    off (``disable_parallel_tool_use``)."""
    given = _object(choice, "tool_choice")
    kind = given.get("type")
    if kind == "auto":
        mapped: Any = "auto"
    elif kind == "any":
        mapped = "required"
    elif kind == "none":
        mapped = "none"
    elif kind == "tool":
        name = _string(given.get("name"), "tool_choice.name")
        mapped = {"type": "function", "function": {"name": name}}
    else:
        raise AnthropicRequestError(
            "tool_choice.type", f"must be 'auto', 'any', 'tool' or 'none', not {kind!r}"
        )
    serial = given.get("disable_parallel_tool_use") is True
    return mapped, False if serial and kind != "none" else None


def _effort(body: Mapping[str, Any]) -> str | None:
    """The reasoning effort the request asks for: ``output_config.effort``, else an enabled
    ``thinking`` block's budget in three bands (under 4096 tokens low, under 16384 medium,
    else high)."""
    config = body.get("output_config")
    if config is not None:
        effort = _object(config, "output_config").get("effort")
        if effort is not None:
            return _string(effort, "output_config.effort")
    thinking = body.get("thinking")
    if thinking is None:
        return None
    thinking = _object(thinking, "thinking")
    kind = thinking.get("type")
    if kind in ("disabled", "adaptive"):
        return None
    if kind != "enabled":
        raise AnthropicRequestError(
            "thinking.type", f"must be 'enabled', 'disabled' or 'adaptive', not {kind!r}"
        )
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
        raise AnthropicRequestError("thinking.budget_tokens", "must be a positive integer")
    return next((effort for limit, effort in _EFFORT_BUDGETS if budget < limit), "high")


def _number(body: Mapping[str, Any], key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise AnthropicRequestError(key, f"must be a number, not {type(value).__name__}")
    return float(value)


def _positive_int(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise AnthropicRequestError(key, f"must be a positive integer, not {value!r}")
    return value


def parse_sampling(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request's sampling settings as chat-completions sampling arguments: ``max_tokens``,
    ``temperature``, ``top_p``, ``top_k`` as they are, ``stop_sequences`` as ``stop``,
    ``tool_choice`` in the chat shape, ``thinking`` / ``output_config.effort`` as
    ``reasoning_effort``."""
    args: dict[str, Any] = {}
    for key in ("temperature", "top_p"):
        number = _number(body, key)
        if number is not None:
            args[key] = number
    for key in ("max_tokens", "top_k"):
        count = _positive_int(body, key)
        if count is not None:
            args[key] = count
    stops = body.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise AnthropicRequestError("stop_sequences", "must be a list of strings")
        if stops:
            args["stop"] = list(stops)
    if body.get("tool_choice") is not None:
        args["tool_choice"], parallel = _tool_choice(body["tool_choice"])
        if parallel is not None:
            args["parallel_tool_calls"] = parallel
    effort = _effort(body)
    if effort is not None:
        args["reasoning_effort"] = effort
    return args


# the reply ----------------------------------------------------------------------------------


def _tool_input(arguments: Any) -> dict[str, Any]:
    """A tool call's JSON arguments as the ``input`` object (arguments that are not a JSON
    object, which a model may produce, become an empty input)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _content_blocks(response: ModelResponse) -> list[dict[str, Any]]:
    """The reply's blocks in Anthropic's order: thinking, text, tool uses."""
    message = response.message
    blocks: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    content = message.get("content")
    if isinstance(content, str) and content:
        blocks.append({"type": "text", "text": content})
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"call_{i}",
                "name": function.get("name", ""),
                "input": _tool_input(function.get("arguments")),
            }
        )
    return blocks


def _stop(response: ModelResponse) -> tuple[str, str | None]:
    """``stop_reason`` and ``stop_sequence``: a stop string the backend reports matched
    (vLLM's ``stop_reason``) is ``stop_sequence``; a reply with tool calls is ``tool_use``."""
    if response.finish_reason == "length":
        return "max_tokens", None
    if response.message.get("tool_calls"):
        return "tool_use", None
    if response.stop_sequence is not None:
        return "stop_sequence", response.stop_sequence
    return STOP_REASONS.get(response.finish_reason or "stop", "end_turn"), None


def _usage(response: ModelResponse) -> dict[str, int]:
    return {
        "input_tokens": response.usage.prompt_tokens,
        "output_tokens": response.usage.completion_tokens,
    }


def _message_id(response: ModelResponse) -> str:
    if response.id and response.id.startswith("msg_"):
        return response.id
    return f"msg_{secrets.token_hex(12)}"


def response_body(response: ModelResponse, model: str) -> dict[str, Any]:
    """``response`` as a Messages ``message`` object (``model``: the name the agent asked for)."""
    stop_reason, stop_sequence = _stop(response)
    return {
        "id": _message_id(response),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _content_blocks(response),
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": _usage(response),
    }


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: ".encode() + json.dumps({"type": kind, **data}).encode() + b"\n\n"


def _block_events(index: int, block: dict[str, Any]) -> list[bytes]:
    kind = block["type"]
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    else:
        start = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    return [
        _event("content_block_start", {"index": index, "content_block": start}),
        *(_event("content_block_delta", {"index": index, "delta": d}) for d in deltas),
        _event("content_block_stop", {"index": index}),
    ]


def stream_events(response: ModelResponse, model: str) -> bytes:
    """``response`` as the server-sent events of a streamed Messages reply: ``message_start``,
    each block's start / delta / stop, ``message_delta`` (stop reason, output tokens) and
    ``message_stop``."""
    body = response_body(response, model)
    head = {
        **body,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**body["usage"], "output_tokens": 0},
    }
    events = [_event("message_start", {"message": head})]
    for index, block in enumerate(body["content"]):
        events.extend(_block_events(index, block))
    events.append(
        _event(
            "message_delta",
            {
                "delta": {
                    "stop_reason": body["stop_reason"],
                    "stop_sequence": body["stop_sequence"],
                },
                "usage": {"output_tokens": body["usage"]["output_tokens"]},
            },
        )
    )
    events.append(_event("message_stop", {}))
    return b"".join(events)


def error_body(status: int, message: str) -> dict[str, Any]:
    """An error in Anthropic's shape, its ``type`` following the HTTP status."""
    return {
        "type": "error",
        "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message},
    }


class AnthropicDialect:
    """Anthropic Messages (``/v1/messages``)."""

    name = "anthropic"
    routes = ("/v1/messages",)

    def parse_request(self, body: Mapping[str, Any]) -> Request:
        """The request's conversation (``system`` first) and its client tools."""
        return Request(messages=parse_messages(body), tools=parse_tools(body.get("tools")))

    def parse_sampling(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The request's sampling settings as chat-completions sampling arguments."""
        return parse_sampling(body)

    def response_body(self, response: ModelResponse, model: str) -> dict[str, Any]:
        return response_body(response, model)

    def stream_events(self, response: ModelResponse, model: str) -> bytes:
        return stream_events(response, model)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return error_body(status, message)
