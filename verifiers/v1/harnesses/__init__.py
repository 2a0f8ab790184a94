"""Built-in harnesses: the program harnesses ``bash``, ``mini_swe_agent``, ``claude_code`` and
``codex``, run in a runtime with their model calls intercepted, and ``rlm`` (nano-rlm over ACP, see
:mod:`verifiers.v1.harnesses.rlm`). All are registered in the harness registry
(:func:`verifiers.v1.utils.loaders.register_harness`) when this package is imported, so a seat
names them by id (``harness_for("bash")``, ``harness_config_type("mini-swe-agent")``)."""

from __future__ import annotations

from typing import Any

from verifiers.v1.harnesses.bash import BashHarness, BashHarnessConfig
from verifiers.v1.harnesses.claude_code import ClaudeCodeHarness, ClaudeCodeHarnessConfig
from verifiers.v1.harnesses.codex import CodexHarness, CodexHarnessConfig
from verifiers.v1.harnesses.mini_swe_agent import MiniSweAgentHarness, MiniSweAgentHarnessConfig
from verifiers.v1.harnesses.program import ProgramHarness, ProgramHarnessConfig
from verifiers.v1.harnesses.rlm import RLMHarness, RLMHarnessConfig
from verifiers.v1.utils.loaders import register_harness

__all__ = [
    "BashHarness",
    "BashHarnessConfig",
    "ClaudeCodeHarness",
    "ClaudeCodeHarnessConfig",
    "CodexHarness",
    "CodexHarnessConfig",
    "MiniSweAgentHarness",
    "MiniSweAgentHarnessConfig",
    "ProgramHarness",
    "ProgramHarnessConfig",
    "RLMHarness",
    "RLMHarnessConfig",
    "builtin_harness",
]

_PROGRAMS: dict[str, type[ProgramHarness[Any]]] = {
    "bash": BashHarness,
    "mini_swe_agent": MiniSweAgentHarness,
    "claude_code": ClaudeCodeHarness,
    "codex": CodexHarness,
}
for _id, _cls in _PROGRAMS.items():
    register_harness(_id, _cls)
register_harness("rlm", RLMHarness)


def builtin_harness(name: str, config: dict[str, Any] | None = None) -> ProgramHarness[Any] | None:
    """The built-in program harness ``name`` (``mini-swe-agent``, ``claude-code`` spelled
    either way) built with ``config``, or None when there is none of that name."""
    cls = _PROGRAMS.get(name.replace("-", "_"))
    if cls is None:
        return None
    return cls(cls.config_type().model_validate({"id": cls.name, **(config or {})}))  # type: ignore[arg-type]
