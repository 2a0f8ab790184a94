"""An agent's model request as the environment sees it: an :class:`InterceptedCall` (chat-shaped
whatever the agent's dialect), read from an OpenAI chat-completions or Anthropic Messages body,
and answered in the dialect and shape (streamed or not) the agent asked for."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from verifiers.agents._http import Dialect, HttpError, dialect_error, json_object
from verifiers.agents.wire import chat_completion_body, sse_events
from verifiers.types import ModelResponse

__all__ = ["AGENT_SAMPLING_KEYS", "MESSAGES_ROUTE", "InterceptedCall", "chat_call", "messages_call"]

# the request keys passed on to the model as sampling arguments (the trainer's pinned ones win)
AGENT_SAMPLING_KEYS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
        "response_format",
    }
)

MESSAGES_ROUTE = b"/v1/messages"
"""Anthropic's Messages endpoint (under the channel's base path)."""


@dataclass(eq=False)
class InterceptedCall:
    """One model request of an agent, waiting for the environment's answer. Whatever the
    agent's dialect, ``messages``, ``tools`` and ``sampling_args`` are in the chat-completions
    shape; ``body`` is the request as the agent sent it."""

    body: dict[str, Any]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    stream: bool
    include_usage: bool
    sampling_args: dict[str, Any]
    requested_model: str
    dialect: Dialect = "chat"
    #: the request's custom (free-form) tools, Responses dialect only
    custom_tools: frozenset[str] = frozenset()
    received: float = field(default_factory=time.perf_counter)
    _reply: asyncio.Future[tuple[int, bytes, bool]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    @property
    def done(self) -> bool:
        return self._reply.done()

    def answer(self, response: ModelResponse) -> None:
        """Send ``response`` back to the agent in its dialect (as SSE events when it asked for
        a stream)."""
        if self._reply.done():
            return
        if self.dialect == "anthropic":
            from verifiers.v1.dialects import anthropic

            if self.stream:
                payload = anthropic.stream_events(response, self.requested_model)
            else:
                payload = orjson.dumps(anthropic.response_body(response, self.requested_model))
        elif self.dialect == "responses":
            from verifiers.agents import responses_wire as wire

            model, custom = self.requested_model, self.custom_tools
            if self.stream:
                payload = wire.stream_events(response, model, custom)
            else:
                payload = orjson.dumps(wire.response_body(response, model, custom))
        elif self.stream:
            payload = sse_events(response, self.requested_model, self.include_usage)
        else:
            payload = orjson.dumps(chat_completion_body(response, self.requested_model))
        self._reply.set_result((200, payload, self.stream))

    def fail(self, status: int, message: str, type_: str = "invalid_request_error") -> None:
        """Answer with an error in the agent's dialect (OpenAI's shape with ``type_``, or
        Anthropic's, whose type follows the status)."""
        if not self._reply.done():
            self._reply.set_result(
                (status, dialect_error(status, message, type_, self.dialect), False)
            )


def chat_call(raw: bytes | bytearray, default_model: str) -> InterceptedCall:
    """A chat-completions request as a call (a request it cannot take is a 400 naming why)."""
    body = json_object(raw)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise HttpError(400, "'messages' must be a non-empty list")
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise HttpError(400, "each message must be an object with a 'role'")
    n = body.get("n")
    if n not in (None, 1):
        raise HttpError(400, "only n=1 is supported")
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise HttpError(400, "'tools' must be a list of objects")
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
    args = {k: v for k, v in body.items() if k in AGENT_SAMPLING_KEYS and v is not None}
    if "max_completion_tokens" in args:
        args.setdefault("max_tokens", args.pop("max_completion_tokens"))
    model = body.get("model")
    return InterceptedCall(
        body=body,
        messages=messages,
        tools=tools or None,
        stream=bool(body.get("stream")),
        include_usage=include_usage,
        sampling_args=args,
        requested_model=model if isinstance(model, str) else default_model,
    )


def messages_call(raw: bytes | bytearray, default_model: str) -> InterceptedCall:
    """An Anthropic Messages request as a chat-shaped call (a request the dialect cannot
    read is a 400 naming the field)."""
    from verifiers.v1.dialects.anthropic import AnthropicDialect, AnthropicRequestError
    from verifiers.v1.dialects.chat import message_to_wire

    body = json_object(raw)
    dialect = AnthropicDialect()
    try:
        request = dialect.parse_request(body)
        sampling = dialect.parse_sampling(body)
    except AnthropicRequestError as e:
        raise HttpError(400, f"invalid request: {e}") from None
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in request.tools or []
    ]
    model = body.get("model")
    return InterceptedCall(
        body=body,
        messages=[message_to_wire(m) for m in request.messages],
        tools=tools or None,
        stream=body.get("stream") is True,
        include_usage=True,
        sampling_args=sampling,
        requested_model=model if isinstance(model, str) else default_model,
        dialect="anthropic",
    )
