"""``MultiTurnEnv``: the model and the environment take turns."""

from __future__ import annotations

import abc
import logging
from typing import Any

from verifiers.envs.environment import Environment
from verifiers.types import Messages, State

logger = logging.getLogger(__name__)

__all__ = ["MultiTurnEnv"]


class MultiTurnEnv(Environment):
    """An environment that answers each model message until a stop condition holds.

    Subclasses implement :meth:`env_response` (returning the new messages to append) and may
    override ``is_completed(messages, state)`` (classic) or add ``@vf.stop`` methods.

    Args:
        max_turns: model calls per rollout (``-1``: unlimited; other limits still apply).
        timeout_seconds: wall-clock limit per rollout (generation, tools and scoring).
        max_total_completion_tokens: completion-token budget per rollout.
        **kwargs: see :class:`Environment`.
    """

    num_turns_metric = True

    def __init__(
        self,
        max_turns: int = -1,
        timeout_seconds: float | None = None,
        max_total_completion_tokens: int = -1,
        **kwargs: Any,
    ) -> None:
        if getattr(type(self).env_response, "__isabstractmethod__", False):
            raise TypeError(
                f"Can't instantiate abstract class {type(self).__name__} without an "
                "implementation for abstract method 'env_response'"
            )
        super().__init__(
            max_turns=max_turns,
            timeout_seconds=timeout_seconds,
            max_total_completion_tokens=max_total_completion_tokens,
            **kwargs,
        )

    def set_max_total_completion_tokens(self, max_total_completion_tokens: int) -> None:
        self.max_total_completion_tokens = max_total_completion_tokens

    @abc.abstractmethod
    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        """The environment's reply to the model's last message: the messages to append."""


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402
from verifiers.rubrics.monitor_rubrics import (  # noqa: E402  (classic module-level name)
    MultiTurnMonitorRubric as MultiTurnMonitorRubric,
)

__getattr__ = _forwarder(__name__)
