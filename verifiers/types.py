"""Core data types shared by environments, clients, rubrics, the evaluator and the trainer.

Messages are plain dicts in the OpenAI chat format (``{"role": ..., "content": ...}``; assistant
tool calls in the OpenAI shape ``{"id", "type": "function", "function": {"name", "arguments"}}``).
Messages the environment builds or receives are :mod:`verifiers.messages` objects: ``dict``
subclasses that also answer attribute access (``m.role``, ``m.tool_calls[0].name``), so classic
code reading them either way works and records serialise as plain JSON.

The remaining names of the classic (0.3.x) ``verifiers.types`` module (the pydantic models
``ClientConfig``, ``Response``, ``Tool``, ...; ``RolloutOutput``, ``GenerateOutputs``, ...) are
the classic room's: this module imports nothing from it, and serves them on first use through
:mod:`verifiers.extension_points`, with which ``import verifiers`` registers them (they are in
``__all__`` too). Type checkers see them through the imports below.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, cast

from verifiers.errors import Error as Error  # 0.3.x's types module imports it
from verifiers.extension_points import exports as _exports
from verifiers.messages import (
    AssistantMessage,
    SystemMessage,
    TextMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from verifiers.model_types import (
    Message,
    Messages,
    MessageType,
    ModelResponse,
    SamplingArgs,
    Usage,
)

if TYPE_CHECKING:
    from verifiers.classic.models import ClientConfig as ClientConfig
    from verifiers.classic.models import ContentPart as ContentPart
    from verifiers.classic.models import CustomBaseModel as CustomBaseModel
    from verifiers.classic.models import EndpointClientConfig as EndpointClientConfig
    from verifiers.classic.models import EvalConfig as EvalConfig
    from verifiers.classic.models import EvalRunConfig as EvalRunConfig
    from verifiers.classic.models import GenericContentPart as GenericContentPart
    from verifiers.classic.models import ImageUrlContentPart as ImageUrlContentPart
    from verifiers.classic.models import ImageUrlSource as ImageUrlSource
    from verifiers.classic.models import InputAudioContentPart as InputAudioContentPart
    from verifiers.classic.models import InputAudioSource as InputAudioSource
    from verifiers.classic.models import MessageContent as MessageContent
    from verifiers.classic.models import Response as Response
    from verifiers.classic.models import ResponseMessage as ResponseMessage
    from verifiers.classic.models import ResponseTokens as ResponseTokens
    from verifiers.classic.models import RolloutTiming as RolloutTiming
    from verifiers.classic.models import TextContentPart as TextContentPart
    from verifiers.classic.models import TimeSpan as TimeSpan
    from verifiers.classic.models import TimeSpans as TimeSpans
    from verifiers.classic.models import Tool as Tool
    from verifiers.classic.models import ToolLike as ToolLike
    from verifiers.classic.types import AnthropicThinkingBlock as AnthropicThinkingBlock
    from verifiers.classic.types import BaseRolloutInput as BaseRolloutInput
    from verifiers.classic.types import ClientType as ClientType
    from verifiers.classic.types import DatasetBuilder as DatasetBuilder
    from verifiers.classic.types import EndpointApi as EndpointApi
    from verifiers.classic.types import EndpointClient as EndpointClient
    from verifiers.classic.types import ErrorData as ErrorData
    from verifiers.classic.types import EvalCost as EvalCost
    from verifiers.classic.types import FinishReason as FinishReason
    from verifiers.classic.types import GenerateMetadata as GenerateMetadata
    from verifiers.classic.types import GenerateOutputs as GenerateOutputs
    from verifiers.classic.types import GroupRewardFunc as GroupRewardFunc
    from verifiers.classic.types import IndividualRewardFunc as IndividualRewardFunc
    from verifiers.classic.types import JsonPrimitive as JsonPrimitive
    from verifiers.classic.types import LogCallback as LogCallback
    from verifiers.classic.types import ModelPricing as ModelPricing
    from verifiers.classic.types import ProgressCallback as ProgressCallback
    from verifiers.classic.types import RedactedThinkingBlock as RedactedThinkingBlock
    from verifiers.classic.types import RolloutOutput as RolloutOutput
    from verifiers.classic.types import RolloutScore as RolloutScore
    from verifiers.classic.types import RolloutScores as RolloutScores
    from verifiers.classic.types import RoutedExpertsPayload as RoutedExpertsPayload
    from verifiers.classic.types import StartCallback as StartCallback
    from verifiers.classic.types import ThinkingBlock as ThinkingBlock
    from verifiers.classic.types import TokenUsage as TokenUsage
    from verifiers.classic.types import TrajectoryStepTokens as TrajectoryStepTokens
    from verifiers.classic.types import VersionInfo as VersionInfo
    from verifiers.classic.types import assert_json_serializable as assert_json_serializable
    from verifiers.clients.endpoints import EndpointConfig as EndpointConfig

__all__ = [
    "TASK_INPUT_FIELDS",
    "AssistantMessage",
    "EndpointConfig",
    "Endpoints",
    "Info",
    "Message",
    "MessageType",
    "Messages",
    "ModelResponse",
    "RewardFunc",
    "RolloutInput",
    "SamplingArgs",
    "State",
    "StateForTaskDescriptor",
    "StepTokens",
    "SystemMessage",
    "TaskSplit",
    "TextMessage",
    "ToolCall",
    "ToolMessage",
    "TrajectoryStep",
    "Usage",
    "UserMessage",
    "flatten_task_input",
    "normalize_task_payload",
    "task_payload_from_info",
    # the classic room's (see the module doc)
    *_exports(__name__),
]

Info = dict[str, Any]
TaskSplit = Literal["train", "eval"]
RewardFunc = Callable[..., float | Awaitable[float] | list[float] | Awaitable[list[float]]]


class StepTokens(TypedDict):
    """Token-level record of one model call (present when the server returned token ids)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    completion_logprobs: list[float] | None
    # the classic (0.3.x) fields trainers read: 0 for prompt tokens, 1 for sampled ones
    prompt_mask: NotRequired[list[int]]
    completion_mask: NotRequired[list[int]]
    overlong_prompt: NotRequired[bool]
    is_truncated: NotRequired[bool]
    routed_experts: NotRequired[Any]


class TrajectoryStep(TypedDict):
    """One model call inside a rollout.

    ``prompt_len`` is the number of messages of the conversation (prompt + completion so far)
    that were sent for this call: the prompt of step *k* is
    ``(state["prompt"] + state["completion"])[:prompt_len]``. History is append-only, so this
    index is stable. ``prompt`` holds those messages too (a shallow copy of the list, as
    classic trajectories have it).
    """

    prompt_len: int
    completion: Messages
    response: ModelResponse
    tokens: StepTokens | None
    is_truncated: bool
    extras: dict[str, Any]
    # as classic (0.3.x) trajectories have them: the messages sent, per-step reward and
    # advantage (set by trainers), the rollout's id
    prompt: NotRequired[Messages | str]
    reward: NotRequired[float | None]
    advantage: NotRequired[float | None]
    trajectory_id: NotRequired[str]


class RolloutInput(TypedDict, total=False):
    """One row of an environment's dataset after formatting."""

    prompt: Messages | str
    answer: str
    info: Info
    task: str
    example_id: int


Endpoints = dict[str, list["EndpointConfig"]]


def _types_getattr(name: str) -> Any:
    # imported on first use: the endpoint record lives with the clients
    if name == "EndpointConfig":
        from verifiers.clients.endpoints import EndpointConfig

        return EndpointConfig
    raise AttributeError(f"module 'verifiers.types' has no attribute {name!r}")


# a task row's payload (0.3.x's task-payload helpers; ``State.for_task`` builds on them)
TASK_INPUT_FIELDS = {"prompt", "answer", "info", "example_id"}


class StateForTaskDescriptor:
    """``State.for_task(row)``: a fresh state holding a task row's input fields."""

    def __get__(self, instance: object, owner: type) -> Callable[[Mapping[str, Any]], Any]:
        def create(task: Mapping[str, Any]) -> Any:
            payload = flatten_task_input(task)
            return owner({k: payload[k] for k in TASK_INPUT_FIELDS if k in payload})

        return create


def normalize_task_payload(value: object) -> dict[str, Any]:
    """A task payload (a mapping, or its JSON text) as a dict."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"a serialized task payload must be a JSON object: {e}") from e
    if not isinstance(value, Mapping):
        raise TypeError(f"a task payload must be a mapping, not {type(value).__name__}")
    return dict(cast(Mapping[str, Any], value))


def task_payload_from_info(info: object) -> dict[str, Any] | None:
    """``info["task"]`` as a task payload, or ``None`` when absent."""
    if isinstance(info, str):
        info = json.loads(info)
    if not isinstance(info, Mapping):
        return None
    payload = info.get("task")
    return None if payload is None else normalize_task_payload(payload)


def flatten_task_input(input_data: Mapping[str, Any]) -> dict[str, Any]:
    """The task payload of a rollout input: ``info["task"]``, else ``task`` when it is a
    payload, else the input itself."""
    payload = task_payload_from_info(input_data.get("info"))
    if payload is not None:
        return payload
    direct = input_data.get("task")
    if isinstance(direct, Mapping):
        return dict(direct)
    return dict(input_data)


_STATE_INPUT_FIELDS = frozenset({"prompt", "answer", "info", "example_id"})
_ABSENT: Any = object()


class State(dict[str, Any]):
    """The mutable record of one rollout (a ``dict``, as classic environments expect).

    Keys set by ``Environment.init_state``: ``prompt``, ``completion``, ``answer``, ``task``,
    ``info``, ``example_id``, ``rollout_index``, ``trajectory`` (list of
    :class:`TrajectoryStep`), ``responses`` (the :class:`ModelResponse` objects), ``turn``,
    ``usage``, ``usage_tracker``, ``timing``, ``reward``, ``metrics``, ``reward_errors``,
    ``error``, ``is_completed``, ``stop_condition``, ``is_truncated``, ``model``,
    ``sampling_args``. Environments add their own keys freely.

    ``usage_tracker`` is the rollout's :class:`Usage`, counted by each model call
    (``Environment.get_model_response``); ``usage`` is the same object, for reading (0.3.x's
    layout: code that overwrites ``state["usage"]`` does not change what is counted).
    """

    __slots__ = ()
    INPUT_FIELDS = ["prompt", "answer", "info", "example_id"]
    for_task = StateForTaskDescriptor()

    # ``State(input=row)`` (the classic way to build one) exposes the row's prompt, answer,
    # info and example_id as the state's own keys; keys set on the state itself come first
    def __missing__(self, key: str) -> Any:
        if key in _STATE_INPUT_FIELDS:
            row = dict.get(self, "input")
            if isinstance(row, Mapping) and key in row:
                return row[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        value = dict.get(self, key, _ABSENT)
        if value is not _ABSENT:
            return value
        if key in _STATE_INPUT_FIELDS:
            row = dict.get(self, "input")
            if isinstance(row, Mapping) and key in row:
                return row[key]
        return default

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def state_usage(state: Mapping[str, Any]) -> Usage:
    """The rollout's token usage, as counted: ``state["usage_tracker"]``, else
    ``state["usage"]`` when it is a :class:`Usage` (a state built by hand, or by an older
    version), else a new one, recorded in both keys when ``state`` can take them."""
    tracker = state.get("usage_tracker")
    if isinstance(tracker, Usage):
        return tracker
    usage = state.get("usage")
    tracker = usage if isinstance(usage, Usage) else Usage()
    if isinstance(state, dict):
        state["usage_tracker"] = tracker
        if usage is None:
            state["usage"] = tracker
    return tracker


# then the names 0.3.x's types module imports (pydantic, openai, typing helpers), on first use
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__, _types_getattr)
