"""The ``mini_swe_agent`` harness: SWE-agent's mini-swe-agent (``mini``, pinned version) runs in
the runtime against the rollout's interception channel (litellm's OpenAI provider).

The agent comes from a cached virtual environment (:func:`verifiers.agents.installs.mini_swe_agent_env`:
installed from the package index once, then mounted read-only, so rollouts need no network). It
ends when the model submits (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``) or at its step limit.
"""

from __future__ import annotations

import shlex
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from verifiers.v1.harnesses.program import ProgramHarness, ProgramHarnessConfig

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.task import Task
    from verifiers.v1.trace import Trace

__all__ = ["SUBMIT_COMMAND", "MiniSweAgentHarness", "MiniSweAgentHarnessConfig"]

SUBMIT_COMMAND = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
AGENT_INSIDE = "/opt/vf-agent"


class MiniSweAgentHarnessConfig(ProgramHarnessConfig):
    id: str = "mini_swe_agent"
    version: str = "2.4.6"
    """The mini-swe-agent release (installed once into the agent cache)."""
    agent_env: Path | None = None
    """A virtual environment that already holds mini-swe-agent (default: the cached one)."""
    step_limit: int = Field(default=0, ge=0)
    """The agent's own step cap (0: none; the agent's ``max_turns`` applies either way)."""
    command_timeout: int = Field(default=60, ge=1)
    """Seconds one command of the agent may run."""
    config_file: str = "mini.yaml"
    """mini-swe-agent's built-in config to start from."""


class MiniSweAgentHarness(ProgramHarness[MiniSweAgentHarnessConfig]):
    name = "mini_swe_agent"

    @cached_property
    def agent_env(self) -> Path:
        """The environment holding mini-swe-agent (installed on first use)."""
        if self.config.agent_env is not None:
            return self.config.agent_env
        from verifiers.agents.installs import mini_swe_agent_env

        return mini_swe_agent_env(self.config.version)

    def binds(self) -> dict[str, str]:
        return {str(self.agent_env): AGENT_INSIDE}

    def command(
        self, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> tuple[list[str], dict[str, str]]:
        inside = self.runtime_config(agent).type != "subprocess"
        python = f"{AGENT_INSIDE if inside else self.agent_env}/bin/python"
        options = [
            f"-c {shlex.quote(self.config.config_file)}",
            "-c agent.cost_limit=0",
            f"-c agent.step_limit={self.config.step_limit}",
            f"-c environment.timeout={self.config.command_timeout}",
            "-c model.cost_tracking=ignore_errors",
            '-c "model.model_kwargs.api_base=$OPENAI_BASE_URL"',
            '-c "model.model_kwargs.api_key=$OPENAI_API_KEY"',
        ]
        script = (
            f"exec {shlex.quote(python)} -m minisweagent.run.mini "
            '--model "openai/$OPENAI_MODEL" --model-class litellm --task "$VF_TASK" '
            "--exit-immediately --yolo -o ./mini-swe-agent.traj.json " + " ".join(options)
        )
        env = {
            "VF_TASK": task.data.prompt_text,
            "MSWEA_CONFIGURED": "true",
            "MSWEA_SILENT_STARTUP": "true",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        return ["/bin/sh", "-c", script], env
