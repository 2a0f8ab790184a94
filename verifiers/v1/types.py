"""Message, tool and sampling types of the v1 API (pydantic models, discriminated on ``role``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator
from typing_extensions import TypedDict

__all__ = [
    "ID",
    "AssistantMessage",
    "ContentPart",
    "FinishReason",
    "ImageUrlContentPart",
    "ImageUrlSource",
    "Message",
    "MessageContent",
    "Messages",
    "Request",
    "Response",
    "RoutedExperts",
    "Sampling",
    "SamplingConfig",
    "SamplingMask",
    "SystemMessage",
    "TextContentPart",
    "Tool",
    "ToolCall",
    "ToolMessage",
    "TurnTokens",
    "Usage",
    "UserMessage",
    "content_text",
    "content_to_parts",
]


class TextContentPart(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ImageUrlSource(BaseModel):
    url: str


ImageUrl = ImageUrlSource
"""The former name of :class:`ImageUrlSource`."""


class ImageUrlContentPart(BaseModel):
    type: Literal["image_url"] = "image_url"
    image_url: ImageUrlSource


ContentPart = Annotated[TextContentPart | ImageUrlContentPart, Field(discriminator="type")]
MessageContent = str | list[ContentPart]


def content_to_parts(content: Any) -> MessageContent:
    """OpenAI-style content as typed content: a string as it is (None or empty as ``""``), a
    list as its ``text`` and ``image_url`` parts (an image part without a URL gets ``""``);
    parts of other types, and items that are not dicts, are dropped."""
    if not isinstance(content, list):
        return content or ""
    parts: list[TextContentPart | ImageUrlContentPart] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            parts.append(TextContentPart(text=part.get("text", "")))
        elif kind == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            parts.append(ImageUrlContentPart(image_url=ImageUrlSource(url=url)))
    return list(parts)


def content_text(content: MessageContent | None) -> str:
    """The text of a message's content (text parts joined; images left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content if isinstance(part, TextContentPart))


class SystemMessage(BaseModel):
    role: Literal["system"] = "system"
    content: MessageContent


class UserMessage(BaseModel):
    role: Literal["user"] = "user"
    content: MessageContent


class ToolCall(BaseModel):
    id: str
    type: Literal["function", "custom"] = "function"
    name: str
    namespace: str | None = None
    """The provider namespace the tool name belongs to, where the provider sends it apart."""
    arguments: str


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    provider_state: list[dict[str, Any]] | None = None
    """Provider items replayed verbatim with the message (signed or encrypted reasoning)."""


class ToolMessage(BaseModel):
    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: MessageContent
    name: str | None = None


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]
Messages = list[Message]

FinishReason = Literal["stop", "length", "tool_calls"] | None


class RoutedExperts(TypedDict):
    """A turn's mixture-of-experts routing as an inference server returns it: base64 bytes of
    a ``[tokens, layers, top_k]`` array (``dtype``, uint8 when absent) whose first row is
    sequence position ``start``."""

    data: str
    shape: list[int]
    start: NotRequired[int]
    dtype: NotRequired[str]


@dataclass
class SamplingMask:
    """Per completion token, the token ids that survived the sampler's filters (top-k, top-p,
    ...), stored flat: ``ids`` (int32) holds the rows one after another and ``counts`` (int32)
    each row's length."""

    ids: Any
    counts: Any

    @classmethod
    def from_sampling_mask(cls, sampling_mask: Sequence[Sequence[int]]) -> SamplingMask:
        """The flat form of one row of surviving ids per completion token."""
        import numpy as np

        counts = np.array([len(row) for row in sampling_mask], dtype=np.int32)
        rows = [np.asarray(row, dtype=np.int32) for row in sampling_mask if len(row)]
        ids = np.concatenate(rows) if rows else np.empty(0, dtype=np.int32)
        return cls(ids=ids, counts=counts)


class TurnTokens(BaseModel):
    """The tokens of one model turn: the prompt as the model evaluated it and the completion.
    The fields past ``completion_logprobs`` describe the prompt for the graph's per-message
    attribution (:func:`verifiers.v1.graph.prepare_turn`) and are not serialized."""

    prompt_ids: list[int] = Field(default_factory=list)
    completion_ids: list[int] = Field(default_factory=list)
    completion_logprobs: list[float] = Field(default_factory=list)
    renderer_prompt_ids: list[int] | None = Field(default=None, exclude=True)
    """The prompt as the renderer tokenized it, before the server expanded multimodal
    placeholders; None: the same as ``prompt_ids``."""
    bridged: bool = Field(default=False, exclude=True)
    """The renderer built this prompt by extending the stored prefix's tokens."""
    message_spans: list[tuple[int, int] | None] | None = Field(default=None, exclude=True)
    """Per prompt message, its ``[start, end)`` in the renderer's prompt (None: unattributed)."""
    is_content: list[bool] | None = Field(default=None, exclude=True)
    """Per renderer prompt token, whether it is message content rather than template."""
    mm_placeholders: list[tuple[int, int]] | None = Field(default=None, exclude=True)
    """The ``(offset, length)`` of each expanded multimodal placeholder in ``prompt_ids``."""
    mm_token_type_id_map: dict[int, int] | None = Field(default=None, exclude=True)
    """Placeholder token id -> modality marker (1 image, 2 video) of a multimodal renderer."""
    routed_experts: RoutedExperts | None = Field(default=None, exclude=True)


class Tool(BaseModel):
    """A tool offered to the model: a function (JSON-schema parameters) or a provider's own
    kind (``custom``, ``web_search``, ``mcp`` ...), whose further settings are kept as extra
    fields."""

    model_config = ConfigDict(extra="allow")
    type: str = "function"
    name: str
    namespace: str | None = None
    """The provider namespace the tool is declared in, where the provider groups tools."""
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    strict: bool | None = None


class Request(BaseModel):
    """A model request as v1 reads it: the conversation and the tools offered."""

    messages: Messages
    tools: list[Tool] | None = None


class Usage(BaseModel):
    """Provider token counts; the OpenAI names ``prompt_tokens`` / ``completion_tokens`` are
    accepted and readable too."""

    model_config = ConfigDict(populate_by_name=True)
    input_tokens: int = Field(
        default=0, validation_alias=AliasChoices("input_tokens", "prompt_tokens")
    )
    output_tokens: int = Field(
        default=0, validation_alias=AliasChoices("output_tokens", "completion_tokens")
    )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens

    @property
    def completion_tokens(self) -> int:
        return self.output_tokens


class SamplingConfig(BaseModel):
    """Sampling knobs; provider-specific keys pass through. ``max_completion_tokens`` and an
    ``extra_body`` layer are folded into one key per parameter."""

    model_config = ConfigDict(extra="allow")
    temperature: float | None = None
    top_p: float | None = None
    reasoning_effort: str | None = None
    max_tokens: int | None = Field(
        default=None, validation_alias=AliasChoices("max_tokens", "max_completion_tokens")
    )

    @model_validator(mode="before")
    @classmethod
    def _fold(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        folded: dict[str, Any] = {}
        for layer in (data.get("extra_body") or {}, data):
            layer = {k: v for k, v in layer.items() if k != "extra_body"}
            if "max_completion_tokens" in layer:
                layer.setdefault("max_tokens", layer.pop("max_completion_tokens"))
            folded.update(layer)
        return folded

    def as_args(self) -> dict[str, Any]:
        """The set knobs as request sampling arguments."""
        return self.model_dump(exclude_none=True)


Sampling = SamplingConfig

ID = str
"""An identifier (a task key, a tool-call id ...): a plain string."""


class Response(BaseModel):
    """One model reply with its tokens, as the graph commits it."""

    id: str
    created: int
    model: str
    message: AssistantMessage
    finish_reason: FinishReason
    usage: Usage | None = None
    tokens: TurnTokens | None = None
