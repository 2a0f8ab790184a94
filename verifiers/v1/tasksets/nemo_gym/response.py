"""A finished trace as the Responses-API object NeMo Gym's ``/verify`` reads."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from verifiers.v1.trace import Trace
from verifiers.v1.types import AssistantMessage, ToolMessage

__all__ = ["trace_to_nemo_response"]

_NATIVE_ITEMS = frozenset({"reasoning", "message", "function_call", "custom_tool_call"})


def _assistant_items(trace: Trace, message: AssistantMessage, at: int) -> list[dict[str, Any]]:
    """One sampled reply as output items: its provider's own items where it kept them all,
    else its reasoning (a summary), its text and its calls, in that order."""
    state = message.provider_state
    if state and all(item.get("type") in _NATIVE_ITEMS for item in state):
        return list(state)
    items: list[dict[str, Any]] = []
    if message.reasoning_content:
        summary = [{"type": "summary_text", "text": message.reasoning_content}]
        items.append({"id": f"rs_{trace.id}_{at}", "type": "reasoning", "summary": summary})
    if message.content:
        text = message.content if isinstance(message.content, str) else str(message.content)
        items.append(
            {
                "id": f"msg_{trace.id}_{at + len(items)}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for call in message.tool_calls or []:
        custom = call.type == "custom"
        item: dict[str, Any] = {
            "type": "custom_tool_call" if custom else "function_call",
            "call_id": call.id,
            "name": call.name,
        }
        if call.namespace:
            item["namespace"] = call.namespace
        item["input" if custom else "arguments"] = call.arguments
        items.append(item)
    return items


def _tool_output(message: ToolMessage, custom: bool) -> dict[str, Any]:
    content = message.content
    if not isinstance(content, str):
        content = json.dumps([part.model_dump(mode="json") for part in content])
    return {
        "type": "custom_tool_call_output" if custom else "function_call_output",
        "call_id": message.tool_call_id,
        "output": content,
    }


def trace_to_nemo_response(
    trace: Trace, responses_create_params: dict[str, Any], tool_names: Collection[str]
) -> dict[str, Any]:
    """The trace's one branch from its first sampled reply on, as a Responses object: each
    reply's items and each later tool result. A call named ``mcp__<server>__<tool>`` (how some
    harnesses name MCP tools) is given back the server's own tool name. A trace that branched
    cannot be scored this way (ValueError)."""
    branches = trace.branches
    if len(branches) != 1:
        raise ValueError(f"NeMo Gym scoring needs a trace with one branch, not {len(branches)}")
    output: list[dict[str, Any]] = []
    custom_calls: set[str] = set()
    replied = False
    for node in branches[0].nodes:
        message = node.message
        if isinstance(message, AssistantMessage) and node.sampled:
            replied = True
            custom_calls.update(c.id for c in message.tool_calls or [] if c.type == "custom")
            output.extend(_assistant_items(trace, message, len(output)))
        elif replied and isinstance(message, ToolMessage):
            output.append(_tool_output(message, message.tool_call_id in custom_calls))
    longest_first = sorted(tool_names, key=len, reverse=True)
    for i, item in enumerate(output):
        name = item.get("name")
        if item.get("type") != "function_call" or not isinstance(name, str):
            continue
        if name in tool_names or not name.startswith("mcp__"):
            continue
        own = next((t for t in longest_first if name.endswith(f"__{t}")), None)
        if own is not None:
            output[i] = {**item, "name": own}
    params = responses_create_params
    return {
        "id": f"resp_{trace.id}",
        "created_at": branches[0].nodes[-1].timestamp,
        "model": str(params.get("model") or "verifiers"),
        "object": "response",
        "output": output,
        "parallel_tool_calls": params.get("parallel_tool_calls", True),
        "tool_choice": params.get("tool_choice", "auto"),
        "tools": params.get("tools") or [],
        "status": "completed",
    }
