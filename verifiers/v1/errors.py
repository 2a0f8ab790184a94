"""Errors of the v1 API; each names the stage that failed. 0.4.0's names are here too:
``RolloutError`` (the base, :class:`V1Error`), ``ProviderError`` (:class:`ModelError`), and
``EnvError``, ``ToolsetError``, ``SandboxError``, ``InterceptionError``, ``TunnelError``."""

from __future__ import annotations

from verifiers.errors import VerifiersError

__all__ = [
    "AgentError",
    "EnvError",
    "HarnessError",
    "InterceptionError",
    "ModelError",
    "ProviderError",
    "RolloutError",
    "SandboxError",
    "TaskError",
    "ToolsetError",
    "TunnelError",
    "V1Error",
]


class V1Error(VerifiersError):
    """Base of the v1 errors."""


RolloutError = V1Error
"""0.4.0's name of the base of the errors a rollout records."""


class TaskError(V1Error):
    """A task hook (setup, scoring, a reward or metric function, an interceptor) failed."""


class EnvError(V1Error):
    """The env's own code (its ``setup``, ``run`` or ``finalize``) failed."""


class AgentError(V1Error):
    """The agent's run failed."""


class HarnessError(AgentError):
    """The harness failed (a bad harness name, a broken program)."""


class ModelError(AgentError):
    """The model endpoint failed or answered unusably."""


ProviderError = ModelError
"""0.4.0's name of :class:`ModelError`."""


class ToolsetError(AgentError):
    """A toolset (a tool server) failed to start or to serve."""


class SandboxError(AgentError):
    """The runtime (sandbox) the agent runs in failed."""


class InterceptionError(V1Error):
    """The model-call interception between a harness program and the model failed."""


class TunnelError(InterceptionError):
    """The tunnel that lets a remote runtime reach the interception server failed."""
