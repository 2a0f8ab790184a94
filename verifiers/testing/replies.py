"""The toy model behind :class:`~verifiers.testing.server.OpenAITestServer`: its byte-level
tokenizer and chat template, and the response bodies it builds from a reply.

A reply is a string (the assistant's content), ``None`` (an empty message), or a dict with any
of ``content``, ``tool_calls`` (``[{"name": ..., "arguments": dict or JSON string}]``, or the
OpenAI shape), ``reasoning_content`` and ``finish_reason``; a whole assistant message (such as
:func:`verifiers.tool_call_message` builds) is a reply too.

Token ids. The server has a toy byte-level tokenizer (:func:`toy_tokenize`: token id = UTF-8
byte + :data:`TOKEN_OFFSET`) and chat template (:func:`toy_chat_template`), public so that
trainer tests can reproduce the ids. With ``"return_token_ids": true`` (the vLLM extension) the
answer carries ``prompt_token_ids`` (top level for chat, in the choice for completions) and
``choices[0].token_ids``; with ``"logprobs": true`` (chat) or a number (completions) each
completion token gets the deterministic logprob :func:`toy_logprob`. A chat completion's ids are
those of ``toy_render_assistant(message) + END``, so that the next turn's prompt ids extend
``prompt_ids + completion_ids`` exactly (unless the reply was cut at ``max_tokens``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = [
    "END",
    "TOKEN_OFFSET",
    "Reply",
    "Responder",
    "build_chat_completion",
    "build_completion",
    "default_responder",
    "toy_chat_template",
    "toy_detokenize",
    "toy_logprob",
    "toy_render_assistant",
    "toy_tokenize",
]

Reply = str | dict[str, Any] | None
Responder = Callable[[dict[str, Any]], Reply | Awaitable[Reply]]

TOKEN_OFFSET = 3
"""Token id of byte ``b`` is ``b + TOKEN_OFFSET`` (ids 0-2 are reserved, as in ByT5)."""
END = "<|end|>\n"
"""Closes every message in the toy chat template, and ends every chat completion."""


# --------------------------------------------------------------------------------------------
# toy tokenizer and chat template


def toy_tokenize(text: str) -> list[int]:
    """Byte-level token ids: one id per UTF-8 byte, ``byte + TOKEN_OFFSET``."""
    return [b + TOKEN_OFFSET for b in text.encode("utf-8")]


def toy_detokenize(ids: Sequence[int]) -> str:
    """The text of byte-level ids (an incomplete UTF-8 sequence at the end is dropped)."""
    return bytes(i - TOKEN_OFFSET for i in ids if i >= TOKEN_OFFSET).decode("utf-8", "ignore")


def toy_logprob(token_id: int, position: int) -> float:
    """The deterministic logprob the server reports for ``token_id`` at completion ``position``:
    a value in [-0.97, -0.01]."""
    return -(((token_id * 31 + position * 17) % 97) + 1) / 100.0


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def toy_render_assistant(message: dict[str, Any]) -> str:
    """An assistant message as the toy model "generates" it (without the closing :data:`END`):
    ``<think>reasoning</think>`` when there is reasoning, the content, then one
    ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` per tool call, with the arguments
    string exactly as sent."""
    parts = []
    reasoning = message.get("reasoning_content")
    if reasoning:
        parts.append(f"<think>{reasoning}</think>")
    parts.append(_text(message.get("content")))
    for call in message.get("tool_calls") or ():
        fn = call.get("function", {})
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args)
        parts.append(f'<tool_call>{{"name": {json.dumps(fn.get("name"))}, "arguments": {args}}}')
        parts.append("</tool_call>")
    return "".join(parts)


def toy_chat_template(
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
) -> str:
    """Render a conversation: ``<|tools|>{json}`` + END when there are tools, then
    ``<|role|>body`` + END per message (assistant bodies via :func:`toy_render_assistant`),
    then ``<|assistant|>`` when ``add_generation_prompt``."""
    parts = []
    if tools:
        parts.append(f"<|tools|>{json.dumps(list(tools), sort_keys=True)}{END}")
    for m in messages:
        role = m.get("role", "user")
        body = toy_render_assistant(m) if role == "assistant" else _text(m.get("content"))
        parts.append(f"<|{role}|>{body}{END}")
    if add_generation_prompt:
        parts.append("<|assistant|>")
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# replies -> response bodies


def default_responder(request: dict[str, Any]) -> Reply:
    """Deterministic: ``"echo: "`` + the last user message (chat) or the prompt (completions)."""
    if "messages" in request:
        for m in reversed(request["messages"]):
            if m.get("role") == "user":
                return "echo: " + _text(m.get("content"))
        return "echo: "
    return "echo: " + _text(request.get("prompt"))


def _normalize_reply(reply: Reply, call_index: int) -> dict[str, Any]:
    """``{"content", "tool_calls" (OpenAI shape), "reasoning_content", "finish_reason"}``."""
    if reply is None or isinstance(reply, str):
        return {"content": reply, "tool_calls": [], "reasoning_content": None}
    if not isinstance(reply, dict):
        raise TypeError(f"a reply must be a str, a dict or None, not {type(reply).__name__}")
    if reply.get("role", "assistant") != "assistant":
        raise TypeError(f"a reply is the assistant's message, not a {reply['role']!r} one")
    keys = {"role", "content", "tool_calls", "reasoning_content", "finish_reason"}
    unknown = set(reply) - keys
    if unknown:
        raise TypeError(
            f"unknown reply keys {sorted(unknown)}: use content, tool_calls, reasoning_content, "
            "finish_reason (and role, when the reply is a whole assistant message)"
        )
    calls = []
    for i, tc in enumerate(reply.get("tool_calls") or ()):
        if "function" in tc:  # already in OpenAI shape
            name, args, call_id = tc["function"]["name"], tc["function"]["arguments"], tc.get("id")
        else:
            name, args, call_id = tc["name"], tc.get("arguments", {}), tc.get("id")
        calls.append(
            {
                "id": call_id or f"call_{call_index}_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        )
    return {
        "content": reply.get("content"),
        "tool_calls": calls,
        "reasoning_content": reply.get("reasoning_content"),
        "finish_reason": reply.get("finish_reason"),
    }


def _max_tokens(request: dict[str, Any]) -> int | None:
    value = request.get("max_completion_tokens", request.get("max_tokens"))
    return int(value) if value is not None else None


def build_chat_completion(
    request: dict[str, Any], reply: Reply, call_index: int = 0
) -> dict[str, Any]:
    """The ``/v1/chat/completions`` response body for ``reply`` to ``request``."""
    r = _normalize_reply(reply, call_index)
    message: dict[str, Any] = {"role": "assistant", "content": r["content"]}
    if r["tool_calls"]:
        message["tool_calls"] = r["tool_calls"]
    if r["reasoning_content"]:
        message["reasoning_content"] = r["reasoning_content"]
    finish = r.get("finish_reason") or ("tool_calls" if r["tool_calls"] else "stop")
    prompt_text = toy_chat_template(request.get("messages", []), request.get("tools"))
    n_prompt = len(prompt_text.encode("utf-8"))  # one toy token per byte
    completion_ids = toy_tokenize(toy_render_assistant(message) + END)
    limit = _max_tokens(request)
    if limit is not None and len(completion_ids) > limit:
        completion_ids = completion_ids[:limit]
        message = {"role": "assistant", "content": toy_detokenize(completion_ids)}
        finish = "length"
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    if request.get("logprobs"):
        choice["logprobs"] = {
            "content": [
                {
                    "token": toy_detokenize([t]),
                    "logprob": toy_logprob(t, i),
                    "bytes": [t - TOKEN_OFFSET],
                    "top_logprobs": [],
                }
                for i, t in enumerate(completion_ids)
            ]
        }
    else:
        choice["logprobs"] = None
    body: dict[str, Any] = {
        "id": f"chatcmpl-toy-{call_index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "toy"),
        "choices": [choice],
        "usage": {
            "prompt_tokens": n_prompt,
            "completion_tokens": len(completion_ids),
            "total_tokens": n_prompt + len(completion_ids),
        },
    }
    if request.get("return_token_ids"):
        body["prompt_token_ids"] = toy_tokenize(prompt_text)
        choice["token_ids"] = completion_ids
    return body


def build_completion(request: dict[str, Any], reply: Reply, call_index: int = 0) -> dict[str, Any]:
    """The ``/v1/completions`` response body: the reply's content as ``text``."""
    r = _normalize_reply(reply, call_index)
    text = r["content"] or ""
    finish = r.get("finish_reason") or "stop"
    prompt = request.get("prompt", "")
    prompt_ids = toy_tokenize(prompt if isinstance(prompt, str) else _text(prompt))
    completion_ids = toy_tokenize(text)
    limit = _max_tokens(request)
    if limit is not None and len(completion_ids) > limit:
        completion_ids = completion_ids[:limit]
        text = toy_detokenize(completion_ids)
        finish = "length"
    choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}
    if request.get("logprobs") is not None and request.get("logprobs") is not False:
        start = len(prompt) if isinstance(prompt, str) else 0
        choice["logprobs"] = {
            "tokens": [toy_detokenize([t]) for t in completion_ids],
            "token_logprobs": [toy_logprob(t, i) for i, t in enumerate(completion_ids)],
            "top_logprobs": None,
            "text_offset": [start + i for i in range(len(completion_ids))],
        }
    if request.get("return_token_ids"):
        choice["prompt_token_ids"] = prompt_ids
        choice["token_ids"] = completion_ids
    return {
        "id": f"cmpl-toy-{call_index}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": request.get("model", "toy"),
        "choices": [choice],
        "usage": {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": len(completion_ids),
            "total_tokens": len(prompt_ids) + len(completion_ids),
        },
    }
