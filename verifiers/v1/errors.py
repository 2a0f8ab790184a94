"""Errors of the v1 API; each names the stage that failed. 0.4.0's names are here too:
``RolloutError`` (the base, :class:`V1Error`), ``ProviderError`` (:class:`ModelError`), and
``EnvError``, ``ToolsetError``, ``SandboxError``, ``InterceptionError``, ``TunnelError``.

:func:`boundary` attributes whatever escapes a call into task or plugin code to one of these
types, :func:`stop_condition` names the stop an error leaves on a trace, and
:func:`model_error` turns a failed provider call into a :class:`ModelError` carrying the HTTP
status a harness's SDK should see."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from verifiers.errors import VerifiersError

__all__ = [
    "MODEL_TRANSPORT_ERROR_EXIT_CODE",
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
    "boundary",
    "model_error",
    "stop_condition",
]

MODEL_TRANSPORT_ERROR_EXIT_CODE = 97
"""The exit code a harness program reserves for "the model could not be reached, retries
spent"; a program exiting with it failed on the model transport, not on its own."""


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
    """The model endpoint failed or answered unusably. ``status_code`` is the HTTP status a
    harness program is answered with (its SDK retries 5xx, 429 and timeouts, not other 4xx):
    the provider's own, or one chosen for a transport failure (502 when unknown)."""

    def __init__(self, message: str = "", *, status_code: int = 502) -> None:
        super().__init__(message)
        self.status_code = status_code


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


@contextlib.asynccontextmanager
async def boundary(error_cls: type[V1Error], what: str) -> AsyncIterator[None]:
    """Run the block as a call across one boundary (into a task hook, a harness, ...): an
    exception escaping it becomes ``error_cls`` (``"<what>: <Type>: <message>"``, the original
    as its cause; a ``TimeoutError`` the block raises itself becomes ``"<what> timed out"``).
    A v1 error passes unchanged: it was attributed at a more specific boundary already."""
    try:
        yield
    except V1Error:
        raise
    except TimeoutError as exc:
        raise error_cls(f"{what} timed out") from exc
    except Exception as exc:
        raise error_cls(f"{what}: {type(exc).__name__}: {exc}") from exc


def stop_condition(error: BaseException) -> str:
    """The stop condition an error leaves on a trace: ``<kind>_error`` for a v1 error, its
    class name less ``Error``, lower-cased (``task_error``, ``sandbox_error``;
    ``provider_error`` for a model failure, ``rollout_error`` for the base class), ``error``
    for any other exception."""
    if isinstance(error, ModelError):
        return "provider_error"
    if type(error) is V1Error:
        return "rollout_error"
    if isinstance(error, V1Error):
        return f"{type(error).__name__.removesuffix('Error').lower()}_error"
    return "error"


def provider_status(error: BaseException | str) -> int:
    """The HTTP status to answer a harness with for a failed provider call: an HTTP error's
    own status, 504 for a timeout, 503 for a connection failure, else 502. The error's causes
    are looked through (a client's error raised from the transport's), and both the OpenAI
    SDK's errors and our clients' (``verifiers.clients``: ``status_code``, a transient
    ``kind``) are read."""
    import openai

    seen: BaseException | None = error if isinstance(error, BaseException) else None
    while seen is not None:
        if isinstance(seen, openai.APIStatusError):
            return seen.status_code
        if isinstance(seen, openai.APITimeoutError):  # a kind of connection error: first
            return 504
        if isinstance(seen, openai.APIConnectionError):
            return 503
        status = getattr(seen, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
            return status
        kind = getattr(seen, "kind", None)
        if kind == "timeout":
            return 504
        if kind == "connection":
            return 503
        seen = seen.__cause__ or seen.__context__
    return 502


def model_error(error: BaseException | str, *, status_code: int | None = None) -> ModelError:
    """The :class:`ModelError` for a failed provider call: ``error`` is the SDK's exception or
    the provider's error body; its status is ``status_code`` when given, else
    :func:`provider_status`'s. The message is the error's text (its type's name when that is
    empty)."""
    text = str(error) or (type(error).__name__ if isinstance(error, BaseException) else "")
    status = status_code if status_code is not None else provider_status(error)
    return ModelError(text, status_code=status)
