"""Model clients of the v1 API (0.4.0's ``verifiers.v1.clients``): the endpoint configs,
:func:`resolve_client` (a live client for one), the client type it returns and
:class:`ModelContext` (what a harness is told about the model of one rollout)."""

from __future__ import annotations

from dataclasses import dataclass, field

from verifiers.clients.base import Client
from verifiers.v1.configs.client import (
    BaseClientConfig,
    ClientConfig,
    EvalClientConfig,
    TrainClientConfig,
    build_client,
)
from verifiers.v1.types import Sampling

__all__ = [
    "BaseClientConfig",
    "Client",
    "ClientConfig",
    "EvalClientConfig",
    "ModelContext",
    "TrainClientConfig",
    "resolve_client",
]


def resolve_client(config: BaseClientConfig) -> Client:
    """A live model client for ``config`` (the caller closes it)."""
    return build_client(config)


@dataclass(frozen=True)
class ModelContext:
    """The model, endpoint config and sampling of one rollout."""

    model: str
    client: BaseClientConfig
    sampling: Sampling = field(default_factory=Sampling)
