"""Type names of the classic (0.3.x) ``verifiers.types`` module that environment code imports.

``verifiers.types`` serves the names here on first use (the classic room registers them with
:mod:`verifiers.extension_points` when ``import verifiers`` runs; :mod:`verifiers.classic.served`).
Messages and tool calls live in :mod:`verifiers.messages` (``dict`` subclasses with attribute
access); the task-payload helpers ``State.for_task`` uses are the core's (:mod:`verifiers.types`,
re-exported here); the rest are ``TypedDict`` records, type aliases and helpers; the pydantic
models (``Tool``, ``Response``, ``ClientConfig``, ...) are in :mod:`verifiers.classic.models`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from verifiers.classic.served import CLASSIC_TYPE_NAMES
from verifiers.types import (
    TASK_INPUT_FIELDS,
    StateForTaskDescriptor,
    flatten_task_input,
    normalize_task_payload,
    task_payload_from_info,
)

__all__ = [
    *CLASSIC_TYPE_NAMES,  # defined here
    # the core's, as 0.3.x's module had them
    "TASK_INPUT_FIELDS",
    "StateForTaskDescriptor",
    "flatten_task_input",
    "normalize_task_payload",
    "task_payload_from_info",
]

ClientType = Literal[
    "openai_completions",
    "openai_chat_completions",
    "openai_chat_completions_token",
    "openai_responses",
    "renderer",
    "anthropic_messages",
    "nemorl_chat_completions",
]
EndpointApi = Literal[
    "chat",
    "chat_completions",
    "completions",
    "responses",
    "messages",
    "openai_chat_completions",
    "openai_completions",
    "openai_responses",
    "anthropic_messages",
]
EndpointClient: TypeAlias = Any  # an openai / anthropic client object
FinishReason = Literal["stop", "length", "tool_calls"] | None
JsonPrimitive = Literal["string", "number", "integer", "boolean", "array", "object"]
IndividualRewardFunc = Callable[..., float | Awaitable[float]]
GroupRewardFunc = Callable[..., list[float] | Awaitable[list[float]]]
DatasetBuilder: TypeAlias = Callable[[], Any]  # () -> datasets.Dataset
# Anthropic's thinking blocks, as dicts here (0.3.x aliases the anthropic package's classes, or
# ``Any`` without it)
AnthropicThinkingBlock: TypeAlias = dict[str, Any]
RedactedThinkingBlock: TypeAlias = dict[str, Any]
ThinkingBlock: TypeAlias = AnthropicThinkingBlock | RedactedThinkingBlock


class RoutedExpertsPayload(TypedDict):
    data: Any
    shape: list[int]
    start: int
    dtype: str


class TrajectoryStepTokens(TypedDict):
    prompt_ids: list[int]
    prompt_mask: list[int]
    completion_ids: list[int]
    completion_mask: list[int]
    completion_logprobs: list[float]
    overlong_prompt: bool
    is_truncated: bool
    routed_experts: RoutedExpertsPayload | None


class TokenUsage(TypedDict):
    input_tokens: float
    output_tokens: float
    final_input_tokens: NotRequired[float]
    final_output_tokens: NotRequired[float]


class ModelPricing(TypedDict):
    input_usd_per_mtok: float
    output_usd_per_mtok: float


class EvalCost(TypedDict):
    input_usd: float
    output_usd: float
    total_usd: float


class VersionInfo(TypedDict):
    vf_version: str
    vf_commit: str | None
    env_version: str | None
    env_commit: str | None


class BaseRolloutInput(TypedDict):
    prompt: list[dict[str, Any]]
    example_id: int


class ErrorData(TypedDict):
    error: str
    message: str
    error_chain_repr: str
    error_chain_str: str


class RolloutOutput(dict[str, Any]):
    """One saved rollout record (a plain ``dict`` with attribute access to its fields)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class RolloutScore(TypedDict):
    reward: float
    metrics: dict[str, float]


class RolloutScores(TypedDict):
    reward: list[float]
    metrics: dict[str, list[float]]


class GenerateMetadata(TypedDict, total=False):
    env_id: str
    env_args: dict[str, Any]
    model: str
    base_url: str
    num_examples: int
    rollouts_per_example: int
    sampling_args: dict[str, Any]
    date: str
    time: float
    avg_reward: float
    avg_metrics: dict[str, float]
    avg_error: float
    pass_at_k: dict[str, float]
    pass_threshold: float
    state_columns: list[str]
    path_to_save: Path


class GenerateOutputs(TypedDict):
    outputs: list[RolloutOutput]
    metadata: GenerateMetadata


StartCallback = Callable[[list[Any], list[Any]], None]
ProgressCallback = Callable[[list[RolloutOutput], list[RolloutOutput], GenerateMetadata], None]
LogCallback = Callable[[str], None]


def assert_json_serializable(value: object) -> None:
    """Raise ``TypeError`` unless ``value`` serialises as JSON (pydantic models allowed)."""

    def default(obj: object) -> object:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            return dump(exclude_none=True)
        if isinstance(obj, Path):
            return str(obj)
        raise TypeError(f"{type(obj).__name__} is not JSON-serializable")

    try:
        json.dumps(value, default=default)
    except TypeError as e:
        raise TypeError(f"task and state values must be JSON-serializable: {e}") from e
