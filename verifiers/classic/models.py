"""Pydantic models of the classic (0.3.x) ``verifiers.types`` module.

Their instances also read like dicts (``obj["field"]``, ``obj.get("field")``, ``"field" in
obj``), as 0.3.x's did. ``verifiers.types`` serves these names on first use (importing pydantic
models costs time the hot path does not need).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    field_serializer,
    field_validator,
    model_validator,
)

from verifiers.classic.model_names import CLASSIC_MODEL_NAMES
from verifiers.classic.types import ClientType, FinishReason
from verifiers.model_types import Usage

__all__ = list(CLASSIC_MODEL_NAMES)  # CustomBaseModel, Response, Tool, ...


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
    thinking_blocks: list[dict[str, Any]] | None = None  # Anthropic's signed thinking
    tool_calls: list[dict[str, Any]] | None = None
    finish_reason: FinishReason = None
    is_truncated: bool | None = None
    tokens: ResponseTokens | None = None


class Response(CustomBaseModel):
    id: str
    created: int
    model: str
    usage: dict[str, int] | Usage | None = None  # 0.3.x passes a vf.Usage
    message: ResponseMessage

    @field_serializer("usage")
    def _dump_usage(self, usage: dict[str, int] | Usage | None) -> dict[str, int] | None:
        return usage.model_dump() if isinstance(usage, Usage) else usage


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


class EndpointClientConfig(BaseModel):
    """One endpoint of a client configuration (the 0.3.x eval runner's shape)."""

    model_config = ConfigDict(extra="allow")
    client_idx: int = 0
    api_key_var: str = "OPENAI_API_KEY"
    api_base_url: str = "https://api.openai.com/v1"
    timeout: float = 3600.0
    connect_timeout: float = 5.0
    max_connections: int = 28000
    max_keepalive_connections: int = 28000
    max_retries: int = 10
    extra_headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("extra_headers")
    @classmethod
    def _header_names(cls, value: dict[str, str]) -> dict[str, str]:
        """Header names must be non-empty tokens (no whitespace, no ``:``), as HTTP needs."""
        for name in value:
            if not name.strip() or any(c.isspace() or c == ":" for c in name):
                raise ValueError(f"extra_headers: {name!r} is not a valid HTTP header name")
        return value

    @model_validator(mode="before")
    @classmethod
    def _leaf_only(cls, data: Any) -> Any:
        """An endpoint of ``endpoint_configs`` is a leaf: it cannot list endpoints itself
        (an empty ``endpoint_configs`` key is accepted and dropped)."""
        if cls is EndpointClientConfig and isinstance(data, Mapping) and "endpoint_configs" in data:
            if data["endpoint_configs"]:
                raise ValueError(
                    "an entry of endpoint_configs cannot include endpoint_configs of its own"
                )
            data = {k: v for k, v in data.items() if k != "endpoint_configs"}
        return data


class ClientConfig(EndpointClientConfig):
    """A trainer's description of an inference endpoint (``client_idx`` numbers the trainer's
    endpoints; ``endpoint_configs`` lists alternatives, picked by ``client_idx``).
    ``extra_headers_from_state`` maps header names to state fields whose values are sent with
    each request of a rollout (e.g. ``{"X-Session-ID": "example_id"}``)."""

    client_type: ClientType = "openai_chat_completions"
    renderer_config: Any | None = None
    renderer_model_name: str | None = None
    renderer_pool_size: int | None = None
    endpoint_configs: list[EndpointClientConfig] = Field(default_factory=list)
    extra_headers_from_state: dict[str, str] = Field(default_factory=dict)


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
