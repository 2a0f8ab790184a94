"""Metric-only rubrics of the classic environment modules (0.3.x names).

Environments here write these metrics themselves (``num_turns`` for every rollout, tool-call
counts in ``ToolEnv``, sandbox and worker counters in ``SandboxEnv``/``PythonEnv``); the rubrics
exist for classic code that builds them or adds them to a :class:`~verifiers.RubricGroup`.
Every function has weight 0, so the reward is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from verifiers.rubrics.rubric import Rubric

__all__ = [
    "MultiTurnMonitorRubric",
    "PythonMonitorRubric",
    "SandboxMonitorRubric",
    "ToolMonitorRubric",
    "count_tool_calls",
]


def count_tool_calls(completion: Any) -> dict[str, int]:
    """Calls per tool name that the model made in ``completion`` (its assistant messages),
    whether or not they ran: a rollout stopped by a limit still counts the calls it asked for."""
    counts: dict[str, int] = {}
    if not isinstance(completion, list):
        return counts
    for message in completion:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            name = (fn or call).get("name") if isinstance(fn or call, dict) else None
            key = str(name or "")
            counts[key] = counts.get(key, 0) + 1
    return counts


class MultiTurnMonitorRubric(Rubric):
    """The ``num_turns`` metric: model calls in the rollout."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_metric(self.num_turns)

    async def num_turns(self, state: Any) -> float:
        return float(len(state.get("trajectory") or []))


class ToolMonitorRubric(Rubric):
    """``total_tool_calls`` and one ``<tool>_calls`` metric per tool name, counted from the calls
    the model made."""

    def __init__(self, tool_names: Iterable[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tool_names: list[str] = []
        self.add_metric(self.total_tool_calls)
        for name in tool_names or []:
            self.add_tool_metric(name)

    async def total_tool_calls(self, completion: Any) -> float:
        return float(sum(count_tool_calls(completion).values()))

    def get_tool_call_count_func(self, tool_name: str) -> Callable[..., Any]:
        async def count(completion: Any) -> float:
            return float(count_tool_calls(completion).get(tool_name, 0))

        count.__name__ = f"{tool_name}_calls"
        count.__qualname__ = count.__name__
        return count

    def add_tool_metric(self, tool_name: str) -> None:
        if tool_name not in self.tool_names:
            self.tool_names.append(tool_name)
            self.add_metric(self.get_tool_call_count_func(tool_name))

    def remove_tool_metric(self, tool_name: str) -> None:
        if tool_name in self.tool_names:
            self.tool_names.remove(tool_name)
            self._funcs[:] = [e for e in self._funcs if e[0].__name__ != f"{tool_name}_calls"]
            self._changed()


class _StateCounters(Rubric):
    """Metrics ``<prefix>_<counter>`` read from the counters an environment keeps in
    ``state[<prefix>_state]``."""

    prefix = ""
    counters: tuple[str, ...] = ()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for counter in self.counters:
            self.add_metric(self._reader(counter))

    def _reader(self, counter: str) -> Callable[..., Any]:
        holder = f"{self.prefix}_state"

        def read(state: Any) -> float:
            return float((state.get(holder) or {}).get(counter) or 0)

        read.__name__ = read.__qualname__ = f"{self.prefix}_{counter}"
        return read


class SandboxMonitorRubric(_StateCounters):
    """``sandbox_timeouts``, ``sandbox_oom`` and ``sandbox_truncated``."""

    prefix = "sandbox"
    counters = ("timeouts", "oom", "truncated")


class PythonMonitorRubric(_StateCounters):
    """``python_timeouts``, ``python_restarts`` and ``python_oom`` of the Python worker."""

    prefix = "python"
    counters = ("timeouts", "restarts", "oom")
