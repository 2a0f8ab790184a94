"""The names 0.3.x's core modules defined that live in the classic room here.

0.3.x's ``verifiers.types`` defined the pydantic models (``ClientConfig``, ``Response``,
``Tool``, ...) and the record types of its evaluation API (``RolloutOutput``,
``GenerateOutputs``, ...); its ``verifiers.clients`` defined ``resolve_client``. Here those are
classic-only (:mod:`verifiers.classic.models`, :mod:`verifiers.classic.types`,
:mod:`verifiers.classic.clients`), and the core modules do not import them: ``import
verifiers`` registers :func:`resolve` with :mod:`verifiers.extension_points`, so that each core
module's ``__getattr__`` serves them on first use (``from verifiers.types import ClientConfig``),
and the names of :data:`EXPORTS` join the module's ``__all__`` (``from verifiers.types import *``).

Naming them costs no import: the module that defines a name is imported when it is asked for.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

from verifiers.classic.model_names import CLASSIC_MODEL_NAMES

__all__ = ["CLASSIC_TYPE_NAMES", "EXPORTS", "SERVED", "resolve"]

#: the names :mod:`verifiers.classic.types` defines (0.3.x's ``verifiers.types`` had them)
CLASSIC_TYPE_NAMES: tuple[str, ...] = (
    "AnthropicThinkingBlock",
    "BaseRolloutInput",
    "ClientType",
    "DatasetBuilder",
    "EndpointApi",
    "EndpointClient",
    "ErrorData",
    "EvalCost",
    "FinishReason",
    "GenerateMetadata",
    "GenerateOutputs",
    "GroupRewardFunc",
    "IndividualRewardFunc",
    "JsonPrimitive",
    "LogCallback",
    "ModelPricing",
    "ProgressCallback",
    "RedactedThinkingBlock",
    "RolloutOutput",
    "RolloutScore",
    "RolloutScores",
    "RoutedExpertsPayload",
    "StartCallback",
    "ThinkingBlock",
    "TokenUsage",
    "TrajectoryStepTokens",
    "VersionInfo",
    "assert_json_serializable",
)

#: core module -> {name: the classic module that defines it}
SERVED: dict[str, dict[str, str]] = {
    "verifiers.types": {
        **dict.fromkeys(CLASSIC_TYPE_NAMES, "verifiers.classic.types"),
        **dict.fromkeys(CLASSIC_MODEL_NAMES, "verifiers.classic.models"),
    },
    "verifiers.clients": {
        "resolve_client": "verifiers.classic.clients",
        "RendererClient": "verifiers.classic.clients",  # 0.3.x serves it lazily from there
    },
}

#: core module -> the served names its ``__all__`` lists (as 0.3.x's module's did)
EXPORTS: dict[str, tuple[str, ...]] = {
    "verifiers.types": (*CLASSIC_TYPE_NAMES, *CLASSIC_MODEL_NAMES),
}


def resolve(module: str, name: str) -> Any:
    """``module.name`` for a name of :data:`SERVED` (kept on the module, so later lookups do
    not come back here); ``AttributeError`` for any other."""
    source = SERVED.get(module, {}).get(name)
    if source is None:
        raise AttributeError(name)
    value = getattr(import_module(source), name)
    owner = sys.modules.get(module)
    if owner is not None:
        setattr(owner, name, value)
    return value
