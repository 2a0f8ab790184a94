"""Message helpers of the classic ``verifiers.utils.message_utils`` module.

Messages here are :mod:`verifiers.messages` objects (``dict`` subclasses with attribute
access); these helpers convert, filter, print and serialise them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from verifiers.errors import ConfigError
from verifiers.messages import ChatMessage, as_message, to_plain

__all__ = [
    "MessageInput",
    "MessageLike",
    "MessageRole",
    "concat_messages",
    "format_messages",
    "from_raw_message",
    "get_messages",
    "maybe_normalize_messages",
    "message_role",
    "message_to_printable",
    "messages_to_printable",
    "normalize_messages",
    "sanitize_tool_calls",
    "serialize_message_for_output",
    "serialize_messages_for_output",
]

logger = logging.getLogger("verifiers.utils.message_utils")

MessageLike: TypeAlias = Mapping[str, Any]
MessageInput: TypeAlias = str | Sequence[MessageLike]
MessageRole: TypeAlias = Literal["text", "system", "user", "assistant", "tool"]


def from_raw_message(message: Mapping[str, Any]) -> ChatMessage:
    """A plain message dict as the message class for its role."""
    if not isinstance(message, Mapping) or "role" not in message:
        raise ConfigError(
            f"a message must be a mapping with a 'role', got {type(message).__name__}: "
            f"{str(message)[:80]}"
        )
    converted: ChatMessage = as_message(message)
    return converted


def normalize_messages(value: MessageInput, *, field_name: str = "messages") -> list[ChatMessage]:
    """Text (one user message) or a sequence of messages as message objects."""
    if isinstance(value, str):
        return [as_message({"role": "user", "content": value})]
    if not isinstance(value, Sequence):
        raise ConfigError(
            f"{field_name} must be text or a list of messages, not {type(value).__name__}"
        )
    out = []
    for m in value:
        if not isinstance(m, Mapping):
            raise ConfigError(
                f"{field_name} must hold messages (mappings with a 'role'), got "
                f"{type(m).__name__}: {str(m)[:80]}"
            )
        out.append(from_raw_message(m))
    return out


def maybe_normalize_messages(value: Any, *, field_name: str = "messages") -> list[ChatMessage]:
    """:func:`normalize_messages` unless ``value`` already holds message objects only."""
    if isinstance(value, list) and all(isinstance(m, ChatMessage) for m in value):
        return value
    return normalize_messages(value, field_name=field_name)


def get_messages(messages: Sequence[Any], role: MessageRole | None = None) -> list[ChatMessage]:
    """The messages as objects, only those of ``role`` when given."""
    normalized = normalize_messages(messages)
    return normalized if role is None else [m for m in normalized if m.get("role") == role]


def message_role(message: Any) -> str | None:
    value = message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)
    return value if isinstance(value, str) else None


def concat_messages(messages_list: list[list[Any]]) -> list[Any]:
    """One list holding the messages of every list, in order."""
    return [m for messages in messages_list for m in messages]


def _printable_part(part: Any) -> Any:
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    if kind == "image_url":
        return {"type": "text", "text": "[image]"}
    if kind in ("input_audio", "audio"):
        return {"type": "text", "text": "[audio]"}
    return dict(part)


def message_to_printable(message: Any) -> Any:
    """A plain copy of ``message`` with images and audio replaced by short placeholders."""
    if not isinstance(message, Mapping):
        return message
    out = to_plain(message)
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [_printable_part(p) for p in content]
    return out


def messages_to_printable(messages: Any) -> Any:
    if isinstance(messages, str):
        return messages
    return [message_to_printable(m) for m in messages]


def serialize_message_for_output(message: Any) -> Any:
    """A message as saved in results: a plain dict (OpenAI shape)."""
    if isinstance(message, Mapping):
        return to_plain(message)
    dump = getattr(message, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else message


def serialize_messages_for_output(messages: Any) -> Any:
    if isinstance(messages, str):
        return messages
    return [serialize_message_for_output(m) for m in messages]


def sanitize_tool_calls(messages: Any) -> Any:
    """Messages with each tool call as its JSON text (the classic trainer transport shape)."""
    if not isinstance(messages, list):
        return messages
    out = []
    for m in messages:
        calls = m.get("tool_calls") if isinstance(m, Mapping) else None
        if not calls:
            out.append(m)
            continue
        plain: dict[str, Any] = {
            "role": m["role"],
            "content": m.get("content") or "",
            "tool_calls": [c if isinstance(c, str) else json.dumps(to_plain(c)) for c in calls],
        }
        if isinstance(m.get("reasoning_content"), str):
            plain["reasoning_content"] = m["reasoning_content"]
        out.append(plain)
    return out


def format_messages(messages: Any) -> str:
    """The conversation as readable text, one ``role: content`` block per message (tool calls
    as ``-> name(arguments)``)."""
    if isinstance(messages, str):
        return messages
    blocks = []
    for m in messages:
        role = message_role(m) or "?"
        content = m.get("content") if isinstance(m, Mapping) else getattr(m, "content", "")
        if isinstance(content, list):
            content = " ".join(
                str(p.get("text", "[media]")) if isinstance(p, Mapping) else str(p) for p in content
            )
        lines = [f"{role}: {content or ''}"]
        for call in (m.get("tool_calls") if isinstance(m, Mapping) else None) or []:
            fn = call.get("function") or call
            lines.append(f"  -> {fn.get('name')}({fn.get('arguments')})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
