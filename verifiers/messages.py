"""Chat messages readable both ways: ``m["role"]`` and ``m.role``.

Classic (0.3.x) environment code reads messages as objects (``completion[-1].content``,
``msg.tool_calls[0].name``) as often as it indexes them as dicts. The classes here are ``dict``
subclasses, so both spellings work, ``==`` against plain dicts holds, and ``json``/``orjson``
write them as plain JSON objects with no conversion step.

Tool calls keep the OpenAI wire shape (``{"id", "type": "function", "function": {"name",
"arguments"}}``) and also answer the classic flat names: ``call.name``, ``call.arguments``,
``call["name"]``.

:func:`as_message` and :func:`as_messages` turn plain dicts (from a dataset row, a reply built by
hand) into the class for their role; the environment applies them to prompts, model replies and
environment replies, so reward functions see the same objects whichever way they read them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

__all__ = [
    "AssistantMessage",
    "ChatMessage",
    "SystemMessage",
    "TextMessage",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    "as_message",
    "as_messages",
    "as_tool_call",
    "to_plain",
]

# fields a message of any role answers as ``None`` when absent (0.3.x models declare them)
_OPTIONAL_FIELDS = frozenset(
    {"content", "tool_calls", "reasoning_content", "thinking_blocks", "tool_call_id", "name"}
)


class ChatMessage(dict[str, Any]):
    """A chat message: a ``dict`` that also answers attribute access.

    Construct with keywords (``vf.UserMessage(content="hi")``) or from a mapping. A missing
    optional field (``content``, ``tool_calls``, ``reasoning_content``, ``tool_call_id``,
    ``name``) reads as ``None`` through an attribute, as on 0.3.x's message models.
    """

    __slots__ = ()
    default_role: ClassVar[str | None] = None

    def __init__(self, data: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        super().__init__(data or (), **fields)
        if self.default_role is not None:
            self.setdefault("role", self.default_role)
        calls = self.get("tool_calls")
        if calls:
            super().__setitem__("tool_calls", [as_tool_call(c) for c in calls])

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            if name in _OPTIONAL_FIELDS:
                return None
            raise AttributeError(
                f"{type(self).__name__} has no field {name!r} (fields: {', '.join(self)})"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "tool_calls" and value:
            value = [as_tool_call(c) for c in value]
        super().__setitem__(key, value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"

    def __copy__(self) -> ChatMessage:
        return type(self)(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> ChatMessage:
        return type(self)({k: copy.deepcopy(v, memo) for k, v in self.items()})

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def copy(self) -> ChatMessage:  # type: ignore[override]
        return type(self)(self)

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """A deep plain-``dict`` copy (the 0.3.x pydantic spelling)."""
        plain: dict[str, Any] = to_plain(self)
        return plain

    def model_copy(self, *, update: Mapping[str, Any] | None = None, **_: Any) -> ChatMessage:
        out = copy.deepcopy(self)
        out.update(update or {})
        return out


class SystemMessage(ChatMessage):
    __slots__ = ()
    default_role = "system"

    @classmethod
    def from_path(cls, path: str | Path) -> SystemMessage:
        """A system message holding a text file's contents."""
        return cls(content=Path(path).read_text(encoding="utf-8"))


class UserMessage(ChatMessage):
    __slots__ = ()
    default_role = "user"


class AssistantMessage(ChatMessage):
    __slots__ = ()
    default_role = "assistant"


class ToolMessage(ChatMessage):
    __slots__ = ()
    default_role = "tool"


class TextMessage(ChatMessage):
    """Raw text of a completions-API turn (``role: "text"``)."""

    __slots__ = ()
    default_role = "text"


class ToolCall(dict[str, Any]):
    """One tool call in the OpenAI shape, also readable flat: ``.id``, ``.name``, ``.arguments``
    (the JSON text of the arguments), as attributes or keys.

    ``ToolCall(id=..., name=..., arguments=...)`` (the classic constructor) builds the OpenAI
    shape.
    """

    __slots__ = ()

    def __init__(self, data: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        raw = {**(data or {}), **fields}
        if "function" not in raw and "name" in raw:
            args = raw.pop("arguments", None)
            raw = {
                "id": raw.pop("id", ""),
                "type": raw.pop("type", "function"),
                "function": {"name": raw.pop("name"), "arguments": _args_text(args)},
                **raw,
            }
        fn = raw.get("function")
        if isinstance(fn, Mapping):
            raw["function"] = dict(fn)
        super().__init__(raw)
        self.setdefault("type", "function")

    def _function(self) -> Mapping[str, Any]:
        fn = dict.get(self, "function")
        return fn if isinstance(fn, Mapping) else {}

    def __missing__(self, key: str) -> Any:
        if key in ("name", "arguments"):
            fn = self._function()
            if key in fn:
                return fn[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (
            key in ("name", "arguments") and key in self._function()
        )

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"ToolCall has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __setitem__(self, key: str, value: Any) -> None:
        if key in ("name", "arguments") and not dict.__contains__(self, key):
            fn = dict(self._function())
            fn[key] = _args_text(value) if key == "arguments" else value
            dict.__setitem__(self, "function", fn)
            return
        dict.__setitem__(self, key, value)

    def __repr__(self) -> str:
        return f"ToolCall({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ToolCall, (dict(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> ToolCall:
        return ToolCall(copy.deepcopy(dict(self), memo))

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """The 0.3.x flat shape: ``{"id", "name", "arguments"}``."""
        return {"id": self.get("id"), "name": self.get("name"), "arguments": self.get("arguments")}


def _args_text(args: Any) -> str:
    if args is None:
        return "{}"
    if isinstance(args, str):
        return args
    import json

    return json.dumps(args)


_BY_ROLE: dict[str, type[ChatMessage]] = {
    "system": SystemMessage,
    "developer": SystemMessage,
    "user": UserMessage,
    "assistant": AssistantMessage,
    "tool": ToolMessage,
    "text": TextMessage,
}


def as_tool_call(call: Any) -> Any:
    """``call`` as a :class:`ToolCall` (mappings only; anything else is returned as is)."""
    if isinstance(call, ToolCall):
        return call
    if isinstance(call, Mapping):
        return ToolCall(call)
    dump = getattr(call, "model_dump", None)  # a pydantic tool call (openai's, 0.3.x's)
    if callable(dump):
        return ToolCall(dump())
    return call


def as_message(message: Any) -> Any:
    """``message`` as the :class:`ChatMessage` class for its role.

    Already-converted messages are returned as they are (no copy); other mappings and pydantic
    messages are converted; anything else (a string) is returned unchanged.
    """
    if isinstance(message, ChatMessage):
        return message
    if not isinstance(message, Mapping):
        dump = getattr(message, "model_dump", None)
        if not callable(dump):
            return message
        message = dump(exclude_none=True)
    cls = _BY_ROLE.get(str(message.get("role")), ChatMessage)
    return cls(message)


def as_messages(messages: Any) -> Any:
    """A list of messages converted by :func:`as_message`, in place (a string is returned as
    is: completions-API prompts are text)."""
    if isinstance(messages, list):
        for i, m in enumerate(messages):
            if not isinstance(m, ChatMessage):
                messages[i] = as_message(m)
        return messages
    if isinstance(messages, tuple | Iterable) and not isinstance(messages, str | bytes | Mapping):
        return [as_message(m) for m in messages]
    return messages


def to_plain(value: Any) -> Any:
    """A deep copy of ``value`` with every message and tool call as a plain ``dict``."""
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    return value
