"""The OpenAI chat-completions dialect: a request body read as v1 messages and tools, and v1
messages written as request messages (:func:`message_to_wire`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifiers.v1.dialects._tools import without_secrets
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
    "ChatDialect",
    "message_to_wire",
    "parse_content",
    "parse_message",
    "parse_tools",
    "reasoning_text",
]

_REASONING_KEYS = ("reasoning", "reasoning_content")


def parse_content(content: Any) -> MessageContent:
    """Chat content as v1 content: text stays text; text and image parts are kept, other
    part kinds dropped; None is empty text."""
    if not isinstance(content, list):
        return content or ""
    parts: list[ContentPart] = []
    for part in content:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text":
            parts.append(TextContentPart(text=part.get("text", "")))
        elif part.get("type") == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            parts.append(ImageUrlContentPart(image_url=ImageUrl(url=url)))
    return parts


def reasoning_text(data: Mapping[str, Any]) -> str | None:
    """An assistant message's reasoning, from whichever key the provider used
    (``reasoning``, ``reasoning_content``, else the texts of ``reasoning_details``)."""
    for key in _REASONING_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    details = data.get("reasoning_details")
    if not isinstance(details, list):
        return None
    texts = [
        text
        for detail in details
        if isinstance(detail, Mapping)
        for text in [detail.get("text") or detail.get("summary")]
        if isinstance(text, str) and text
    ]
    return "\n".join(texts) or None


def _tool_call(raw: Mapping[str, Any]) -> ToolCall:
    kind = raw.get("type") or ("custom" if raw.get("custom") is not None else "function")
    body = raw.get(kind)
    if not isinstance(body, Mapping):
        raise ValueError(f"tool call {raw.get('id')!r} of type {kind!r} has no {kind!r} object")
    return ToolCall(
        id=str(raw.get("id", "")),
        type="custom" if kind == "custom" else "function",
        name=body["name"],
        namespace=body.get("namespace"),
        arguments=body.get("input" if kind == "custom" else "arguments", ""),
    )


def parse_message(raw: Mapping[str, Any]) -> Message:
    """A chat request message as a v1 message (system, user and tool content keep their image
    parts; an assistant's content is flattened to text)."""
    role, content = raw.get("role"), raw.get("content")
    if role in ("system", "developer"):
        return SystemMessage(content=parse_content(content))
    if role == "tool":
        return ToolMessage(
            tool_call_id=str(raw.get("tool_call_id", "")),
            content=parse_content(content),
            name=raw.get("name"),
        )
    if role == "assistant":
        if isinstance(content, list):
            text = "".join(
                str(part.get("text", "")) for part in content if isinstance(part, Mapping)
            )
        else:
            text = content or ""
        details = raw.get("reasoning_details")
        calls = [_tool_call(call) for call in raw.get("tool_calls") or []]
        return AssistantMessage(
            content=text or None,
            reasoning_content=reasoning_text(raw),
            tool_calls=calls or None,
            provider_state=details if isinstance(details, list) and details else None,
        )
    return UserMessage(content=parse_content(content))


def parse_tools(raw: list[dict[str, Any]] | None) -> list[Tool] | None:
    """A chat request's tool declarations (a ``function`` declaration's body is nested under
    its type; an MCP server is named by its label and loses its credentials)."""
    tools: list[Tool] = []
    for declaration in raw or []:
        kind = declaration.get("type", "function")
        body = declaration.get(kind, declaration)
        body = without_secrets({**body, "type": kind})
        name = body.get("name") or body.get("server_label") or kind
        tools.append(Tool.model_validate({**body, "name": name}))
    return tools or None


class ChatDialect:
    """OpenAI chat completions (``/chat/completions``)."""

    name = "chat"

    def parse_request(self, body: Mapping[str, Any]) -> Request:
        """The request's conversation and tools. A tool result without a name takes the name
        of the call it answers."""
        if body.get("n", 1) != 1:
            raise ValueError(
                f"a chat completions request must ask for one choice (n=1), not n={body['n']}"
            )
        messages: list[Message] = []
        call_names: dict[str, str] = {}
        for raw in body.get("messages") or []:
            message = parse_message(raw)
            if isinstance(message, ToolMessage) and message.name is None:
                if message.tool_call_id in call_names:
                    message = message.model_copy(update={"name": call_names[message.tool_call_id]})
            elif isinstance(message, AssistantMessage):
                call_names.update({call.id: call.name for call in message.tool_calls or []})
            messages.append(message)
        return Request(messages=messages, tools=parse_tools(body.get("tools")))


def message_to_wire(message: Message) -> dict[str, Any]:
    """``message`` as a chat-completions request message. An assistant message always has a
    ``content`` key (strict providers reject a missing one), its provider state goes back as
    ``reasoning_details`` (else its reasoning as ``reasoning_content``), tool calls in the
    ``function`` shape."""
    kind = type(message)
    if kind is UserMessage or kind is SystemMessage:  # what model_dump gives, without it
        content = message.content
        if isinstance(content, str):
            return {"role": message.role, "content": content}
    if not isinstance(message, AssistantMessage):
        return message.model_dump(mode="json", exclude_none=True)
    content = message.content
    if content is None and not message.tool_calls:
        content = ""
    wire: dict[str, Any] = {"role": "assistant", "content": content}
    if message.provider_state:
        wire["reasoning_details"] = message.provider_state
    elif message.reasoning_content is not None:
        wire["reasoning_content"] = message.reasoning_content
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": call.type,
                call.type: {
                    "name": call.name,
                    "input" if call.type == "custom" else "arguments": call.arguments,
                },
            }
            for call in message.tool_calls
        ]
    return wire
