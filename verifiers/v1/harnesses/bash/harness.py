"""The ``bash`` harness: a tool-calling agent program with a ``bash`` tool (and ``edit``), run in
a runtime with its model calls intercepted."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import Field

from verifiers.v1.harnesses.program import ProgramHarness, ProgramHarnessConfig
from verifiers.v1.harnesses.programs import TOOL_LOOP_PROGRAM
from verifiers.v1.types import SystemMessage, content_text

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.runtimes import Runtime, RuntimeConfig
    from verifiers.v1.task import Task
    from verifiers.v1.trace import Trace

__all__ = ["BASH_SYSTEM_PROMPT", "EDIT_SYSTEM_PROMPT", "BashHarness", "BashHarnessConfig"]

BASH_SYSTEM_PROMPT = "You are a coding agent working in a shell. Use the bash tool to run commands."
EDIT_SYSTEM_PROMPT = "The edit tool replaces one exact occurrence of a string in a file."
INPUT_FILE = ".vf_agent_input.json"
LOCAL_NOTE = (
    "bash harness: its tools run in a local bwrap sandbox on this machine (0.4.0 runs them in "
    "a hosted sandbox); pick another with --env.agent.runtime.type docker"
)
_noted: list[bool] = []
logger = logging.getLogger("verifiers.v1.harnesses.bash")


class BashHarnessConfig(ProgramHarnessConfig):
    id: str = "bash"
    edit: bool = True
    """Offer the ``edit`` tool next to ``bash``."""
    max_steps: int = Field(default=50, ge=1)
    """Model calls the program makes at most (``max_turns`` of the agent also applies)."""
    command_timeout: float = Field(default=120.0, gt=0)
    """Seconds one bash command may run."""
    max_output: int = Field(default=16000, ge=100)
    """Characters of a tool result kept (the middle is cut)."""


class BashHarness(ProgramHarness[BashHarnessConfig]):
    name = "bash"
    SUPPORTS_TOOL_INTERCEPTION = True
    SUPPORTS_MCP = True
    NEEDS_CONTAINER = False

    def runtime_config(self, agent: Agent) -> RuntimeConfig:
        """As :meth:`ProgramHarness.runtime_config`; the first time a process runs the bash
        harness in ``bwrap``, one line says so (0.4.0 runs it in a hosted sandbox)."""
        config = super().runtime_config(agent)
        if config.type == "bwrap" and not _noted:
            _noted.append(True)
            logger.warning(LOCAL_NOTE)
        return config

    def system_prompt(self, task_system: str) -> str:
        own = BASH_SYSTEM_PROMPT + (" " + EDIT_SYSTEM_PROMPT if self.config.edit else "")
        return "\n\n".join(p for p in (own, task_system) if p)

    async def prepare(
        self, runtime: Runtime, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> None:
        from verifiers.v1.dialects.chat import message_to_wire

        messages = trace.messages
        task_system = ""
        if messages and isinstance(messages[0], SystemMessage):
            task_system = content_text(messages[0].content)
            messages = messages[1:]
        opening = [
            {"role": "system", "content": self.system_prompt(task_system)},
            *(message_to_wire(m) for m in messages),
        ]
        payload = {
            "messages": opening,
            "tools": ["bash", "edit"] if self.config.edit else ["bash"],
            "max_steps": self.config.max_steps,
            "command_timeout": self.config.command_timeout,
            "max_output": self.config.max_output,
        }
        import json

        await runtime.write(INPUT_FILE, json.dumps(payload))

    def command(
        self, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> tuple[list[str], dict[str, str]]:
        return ["python3", "-c", TOOL_LOOP_PROGRAM, INPUT_FILE], {}
