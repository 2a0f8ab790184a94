"""``SingleTurnEnv``: one prompt, one model answer."""

from __future__ import annotations

from typing import Any

from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.errors import ConfigError
from verifiers.types import Messages, State

__all__ = ["SingleTurnEnv"]


class SingleTurnEnv(MultiTurnEnv):
    """One model call per rollout (chat or completion). See :class:`Environment` for arguments."""

    def __init__(self, **kwargs: Any) -> None:
        if kwargs.get("max_turns", 1) != 1:
            raise ConfigError("SingleTurnEnv always runs exactly one turn; drop max_turns")
        kwargs.pop("max_turns", None)
        super().__init__(max_turns=1, **kwargs)

    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        """Never called: the rollout ends after the model's one answer."""
        raise NotImplementedError("env_response is not implemented for SingleTurnEnv")


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
