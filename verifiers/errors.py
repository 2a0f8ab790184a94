"""The exceptions verifiers raises, in one tree.

::

    VerifiersError                      base of everything raised on purpose
    ├── ConfigError                     bad arguments: unknown keyword, wrong type, bad file
    ├── EnvironmentNotFoundError        unknown environment id ("did you mean", install command)
    ├── ModelError                      the model's answer cannot be used
    │   ├── EmptyModelResponseError     no choices / no content and no tool calls
    │   ├── InvalidModelResponseError   malformed body, wrong shape
    │   └── OverlongPromptError         the prompt exceeds the context window / max_seq_len
    ├── ToolError                       a tool call went wrong
    │   ├── ToolParseError              arguments are not valid JSON / not an object
    │   └── ToolCallError               the tool raised
    ├── RewardError                     a reward function raised
    ├── HubClientError                  a hub request failed, or the hub settings are unusable
    └── InfraError                      something outside the model's control failed
        ├── EndpointError               the inference endpoint failed after retries
        ├── TunnelError                 a tunnel to a remote service failed (classic name)
        └── SandboxError                the sandbox (not the program in it) failed
            └── BrowserSandboxError     a browser sandbox failed (classic name)

``Error`` is the classic (0.3.x) name of ``VerifiersError``.

A rollout that raises a ``ModelError`` or ``InfraError`` is recorded as errored; trainers drop
errored rollouts instead of training on them. ``ToolError`` is returned to the model as the tool
message unless its type is listed in the environment's ``stop_errors``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "BrowserSandboxError",
    "ConfigError",
    "EmptyModelResponseError",
    "EndpointError",
    "EnvironmentNotFoundError",
    "Error",
    "HubClientError",
    "InfraError",
    "InvalidModelResponseError",
    "ModelError",
    "OverlongPromptError",
    "RewardError",
    "SandboxError",
    "ToolCallError",
    "ToolError",
    "ToolParseError",
    "TunnelError",
    "VerifiersError",
]


class VerifiersError(Exception):
    """Base class of every exception verifiers raises on purpose."""


class ConfigError(VerifiersError, ValueError):
    """Invalid configuration: an unknown keyword argument, a wrong value, a bad file."""


class EnvironmentNotFoundError(VerifiersError, LookupError):
    """No installed environment matches the id.

    The message names the id, the closest installed ids and the command that installs it.
    """

    def __init__(self, env_id: str, candidates: Iterable[str] = ()) -> None:
        self.env_id = env_id
        self.candidates = list(candidates)
        if self.candidates:  # likely a typo: point at the installed one, not at installing the typo
            super().__init__(
                f"environment {env_id!r} is not installed. Did you mean: "
                f"{', '.join(self.candidates)}?"
            )
            return
        install = f"vf env install {env_id}" if "/" in env_id else f"vf env install OWNER/{env_id}"
        # a package directory is suggested only where there is one (a checkout's environments/)
        name = env_id.split("/")[-1].split("@")[0]
        local = Path("environments") / name
        also = f", or `pip install -e {local}`" if (local / "pyproject.toml").is_file() else ""
        super().__init__(
            f"environment {env_id!r} is not installed: install it with `{install}`{also}"
        )


class ModelError(VerifiersError):
    """The model's response cannot be used."""


class EmptyModelResponseError(ModelError):
    """The model returned no choices, or a message with neither content nor tool calls."""


class InvalidModelResponseError(ModelError):
    """The endpoint's answer is malformed (not JSON, wrong shape)."""


class OverlongPromptError(ModelError):
    """The prompt is longer than the model's context window or ``max_seq_len``."""


class ToolError(VerifiersError):
    """A tool call failed."""


class ToolParseError(ToolError):
    """The model's tool call arguments are not a valid JSON object, or name an unknown tool."""


class ToolCallError(ToolError):
    """The tool function raised."""


class RewardError(VerifiersError):
    """A reward function raised. Recorded on the rollout with its traceback; never a silent 0."""

    def __init__(self, func_name: str, message: str, traceback: str = "") -> None:
        self.func_name = func_name
        self.traceback = traceback
        super().__init__(f"reward function {func_name!r} raised: {message}")


class InfraError(VerifiersError):
    """Infrastructure failed (endpoint, sandbox): the rollout is errored, not scored."""


class EndpointError(InfraError):
    """The inference endpoint failed after all retries (status, connection, timeout)."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        self.status_code = status_code
        super().__init__(message)


class SandboxError(InfraError):
    """The sandbox itself failed (could not start, died, lost). The program failing is not this."""


class HubClientError(VerifiersError):
    """A hub request failed (unreachable, refused, HTTP error) or the hub settings are unusable.

    ``hint`` is the next step for the user; ``status_code`` the HTTP status, when there was one.
    """

    def __init__(
        self, message: str, *, hint: str | None = None, status_code: int | None = None
    ) -> None:
        self.hint = hint
        self.status_code = status_code
        super().__init__(message)


class TunnelError(InfraError):
    """A tunnel to a remote service failed (kept for classic code that catches it)."""


class BrowserSandboxError(SandboxError):
    """A browser sandbox failed (kept for classic code that catches it)."""


Error = VerifiersError


# names 0.3.x's version of this module imports, served on first use (registered by verifiers.classic)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
