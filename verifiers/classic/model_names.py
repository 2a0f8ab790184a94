"""The names :mod:`verifiers.classic.models` defines: the pydantic models of the classic (0.3.x)
``verifiers.types`` module. Listed apart, in one place, so that :mod:`verifiers.types` can name
them (and serve them on first use) without importing pydantic, and
:mod:`verifiers.classic.models` exports exactly these.
"""

from __future__ import annotations

__all__ = ["CLASSIC_MODEL_NAMES"]

CLASSIC_MODEL_NAMES: tuple[str, ...] = (
    "ClientConfig",
    "ContentPart",
    "CustomBaseModel",
    "EndpointClientConfig",
    "EvalConfig",
    "EvalRunConfig",
    "GenericContentPart",
    "ImageUrlContentPart",
    "ImageUrlSource",
    "InputAudioContentPart",
    "InputAudioSource",
    "MessageContent",
    "Response",
    "ResponseMessage",
    "ResponseTokens",
    "RolloutTiming",
    "TextContentPart",
    "TimeSpan",
    "TimeSpans",
    "Tool",
    "ToolLike",
)
