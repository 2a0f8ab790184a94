"""The requests and replies of the v1 serve wire (see :mod:`verifiers.v1.serve`)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from verifiers.v1.configs.client import ClientConfig
from verifiers.v1.serve.delta import TraceSummary
from verifiers.v1.types import SamplingConfig

__all__ = [
    "BaseRequest",
    "BaseResponse",
    "CancelRequest",
    "CancelResponse",
    "EpisodeResponse",
    "HealthRequest",
    "HealthResponse",
    "RunRequest",
    "RunResponse",
]


class BaseRequest(BaseModel):
    """A request; ``method`` travels as its own frame, not in the payload."""

    method: ClassVar[str]


class BaseResponse(BaseModel):
    success: bool = True
    error: str | None = None


class HealthRequest(BaseRequest):
    method: ClassVar[str] = "health"


class HealthResponse(BaseResponse):
    pass


class CancelRequest(BaseRequest):
    """Stop the run sent under ``request_id``; a finished or unknown run is not an error."""

    method: ClassVar[str] = "cancel"
    request_id: str


class CancelResponse(BaseResponse):
    cancelled: bool = False
    """Whether a run in flight was found and stopped."""


class RunRequest(BaseRequest):
    """Run one episode of the task whose data is ``task_data`` (its dumped ``TaskData``; the
    server validates it into the taskset's own class), calling ``model`` at ``client``."""

    method: ClassVar[str] = "run"
    task_data: dict[str, Any]
    client: ClientConfig
    model: str
    sampling: SamplingConfig = Field(default_factory=lambda: SamplingConfig.model_validate({}))


class RunResponse(BaseResponse):
    """The end of a run whose traces streamed as deltas: the episode without its traces
    (``head``) and each trace's size, in episode order."""

    head: dict[str, Any] | None = None
    traces: list[TraceSummary] = Field(default_factory=list)


class EpisodeResponse(BaseResponse):
    """A run's reply to a two-frame client (:mod:`verifiers.v1.serve.wire`): the whole
    episode, its traces inline."""

    episode: dict[str, Any] | None = None
