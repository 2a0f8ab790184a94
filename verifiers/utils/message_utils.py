"""Message helpers of the classic ``verifiers.utils.message_utils`` module.

Messages here are :mod:`verifiers.messages` objects (``dict`` subclasses with attribute
access); these helpers convert, filter, print and serialise them.
"""

from __future__ import annotations

import json
import logging
import re
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


def _args_as_text(call: Any) -> Any:
    """A tool call whose ``function.arguments`` is JSON text (0.3.x keeps them as text)."""
    if not isinstance(call, Mapping):
        return call
    fn = call.get("function")
    if not isinstance(fn, Mapping) or isinstance(fn.get("arguments"), str):
        return call
    args = fn.get("arguments")
    try:
        text = json.dumps(args if args is not None else {})
    except (TypeError, ValueError):
        text = str(args)
    return {**call, "function": {**fn, "arguments": text}}


def from_raw_message(message: Mapping[str, Any]) -> ChatMessage:
    """A plain message dict as the message class for its role (an assistant's tool-call
    arguments as JSON text)."""
    if not isinstance(message, Mapping) or "role" not in message:
        raise ConfigError(
            f"a message must be a mapping with a 'role', got {type(message).__name__}: "
            f"{str(message)[:80]}"
        )
    calls = message.get("tool_calls")
    if message.get("role") == "assistant" and isinstance(calls, list):
        message = {**message, "tool_calls": [_args_as_text(c) for c in calls]}
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


def _plain_part(part: Any) -> Any:
    dump = getattr(part, "model_dump", None)  # a typed content part (vf.TextContentPart, ...)
    return dump(exclude_none=True) if callable(dump) and not isinstance(part, Mapping) else part


def _message_fields(message: Any) -> Mapping[str, Any] | None:
    if isinstance(message, Mapping):
        return message
    dump = getattr(message, "model_dump", None)
    return dump() if callable(dump) else None


def message_to_printable(message: Any) -> Any:
    """``message`` for logs: multimodal content becomes one line of text (text parts joined
    by spaces, ``[image]`` and ``[audio]`` for the others); other messages are unchanged."""
    fields = _message_fields(message)
    if fields is None or not isinstance(fields.get("content"), list):
        return message
    chunks = []
    for part in map(_plain_part, fields["content"]):
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            chunks.append(part["text"])
        elif kind in ("input_audio", "audio"):
            chunks.append("[audio]")
        elif kind == "image_url":
            chunks.append("[image]")
    text = " ".join(chunks).strip()
    if not isinstance(message, Mapping) and hasattr(message, "model_copy"):
        return message.model_copy(update={"content": text})
    out: dict[str, Any] = {"role": fields.get("role"), "content": text}
    if isinstance(fields.get("reasoning_content"), str):
        out["reasoning_content"] = fields["reasoning_content"]
    if fields.get("tool_calls") is not None:
        out["tool_calls"] = fields["tool_calls"]
    return out


def messages_to_printable(messages: Any) -> Any:
    if isinstance(messages, str):
        return messages
    return [message_to_printable(m) for m in messages or []]


def _audio_part_out(part: Mapping[str, Any]) -> dict[str, Any] | None:
    """The OpenAI ``input_audio`` part of an audio part (``{"type": "audio", "data",
    "format"}`` accepted too): base64 data without whitespace, a lower-case format; ``None``
    when either is missing."""
    payload = part.get("input_audio")
    if not isinstance(payload, Mapping) and part.get("type") == "audio":
        payload = part
    if not isinstance(payload, Mapping):
        return None
    data, fmt = payload.get("data"), payload.get("format")
    if not isinstance(data, str) or not isinstance(fmt, str):
        return None
    data, fmt = re.sub(r"\s+", "", data), fmt.strip().lower()
    if not data or not fmt:
        return None
    return {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}


def _image_part_out(part: Mapping[str, Any]) -> dict[str, Any] | None:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    return {"type": "image_url", "image_url": {"url": url}} if isinstance(url, str) else None


def serialize_message_for_output(message: Any) -> Any:
    """A message as saved in results: a plain dict in the OpenAI shape, multimodal parts
    included (audio as ``input_audio`` with compact data; an unusable audio part as the text
    ``[audio]``; an image part without a URL left out)."""
    fields = _message_fields(message)
    if fields is None:
        return message
    content = fields.get("content")
    if not isinstance(content, list):
        return to_plain(message) if isinstance(message, Mapping) else message
    parts: list[Any] = []
    for part in map(_plain_part, content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            if isinstance(part.get("text"), str):
                parts.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            image = _image_part_out(part)
            if image is not None:
                parts.append(image)
        elif kind in ("input_audio", "audio"):
            parts.append(_audio_part_out(part) or {"type": "text", "text": "[audio]"})
        else:
            parts.append(to_plain(part))
    out: dict[str, Any] = {"role": fields.get("role"), "content": parts}
    if isinstance(fields.get("reasoning_content"), str):
        out["reasoning_content"] = fields["reasoning_content"]
    if fields.get("tool_calls") is not None:
        out["tool_calls"] = to_plain(fields["tool_calls"])
    for key in ("tool_call_id", "name"):
        if isinstance(fields.get(key), str):
            out[key] = fields[key]
    return out


def serialize_messages_for_output(messages: Any) -> Any:
    if isinstance(messages, str):
        return messages
    return [serialize_message_for_output(m) for m in messages]


def _tool_call_json(call: Any) -> str:
    """One tool call as JSON text: a string kept, a mapping dumped, a model object (an OpenAI
    SDK tool call, anything with ``model_dump``) dumped without its ``None`` fields."""
    if isinstance(call, str):
        return call
    if not isinstance(call, Mapping):
        dump = getattr(call, "model_dump", None)
        if callable(dump):
            return json.dumps(to_plain(dump(exclude_none=True)))
    return json.dumps(to_plain(call))


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
            "tool_calls": [_tool_call_json(c) for c in calls],
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


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
