"""What one model call takes and returns: chat messages, sampling arguments, the normalised
:class:`ModelResponse` and its token :class:`Usage`.

The model clients (:mod:`verifiers.clients`) build on these alone (a client of the classic
shape is read through :func:`to_model_response`); :mod:`verifiers.types`
re-exports them with the rest of the data types environments and trainers share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from verifiers.messages import as_message, as_tool_call

__all__ = [
    "Message",
    "MessageType",
    "Messages",
    "ModelResponse",
    "SamplingArgs",
    "Usage",
    "to_model_response",
]

Message = dict[str, Any]
Messages = list[Message]
SamplingArgs = dict[str, Any]
MessageType = Literal["chat", "completion"]


@dataclass(slots=True, init=False)
class Usage:
    """Token usage of one model call (or a sum of calls).

    ``reasoning_tokens`` (the part of the completion spent reasoning, when the server reports
    it) and ``total_tokens`` (prompt plus completion unless given) are 0.3.x's fields too, so
    ``Usage(prompt_tokens=, reasoning_tokens=, completion_tokens=, total_tokens=)`` works.

    A rollout's usage (``state["usage"]``) also reads as 0.3.x's read-only usage view:
    ``usage["input_tokens"]`` and ``usage["output_tokens"]`` (floats), ``dict(usage)``, and
    ``usage == {"input_tokens": ..., "output_tokens": ...}``; item assignment raises
    ``TypeError`` as the 0.3.x view does.
    """

    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    given_total: int | None = field(repr=False, compare=False)

    def __init__(
        self,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        reasoning_tokens: int = 0,
        total_tokens: int | None = None,
    ) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.reasoning_tokens = reasoning_tokens
        self.given_total = total_tokens

    @property
    def total_tokens(self) -> int:
        if self.given_total is not None:
            return self.given_total
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        total = self.total_tokens + other.total_tokens
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.given_total = None if total == self.prompt_tokens + self.completion_tokens else total

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}

    # 0.3.x's read-only view of a rollout's usage: {"input_tokens", "output_tokens"}
    def keys(self) -> tuple[str, str]:
        return ("input_tokens", "output_tokens")

    def __getitem__(self, key: str) -> float:
        if key == "input_tokens":
            return float(self.prompt_tokens)
        if key == "output_tokens":
            return float(self.completion_tokens)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in ("input_tokens", "output_tokens")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Usage):
            return (self.prompt_tokens, self.completion_tokens, self.reasoning_tokens) == (
                other.prompt_tokens,
                other.completion_tokens,
                other.reasoning_tokens,
            )
        if isinstance(other, Mapping):
            return {k: self[k] for k in self.keys()} == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def model_dump(self, **_: Any) -> dict[str, int]:
        """0.3.x's four fields."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(slots=True)
class ModelResponse:
    """One model call's answer, normalised across chat and completions endpoints.

    ``message`` is the assistant message in chat format (``content`` may be ``None`` when the
    model only called tools; ``reasoning_content`` is kept when the server returns it so that it
    can be passed back on later turns). For the completions API, ``message["content"]`` holds
    the generated text.

    Token ids and logprobs are filled when the server returns them (vLLM with
    ``return_token_ids``/``logprobs``; the project's test server), else ``None``.
    ``stop_sequence`` is the stop string that ended the reply, where the server says which
    (vLLM's ``choices[0].stop_reason``).
    """

    message: Message
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    completion_logprobs: list[float] | None = None
    model: str | None = None
    id: str | None = None
    stop_sequence: str | None = None

    def __post_init__(self) -> None:
        self.message = as_message(self.message)

    @property
    def content(self) -> str:
        c = self.message.get("content")
        return c if isinstance(c, str) else ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


def _usage_field(usage: Any, key: str) -> int:
    value = usage.get(key) if isinstance(usage, dict) else getattr(usage, key, None)
    return value if isinstance(value, int) else 0


def to_model_response(response: Any) -> ModelResponse:
    """A :class:`ModelResponse` from a response of the classic (0.3.x) ``vf.Response`` shape
    (what classic clients return), read by its attributes alone (``message.content``,
    ``message.tool_calls``, ``message.tokens``, ``usage``, ...); a ``ModelResponse`` is
    returned unchanged. The core accepts any client's answer through it, without knowing the
    classic models."""
    if isinstance(response, ModelResponse):
        return response
    msg = response.message
    message: dict[str, Any] = {"role": "assistant", "content": msg.content}
    if msg.reasoning_content is not None:
        message["reasoning_content"] = msg.reasoning_content
    if msg.tool_calls:
        message["tool_calls"] = [as_tool_call(c) for c in msg.tool_calls]
    thinking = getattr(msg, "thinking_blocks", None)
    if thinking:  # Anthropic's signed thinking, sent back with the turn's tool calls
        message["thinking_blocks"] = list(thinking)
    usage = Usage()
    if response.usage is not None:
        usage = Usage(
            prompt_tokens=_usage_field(response.usage, "prompt_tokens"),
            completion_tokens=_usage_field(response.usage, "completion_tokens"),
            reasoning_tokens=_usage_field(response.usage, "reasoning_tokens"),
        )
    tokens = msg.tokens
    return ModelResponse(
        message=message,
        finish_reason=msg.finish_reason,
        usage=usage,
        prompt_token_ids=list(tokens.prompt_ids) if tokens is not None else None,
        completion_token_ids=list(tokens.completion_ids) if tokens is not None else None,
        completion_logprobs=(
            list(tokens.completion_logprobs)
            if tokens is not None and len(tokens.completion_logprobs) == len(tokens.completion_ids)
            else None
        ),
        model=response.model,
        id=response.id,
    )
