"""Core data types shared by environments, clients, rubrics, the evaluator and the trainer.

Messages are plain dicts in the OpenAI chat format (``{"role": ..., "content": ...}``; assistant
tool calls in the OpenAI shape ``{"id", "type": "function", "function": {"name", "arguments"}}``).
Messages the environment builds or receives are :mod:`verifiers.messages` objects: ``dict``
subclasses that also answer attribute access (``m.role``, ``m.tool_calls[0].name``), so classic
code reading them either way works and records serialise as plain JSON.

The remaining names of the classic (0.3.x) ``verifiers.types`` module come from
:mod:`verifiers.classic_types`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from verifiers.classic_types import *  # noqa: F403
from verifiers.classic_types import __all__ as _classic_all
from verifiers.messages import (
    AssistantMessage,
    SystemMessage,
    TextMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    as_message,
)

if TYPE_CHECKING:
    from verifiers.clients.endpoints import EndpointConfig

__all__ = [
    "AssistantMessage",
    "EndpointConfig",
    "Endpoints",
    "SystemMessage",
    "TaskSplit",
    "TextMessage",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    *_classic_all,
    "Info",
    "Message",
    "MessageType",
    "Messages",
    "ModelResponse",
    "RewardFunc",
    "RolloutInput",
    "SamplingArgs",
    "State",
    "StepTokens",
    "TrajectoryStep",
    "Usage",
]

Message = dict[str, Any]
Messages = list[Message]
Info = dict[str, Any]
SamplingArgs = dict[str, Any]
MessageType = Literal["chat", "completion"]
TaskSplit = Literal["train", "eval"]
RewardFunc = Callable[..., float | Awaitable[float] | list[float] | Awaitable[list[float]]]


@dataclass(slots=True)
class Usage:
    """Token usage of one model call (or a sum of calls)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


@dataclass(slots=True)
class ModelResponse:
    """One model call's answer, normalised across chat and completions endpoints.

    ``message`` is the assistant message in chat format (``content`` may be ``None`` when the
    model only called tools; ``reasoning_content`` is kept when the server returns it so that it
    can be passed back on later turns). For the completions API, ``message["content"]`` holds
    the generated text.

    Token ids and logprobs are filled when the server returns them (vLLM with
    ``return_token_ids``/``logprobs``; the project's test server), else ``None``.
    """

    message: Message
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    completion_logprobs: list[float] | None = None
    model: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        self.message = as_message(self.message)

    @property
    def content(self) -> str:
        c = self.message.get("content")
        return c if isinstance(c, str) else ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


class StepTokens(TypedDict):
    """Token-level record of one model call (present when the server returned token ids)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    completion_logprobs: list[float] | None


class TrajectoryStep(TypedDict):
    """One model call inside a rollout.

    ``prompt_len`` is the number of messages of the conversation (prompt + completion so far)
    that were sent for this call: the prompt of step *k* is
    ``(state["prompt"] + state["completion"])[:prompt_len]``. History is append-only, so this
    index is stable and the trajectory costs O(turns) to record.
    """

    prompt_len: int
    completion: Messages
    response: ModelResponse
    tokens: StepTokens | None
    is_truncated: bool
    extras: dict[str, Any]


class RolloutInput(TypedDict, total=False):
    """One row of an environment's dataset after formatting."""

    prompt: Messages | str
    answer: str
    info: Info
    task: str
    example_id: int


Endpoints = dict[str, list["EndpointConfig"]]


def __getattr__(name: str) -> Any:
    if name == "EndpointConfig":  # defined with the clients; imported on first use
        from verifiers.clients.endpoints import EndpointConfig

        return EndpointConfig
    raise AttributeError(f"module 'verifiers.types' has no attribute {name!r}")


class State(dict[str, Any]):
    """The mutable record of one rollout (a ``dict``, as classic environments expect).

    Keys set by ``Environment.init_state``: ``prompt``, ``completion``, ``answer``, ``task``,
    ``info``, ``example_id``, ``rollout_index``, ``trajectory`` (list of
    :class:`TrajectoryStep`), ``responses`` (the :class:`ModelResponse` objects), ``turn``,
    ``usage``, ``timing``, ``reward``, ``metrics``, ``reward_errors``, ``error``,
    ``is_completed``, ``stop_condition``, ``is_truncated``, ``model``, ``sampling_args``.
    Environments add their own keys freely.
    """

    __slots__ = ()
    INPUT_FIELDS = ["prompt", "answer", "info", "example_id"]
    for_task = StateForTaskDescriptor()  # noqa: F405

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
