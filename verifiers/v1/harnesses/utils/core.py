"""Streamed chat completions for harness programs written against the ``openai`` SDK.

:func:`chat` asks for a streamed completion and assembles it into one ``ChatCompletion``,
keeping what the SDK's own assembly drops or garbles: the reasoning a server streams
(``reasoning``, ``reasoning_content`` and the structured ``reasoning_details``). A stream that
breaks (a transport error, or an end before every choice finished) is asked for again with the
same body, marked as a retry (``x-stainless-retry-count``) so an interception server can tell
the replay from a new turn.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

import httpx
from openai import APIConnectionError, AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

__all__ = ["chat"]

logger = logging.getLogger(__name__)

_RETRY_HEADER = "x-stainless-retry-count"
_BACKOFF_BASE_S = 0.5
_BACKOFF_CAP_S = 8.0
# reasoning_details entries whose text arrives in pieces, and the key of that text
_DETAIL_TEXT = {"reasoning.text": "text", "reasoning.summary": "summary"}
_DETAIL_KEYS = ("id", "index", "format")


async def chat(
    client: AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    *,
    tool_choice: str | None = None,
) -> ChatCompletion:
    """One chat completion of ``model`` on ``messages`` (offering ``tools`` when there are
    any, with ``tool_choice`` then), streamed and assembled, usage included.

    Opening the stream is retried by the SDK itself; a stream that breaks afterwards is asked
    for again, up to ``client.max_retries`` times with jittered exponential backoff, and the
    last failure is raised (``httpx.TransportError`` or ``openai.APIConnectionError``)."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = tools
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
    retries = max(client.max_retries, 0)
    for attempt in range(retries + 1):
        headers = {_RETRY_HEADER: str(attempt)} if attempt else None
        stream = await client.chat.completions.create(
            **body, stream=True, stream_options={"include_usage": True}, extra_headers=headers
        )
        try:
            async with stream:
                parts: dict[str, Any] = {}
                async for chunk in stream:
                    _add_chunk(parts, chunk)
                completion = _completion(parts)
                if completion is None:  # a cut connection that closed cleanly
                    raise APIConnectionError(
                        message="the model's stream ended before its completion finished",
                        request=stream.response.request,
                    )
                return completion
        except (APIConnectionError, httpx.TransportError) as error:
            if attempt == retries:
                raise
            delay = random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt))
            logger.warning(
                "the model's stream broke (%s); asking again in %.2fs (retry %d of %d)",
                error, delay, attempt + 1, retries,
            )  # fmt: skip
            await asyncio.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _add_chunk(parts: dict[str, Any], chunk: ChatCompletionChunk) -> None:
    """Fold one streamed chunk into ``parts`` (the completion so far, choices by index)."""
    data = chunk.model_dump(exclude_none=True)
    for key in ("id", "created", "model", "system_fingerprint", "service_tier", "usage"):
        if key in data:
            parts[key] = data[key]
    choices: dict[int, dict[str, Any]] = parts.setdefault("choices", {})
    for piece in data.get("choices") or []:
        index = int(piece.get("index", 0))
        choice = choices.setdefault(index, {"index": index, "message": {}, "finish_reason": None})
        if piece.get("finish_reason") is not None:
            choice["finish_reason"] = piece["finish_reason"]
        for kind, tokens in (piece.get("logprobs") or {}).items():
            if tokens:
                choice.setdefault("logprobs", {}).setdefault(kind, []).extend(tokens)
        _add_delta(choice["message"], piece.get("delta") or {})


def _add_delta(message: dict[str, Any], delta: dict[str, Any]) -> None:
    """Fold a choice's delta into its message: text fields concatenate, tool calls assemble
    by their index, ``reasoning_details`` pieces join the entry they continue."""
    for key, value in delta.items():
        if key == "role":
            message["role"] = value
        elif key == "tool_calls":
            _add_tool_calls(message.setdefault("tool_calls", []), value)
        elif key == "function_call":
            call = message.setdefault("function_call", {"name": "", "arguments": ""})
            call["name"] = call["name"] or value.get("name", "")
            call["arguments"] += value.get("arguments") or ""
        elif key == "reasoning_details":
            _add_reasoning_details(message.setdefault("reasoning_details", []), value)
        elif isinstance(value, str):
            message[key] = message.get(key, "") + value
        else:
            message[key] = value


def _add_tool_calls(calls: list[dict[str, Any]], pieces: list[dict[str, Any]]) -> None:
    for piece in pieces:
        index = int(piece.get("index", len(calls)))
        call = next((c for c in calls if c["index"] == index), None)
        if call is None:
            call = {"index": index, "id": "", "type": "function"}
            call["function"] = {"name": "", "arguments": ""}
            calls.append(call)
        call["id"] = call["id"] or piece.get("id", "")
        call["type"] = piece.get("type", call["type"])
        function = piece.get("function") or {}
        call["function"]["name"] = call["function"]["name"] or function.get("name", "")
        call["function"]["arguments"] += function.get("arguments") or ""


def _add_reasoning_details(details: list[dict[str, Any]], pieces: list[dict[str, Any]]) -> None:
    """A piece continues the last entry when both are text (or summary) entries of the same
    type whose ``id``/``index``/``format`` do not disagree; it then extends its text and fills
    what the entry lacked (a signature, an id). Any other piece is a new entry."""
    for piece in pieces:
        last = details[-1] if details else None
        text_key = _DETAIL_TEXT.get(str(piece.get("type")))
        if (
            last is None
            or text_key is None
            or last.get("type") != piece.get("type")
            or any(
                last.get(k) is not None and piece.get(k) is not None and last[k] != piece[k]
                for k in _DETAIL_KEYS
            )
        ):
            details.append(dict(piece))
            continue
        last[text_key] = (last.get(text_key) or "") + (piece.get(text_key) or "")
        for key in (*_DETAIL_KEYS, "signature"):
            if last.get(key) is None and piece.get(key) is not None:
                last[key] = piece[key]


def _completion(parts: dict[str, Any]) -> ChatCompletion | None:
    """The assembled completion; None when the stream ended before every choice finished."""
    choices = [parts["choices"][i] for i in sorted(parts.get("choices", {}))]
    if not choices or any(choice["finish_reason"] is None for choice in choices):
        return None
    for choice in choices:
        choice["message"].setdefault("role", "assistant")
        choice["message"].setdefault("content", None)
    fields = {k: v for k, v in parts.items() if k != "choices"}
    return ChatCompletion.construct(**fields, object="chat.completion", choices=choices)
