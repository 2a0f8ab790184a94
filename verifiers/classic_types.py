"""Type names of the classic (0.3.x) ``verifiers.types`` module that environment code imports.

:mod:`verifiers.types` re-exports everything here. Messages and tool calls live in
:mod:`verifiers.messages` (``dict`` subclasses with attribute access); the rest are
``TypedDict`` records, type aliases, and small pydantic models whose instances also answer
``obj["field"]`` and ``obj.get("field")`` as 0.3.x's did.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field, computed_field

__all__ = [
    "TASK_INPUT_FIELDS",
    "BaseRolloutInput",
    "ClientConfig",
    "ClientType",
    "ContentPart",
    "CustomBaseModel",
    "DatasetBuilder",
    "EndpointApi",
    "EndpointClient",
    "EndpointClientConfig",
    "ErrorData",
    "EvalConfig",
    "EvalCost",
    "EvalRunConfig",
    "FinishReason",
    "GenerateMetadata",
    "GenerateOutputs",
    "GenericContentPart",
    "GroupRewardFunc",
    "ImageUrlContentPart",
    "ImageUrlSource",
    "IndividualRewardFunc",
    "InputAudioContentPart",
    "InputAudioSource",
    "JsonPrimitive",
    "LogCallback",
    "MessageContent",
    "ModelPricing",
    "ProgressCallback",
    "Response",
    "ResponseMessage",
    "ResponseTokens",
    "RolloutOutput",
    "RolloutScore",
    "RolloutScores",
    "RolloutTiming",
    "RoutedExpertsPayload",
    "StartCallback",
    "StateForTaskDescriptor",
    "TextContentPart",
    "ThinkingBlock",
    "TimeSpan",
    "TimeSpans",
    "TokenUsage",
    "Tool",
    "ToolLike",
    "TrajectoryStepTokens",
    "VersionInfo",
    "assert_json_serializable",
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
ThinkingBlock: TypeAlias = dict[str, Any]
TASK_INPUT_FIELDS = {"prompt", "answer", "info", "example_id"}


class CustomBaseModel(BaseModel):
    """A pydantic model that also reads like a dict (``m["x"]``, ``m.get("x")``, ``"x" in m``)."""

    model_config = ConfigDict(extra="allow")

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __contains__(self, key: str) -> bool:
        return hasattr(self, key)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return bool(self.model_dump() == dict(other))
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


class TextContentPart(CustomBaseModel):
    type: Literal["text"] = "text"
    text: str


class ImageUrlSource(CustomBaseModel):
    url: str


class ImageUrlContentPart(CustomBaseModel):
    type: Literal["image_url"] = "image_url"
    image_url: ImageUrlSource


class InputAudioSource(CustomBaseModel):
    data: str
    format: str


class InputAudioContentPart(CustomBaseModel):
    type: Literal["input_audio"] = "input_audio"
    input_audio: InputAudioSource


class GenericContentPart(CustomBaseModel):
    type: str


ContentPart: TypeAlias = (
    TextContentPart
    | ImageUrlContentPart
    | InputAudioContentPart
    | GenericContentPart
    | dict[str, Any]
)
MessageContent: TypeAlias = str | list[ContentPart]


class Tool(CustomBaseModel):
    """A tool definition in the flat 0.3.x shape; :meth:`to_openai` gives the OpenAI schema."""

    name: str
    description: str
    parameters: dict[str, object]
    strict: bool | None = None

    def to_openai(self) -> dict[str, Any]:
        fn: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        if self.strict is not None:
            fn["strict"] = self.strict
        return {"type": "function", "function": fn}


ToolLike: TypeAlias = str | Tool | Callable[..., object]


class RoutedExpertsPayload(TypedDict):
    data: Any
    shape: list[int]
    start: int
    dtype: str


class ResponseTokens(CustomBaseModel):
    prompt_ids: list[int]
    prompt_mask: list[int]
    completion_ids: list[int]
    completion_mask: list[int]
    completion_logprobs: list[float]
    routed_experts: dict[str, Any] | None = None  # a RoutedExpertsPayload


class ResponseMessage(CustomBaseModel):
    role: Literal["assistant"] = "assistant"
    content: MessageContent | None = None
    reasoning_content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    finish_reason: FinishReason = None
    is_truncated: bool | None = None
    tokens: ResponseTokens | None = None


class Response(CustomBaseModel):
    id: str
    created: int
    model: str
    usage: dict[str, int] | None = None
    message: ResponseMessage


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


class TimeSpan(CustomBaseModel):
    """A wall-clock span (``time.time()`` seconds); ``duration`` is 0 until it ends."""

    start: float = 0.0
    end: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def duration(self) -> float:
        return 0.0 if self.end <= 0.0 else self.end - self.start


class TimeSpans(CustomBaseModel):
    spans: list[TimeSpan] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def duration(self) -> float:
        return sum(s.duration for s in self.spans)


class RolloutTiming(CustomBaseModel):
    start_time: float = Field(default_factory=time.time)
    setup: TimeSpan = Field(default_factory=TimeSpan)
    generation: TimeSpan = Field(default_factory=TimeSpan)
    scoring: TimeSpan = Field(default_factory=TimeSpan)
    model: TimeSpans = Field(default_factory=TimeSpans)
    env: TimeSpans = Field(default_factory=TimeSpans)


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


class EndpointClientConfig(BaseModel):
    """One endpoint of a client configuration (the 0.3.x eval runner's shape)."""

    model_config = ConfigDict(extra="allow")
    client_idx: int = 0
    api_key_var: str = "OPENAI_API_KEY"
    api_base_url: str = "https://api.openai.com/v1"
    timeout: float = 3600.0
    max_retries: int = 10
    extra_headers: dict[str, str] = Field(default_factory=dict)


class ClientConfig(EndpointClientConfig):
    client_type: ClientType = "openai_chat_completions"
    endpoint_configs: list[EndpointClientConfig] = Field(default_factory=list)


class EvalConfig(BaseModel):
    """One evaluation of the 0.3.x runner; here ``vf-eval`` takes the same settings as flags."""

    model_config = ConfigDict(extra="allow")
    env_id: str
    env_args: dict[str, Any] = Field(default_factory=dict)
    model: str = ""
    client_config: ClientConfig = Field(default_factory=ClientConfig)
    sampling_args: dict[str, Any] = Field(default_factory=dict)
    num_examples: int = -1
    rollouts_per_example: int = 1
    max_concurrent: int = 32
    save_results: bool = False


class EvalRunConfig(BaseModel):
    model_config = ConfigDict(extra="allow")
    evals: list[EvalConfig]


class StateForTaskDescriptor:
    """``State.for_task(row)``: a fresh state holding a task row's input fields."""

    def __get__(self, instance: object, owner: type) -> Callable[[Mapping[str, Any]], Any]:
        def create(task: Mapping[str, Any]) -> Any:
            payload = flatten_task_input(task)
            return owner({k: payload[k] for k in TASK_INPUT_FIELDS if k in payload})

        return create


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
