"""Building the assistant messages that ask for tool calls (OpenAI chat format), for oracles,
scripted models and tests::

    vf.tool_call_message(vf.tool_call("search", {"query": "moon"}, id="call_0"))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from verifiers.types import Message


def tool_call(name: str, arguments: Mapping[str, Any] | str, *, id: str) -> dict[str, Any]:
    """One function tool call: ``arguments`` as a mapping (JSON-encoded here) or as the JSON
    string the model would send (kept as given, so a test can send malformed arguments)."""
    if not name:
        raise ValueError("a tool call needs the tool's name")
    if not id:
        raise ValueError(f"the call to {name!r} needs an id (the tool message answers to it)")
    if not isinstance(arguments, str):
        arguments = json.dumps(dict(arguments))
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_call_message(*calls: dict[str, Any], content: str | None = None) -> Message:
    """An assistant message asking for ``calls`` (built with :func:`tool_call`), in order; more
    than one is a parallel call. ``content`` is the text sent alongside, if any."""
    if not calls:
        raise ValueError("a tool-call message needs at least one call; send text without one")
    ids = [c.get("id") for c in calls]
    if len(set(ids)) != len(ids):
        raise ValueError(f"tool call ids must be unique within a message, got {ids}")
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}
