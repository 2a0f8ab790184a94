"""Runtimes an agent program runs in: ``subprocess``, ``bwrap`` and ``docker`` (our sandboxes).
An ``e2b`` config (:class:`E2BConfig`, E2B's hosted sandboxes) validates but cannot be run here."""

from verifiers.v1.configs.runtime import NetworkPolicyConfig
from verifiers.v1.runtimes.base import (
    BwrapConfig,
    BwrapRuntime,
    DockerConfig,
    DockerRuntime,
    ProgramResult,
    Runtime,
    RuntimeConfig,
    SubprocessConfig,
    SubprocessRuntime,
    base_sandbox_labels,
    make_runtime,
    set_base_sandbox_labels,
)
from verifiers.v1.runtimes.e2b import E2BConfig

__all__ = [
    "BwrapConfig",
    "BwrapRuntime",
    "DockerConfig",
    "DockerRuntime",
    "E2BConfig",
    "NetworkPolicyConfig",
    "ProgramResult",
    "Runtime",
    "RuntimeConfig",
    "SubprocessConfig",
    "SubprocessRuntime",
    "base_sandbox_labels",
    "make_runtime",
    "set_base_sandbox_labels",
]
