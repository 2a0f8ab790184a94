"""``StatefulToolEnv``: tools with hidden arguments injected from the rollout state."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

from verifiers.envs.tool_env import ToolEnv
from verifiers.types import Messages, State
from verifiers.utils.async_utils import call_maybe_async
from verifiers.utils.tool_schema import function_to_tool_schema, tool_name

__all__ = ["StatefulToolEnv"]


class StatefulToolEnv(ToolEnv):
    """A :class:`ToolEnv` whose tools take arguments the model never sees (a sandbox id, a
    session handle). Register them with ``add_tool(func, args_to_skip=[...])`` and fill them in
    :meth:`update_tool_args`."""

    def __init__(self, tools: list[Callable[..., Any]] | None = None, **kwargs: Any) -> None:
        self.skipped_args: dict[str, list[str]] = {}
        super().__init__(tools=tools, **kwargs)

    def add_tool(self, tool: Callable[..., Any], args_to_skip: list[str] | None = None) -> None:
        """Offer ``tool`` to the model, hiding ``args_to_skip`` from its schema."""
        skip = list(args_to_skip or [])
        self._register(tool, function_to_tool_schema(tool, skip=skip))
        self.skipped_args[tool_name(tool)] = skip

    @abc.abstractmethod
    def update_tool_args(
        self,
        tool_name: str,
        tool_args: dict[str, Any],
        messages: Messages,
        state: State,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Return the arguments to call ``tool_name`` with (may update ``state`` in place).
        May be ``async``."""

    async def prepare_tool_args(
        self, tool_name: str, tool_args: dict[str, Any], messages: Messages, state: State
    ) -> dict[str, Any]:
        hidden = self.skipped_args.get(tool_name)
        if hidden:  # the model may not set hidden arguments itself
            tool_args = {k: v for k, v in tool_args.items() if k not in hidden}
        result = await call_maybe_async(
            self.update_tool_args, tool_name, tool_args, messages, state
        )
        return dict(result if result is not None else tool_args)


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
