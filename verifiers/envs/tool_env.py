"""``ToolEnv``: the model calls Python functions as tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from verifiers.decorators import stop
from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.errors import ConfigError, InfraError, ToolCallError, ToolParseError
from verifiers.messages import ToolMessage
from verifiers.rubrics.monitor_rubrics import ToolMonitorRubric, count_tool_calls
from verifiers.types import Message, Messages, State
from verifiers.utils.async_utils import is_async_callable
from verifiers.utils.tool_schema import function_to_tool_schema, tool_name

__all__ = ["ToolEnv", "ToolMonitorRubric"]


def _default_error_formatter(e: Exception) -> str:
    return f"{e}"


class ToolEnv(MultiTurnEnv):
    """A multi-turn environment whose turn is running the tools the model called.

    Schemas come from type hints and Google docstrings. Several tool calls in one assistant
    message run concurrently; their results are appended in call order. A tool that raises is
    reported to the model as the tool message (formatted by ``error_formatter``) unless the
    exception's type is in ``stop_errors``, which ends the rollout as errored. Infrastructure
    failures (:class:`verifiers.InfraError`, e.g. a dead sandbox) always end it as errored.
    The rollout ends when the model answers without calling a tool.

    Args:
        tools: plain Python functions (sync or async).
        max_turns: model calls per rollout (default 10).
        error_formatter: turns a tool's exception into the text the model sees.
        stop_errors: exception types that end the rollout instead.
    """

    def __init__(
        self,
        tools: list[Callable[..., Any]] | None = None,
        max_turns: int = 10,
        error_formatter: Callable[[Exception], str] = _default_error_formatter,
        stop_errors: list[type[Exception]] | None = None,
        **kwargs: Any,
    ) -> None:
        self.tools: list[Callable[..., Any]] = []
        self.tool_map: dict[str, Callable[..., Any]] = {}
        self._tool_is_async: dict[str, bool] = {}
        self.error_formatter = error_formatter
        self.stop_errors: tuple[type[Exception], ...] = tuple(stop_errors or ())
        tool_defs = list(kwargs.pop("tool_defs", None) or [])
        # the tool-call metrics' names (classic attribute, kept in step with add/remove_tool;
        # the values are written by add_metrics)
        self.tool_monitor_rubric = ToolMonitorRubric()
        super().__init__(max_turns=max_turns, tool_defs=tool_defs, **kwargs)
        if self.message_type != "chat":
            raise ConfigError(
                f"{type(self).__name__} needs message_type='chat': tool calls exist only in "
                "chat completions"
            )
        for tool in tools or []:
            self.add_tool(tool)

    def _register(self, tool: Callable[..., Any], schema: dict[str, Any]) -> None:
        name = tool_name(tool)
        if name in self.tool_map:
            raise ToolParseError(f"two tools are named {name!r}; tool names must be unique")
        self.tools.append(tool)
        self.tool_map[name] = tool
        self._tool_is_async[name] = is_async_callable(tool)
        self.oai_tools.append(schema)
        self.tool_monitor_rubric.add_tool_metric(name)

    def add_tool(self, tool: Callable[..., Any]) -> None:
        """Offer ``tool`` to the model."""
        self._register(tool, function_to_tool_schema(tool))

    def remove_tool(self, tool: Callable[..., Any]) -> None:
        name = tool_name(tool)
        self.tools.remove(self.tool_map.pop(name))
        self._tool_is_async.pop(name, None)
        self.oai_tools[:] = [t for t in self.oai_tools if t["function"]["name"] != name]
        self.tool_monitor_rubric.remove_tool_metric(name)

    @stop
    async def no_tools_called(self, state: State) -> bool:
        completion = state["completion"]
        if not completion:
            return False
        last = completion[-1]
        return bool(last.get("role") == "assistant" and not last.get("tool_calls"))

    async def call_tool(
        self, tool_name: str, tool_args: dict[str, Any], tool_call_id: str, **kwargs: Any
    ) -> Message:
        """Run one tool and return its tool message (errors propagate)."""
        func = self.tool_map[tool_name]
        is_async = self._tool_is_async.get(tool_name)
        if is_async is None:  # put into tool_map directly (classic environments do)
            is_async = is_async_callable(func)
        if is_async:
            result = await func(**tool_args)
        else:
            result = func(**tool_args)
            if asyncio.iscoroutine(result):
                result = await result
        return ToolMessage(content=_tool_content(result), tool_call_id=tool_call_id)

    async def prepare_tool_args(
        self, tool_name: str, tool_args: dict[str, Any], messages: Messages, state: State
    ) -> dict[str, Any]:
        """Hook: adjust the arguments before a call (``StatefulToolEnv`` injects state)."""
        return tool_args

    async def _run_call(self, call: dict[str, Any], messages: Messages, state: State) -> Message:
        call_id = str(call.get("id") or "")
        fn = call.get("function") or call
        name = str(fn.get("name") or "")
        try:
            raw = fn.get("arguments")
            try:  # the arguments first, as 0.3.x does (stop_errors may name JSONDecodeError)
                args = raw if isinstance(raw, dict) else json.loads(raw or "{}")
            except ValueError as e:
                raise ToolParseError(f"arguments of {name!r} are not valid JSON: {e}") from e
            if name not in self.tool_map:
                raise ToolParseError(
                    f"unknown tool {name!r}; available tools: {', '.join(self.tool_map) or 'none'}"
                )
            if not isinstance(args, dict):
                raise ToolParseError(f"arguments of {name!r} must be a JSON object")
            args = await self.prepare_tool_args(name, args, messages, state)
            try:
                return await self.call_tool(name, args, call_id)
            except (InfraError, asyncio.CancelledError):
                raise
            except TypeError as e:
                raise ToolCallError(f"{name}: {e}") from e
        except (InfraError, asyncio.CancelledError):
            raise
        except Exception as e:
            if isinstance(e, self.stop_errors) or isinstance(e.__cause__, self.stop_errors):
                raise  # e.g. stop_errors=[json.JSONDecodeError] for unparsable arguments
            cause = e.__cause__ if isinstance(e, ToolCallError) and e.__cause__ else e
            state["tool_errors"] = state.get("tool_errors", 0) + 1
            text = self.error_formatter(cause if isinstance(cause, Exception) else e)
            return ToolMessage(content=text, tool_call_id=call_id)

    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        calls = messages[-1].get("tool_calls") or []
        if len(calls) == 1:
            return [await self._run_call(calls[0], messages, state)]
        return list(await asyncio.gather(*(self._run_call(c, messages, state) for c in calls)))

    def add_metrics(self, state: State) -> None:
        # the calls the model made, also those a limit stopped before they ran (as 0.3.x)
        counts = count_tool_calls(state.get("completion"))
        state["tool_call_counts"] = counts
        metrics = state["metrics"]
        metrics["total_tool_calls"] = float(sum(counts.values()))
        # one metric per registered tool (as 0.3.x: not for functions put into tool_map)
        for name in (tool_name(t) for t in self.tools):
            metrics[f"{name}_calls"] = float(counts.get(name, 0))


_CONTENT_PART_TYPES = frozenset({"text", "image_url"})


def _tool_content(result: Any) -> Any:
    """What the model sees of a tool's result, as 0.3.x shows it: a list of text/image_url
    content parts as is, anything else as ``str(result)``."""
    if isinstance(result, list) and all(
        isinstance(p, dict) and p.get("type") in _CONTENT_PART_TYPES for p in result
    ):
        return result
    return result if isinstance(result, str) else str(result)


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
