"""The ``claude_code`` harness: Anthropic's Claude Code CLI (pinned release from npm) runs
headless (``claude -p``) in the runtime, its Messages API calls pointed at the rollout's
interception channel (``$ANTHROPIC_BASE_URL``) and answered by the agent's model.

The CLI's native executable comes from the agent cache (:func:`verifiers.agents.npm_installs.npm_agent`:
installed from the npm registry once, then mounted read-only), so rollouts need no network:
telemetry, error reporting, the auto-updater and every other call that is not a model call are
switched off. Tool permissions are skipped (``--dangerously-skip-permissions``): the runtime is
the sandbox. The rollout ends when the CLI prints its result and exits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from verifiers.v1.harnesses.npm_cli import NpmCliHarness, NpmCliHarnessConfig

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.task import Task
    from verifiers.v1.trace import Trace

__all__ = ["ClaudeCodeHarness", "ClaudeCodeHarnessConfig"]

#: what keeps the CLI to model calls only (no telemetry, updates, feedback or error reports)
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "IS_SANDBOX": "1",
}


class ClaudeCodeHarnessConfig(NpmCliHarnessConfig):
    id: str = "claude_code"
    version: str = "2.1.278"
    """The Claude Code release (``@anthropic-ai/claude-code`` on npm, installed once)."""
    max_turns: int = Field(default=0, ge=0)
    """The CLI's own turn cap (``--max-turns``; 0: none; the agent's ``max_turns`` applies
    either way)."""
    append_system_prompt: str | None = None
    """Text added to Claude Code's own system prompt."""


class ClaudeCodeHarness(NpmCliHarness[ClaudeCodeHarnessConfig]):
    name = "claude_code"
    npm_key = "claude-code"
    inside = "/opt/vf-claude-code"

    def command(
        self, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> tuple[list[str], dict[str, str]]:
        # stdin closed: the CLI otherwise waits 3 s for piped input before it starts
        argv = ["/bin/sh", "-c", 'exec "$@" </dev/null', "claude"]
        argv += [self.executable(agent), "-p"]
        argv += ["--output-format", "json", "--model", agent.model]
        argv += ["--dangerously-skip-permissions"]
        if self.config.max_turns:
            argv += ["--max-turns", str(self.config.max_turns)]
        if self.config.disabled_tools:
            argv += ["--disallowedTools", ",".join(self.config.disabled_tools)]
        if self.config.append_system_prompt:
            argv += ["--append-system-prompt", self.config.append_system_prompt]
        argv += ["--", task.data.prompt_text]  # a prompt starting with '-' is no option
        env = {
            **QUIET_ENV,
            # every model the CLI might pick (its small one for side tasks too) is the agent's
            "ANTHROPIC_SMALL_FAST_MODEL": agent.model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": agent.model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": agent.model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": agent.model,
            "CLAUDE_CONFIG_DIR": ".claude-config",
        }
        return argv, env
