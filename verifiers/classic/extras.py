"""Module-level names of the classic (0.3.x) environment modules that environment code imports
(``from verifiers.envs.sandbox_env import SandboxState``, ...).

Each environment module serves its own names from here on first use (:data:`SERVED`, read by
:func:`verifiers.classic.forward.resolve` through the module's ``__getattr__``); keeping them in
one place leaves the environment modules about their behaviour and free of classic imports.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypedDict

from verifiers.errors import SandboxError
from verifiers.types import State

__all__ = [
    "SERVED",
    "EnvironmentTeardown",
    "PythonWorkerDeadError",
    "PythonWorkerNotReadyError",
    "PythonWorkerRequestError",
    "PythonWorkerState",
    "RolloutCleanup",
    "SandboxCreationError",
    "SandboxNotReadyError",
    "SandboxState",
    "StopCondition",
    "filter_signature",
]

#: environment module -> the names of this module it serves (as 0.3.x's module of that path did)
SERVED: dict[str, tuple[str, ...]] = {
    "verifiers.envs.environment": ("EnvironmentTeardown", "RolloutCleanup", "StopCondition"),
    "verifiers.envs.sandbox_env": ("SandboxCreationError", "SandboxNotReadyError", "SandboxState"),
    "verifiers.envs.python_env": (
        "PythonWorkerDeadError",
        "PythonWorkerNotReadyError",
        "PythonWorkerRequestError",
        "PythonWorkerState",
    ),
    "verifiers.envs.stateful_tool_env": ("filter_signature",),
}

# environment hooks
StopCondition = Callable[[State], Awaitable[bool]]
RolloutCleanup = Callable[[State], Awaitable[None]]
EnvironmentTeardown = Callable[[], Awaitable[None]]


class SandboxState(TypedDict, total=False):
    """``state["sandbox_state"]`` of a ``SandboxEnv`` rollout."""

    ready: bool
    ready_wait_time: float
    command_execution_times: list[float]
    timeouts: int
    oom: int
    truncated: int


class SandboxCreationError(SandboxError):
    """The sandbox could not be created."""


class SandboxNotReadyError(SandboxError):
    """The sandbox did not become ready."""


class PythonWorkerState(TypedDict, total=False):
    """``state["python_state"]`` of a ``PythonEnv`` rollout."""

    ready: bool
    execution_count: int
    ready_wait_time: float
    cell_times: list[float]
    timeouts: int
    oom: int
    restarts: int


class PythonWorkerNotReadyError(SandboxError):
    """The Python worker did not start."""


class PythonWorkerRequestError(SandboxError):
    """A request to the Python worker failed."""


class PythonWorkerDeadError(SandboxError):
    """The Python worker died."""


def filter_signature(func: Callable[..., Any], args_to_skip: Iterable[str]) -> Callable[..., Any]:
    """A wrapper of ``func`` whose signature and annotations leave out ``args_to_skip`` (and
    ``self``), for building a tool schema without the arguments the environment injects.
    ``func`` itself is not changed; with nothing to skip it is returned as is."""
    skip = set(args_to_skip or ())
    if not skip:
        return func
    sig = inspect.signature(func)
    kept = [p for n, p in sig.parameters.items() if n not in skip and n != "self"]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=kept)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {
        k: v for k, v in getattr(func, "__annotations__", {}).items() if k not in skip
    }
    return wrapper
