"""The ``codex`` harness: OpenAI's Codex CLI (pinned release from npm) runs headless
(``codex exec``) in the runtime, its model provider pointed at the rollout's interception channel
(the Responses API, ``$OPENAI_BASE_URL``) and answered by the agent's model.

The CLI's native executable comes from the agent cache (:func:`verifiers.agents.npm_installs.npm_agent`:
installed from the npm registry once, then mounted read-only), so rollouts need no network. Its
own sandbox and approvals are off (``--dangerously-bypass-approvals-and-sandbox``): the runtime
is the sandbox. Its home (``CODEX_HOME``) is a directory of the rollout's work dir, and the update
check, web search and analytics are switched off. The rollout ends when ``codex exec`` exits.
"""

from __future__ import annotations

import shlex
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import field_validator

from verifiers.v1.harnesses.claude_code.harness import check_pinned
from verifiers.v1.harnesses.program import ProgramHarness, ProgramHarnessConfig

if TYPE_CHECKING:
    from verifiers.agents.npm_installs import NpmInstall
    from verifiers.v1.agent import Agent
    from verifiers.v1.task import Task
    from verifiers.v1.trace import Trace

__all__ = ["CodexHarness", "CodexHarnessConfig"]

INSIDE = "/opt/vf-codex"
#: ``-c`` overrides (TOML values) beyond the provider: nothing but model calls leaves the CLI
SETTINGS = (
    'model_provider="vf"',
    'model_providers.vf.name="verifiers"',
    'model_providers.vf.env_key="OPENAI_API_KEY"',
    'model_providers.vf.wire_api="responses"',
    "model_providers.vf.request_max_retries=0",
    "model_providers.vf.stream_max_retries=0",
    "check_for_update_on_startup=false",
    'web_search="disabled"',
    "analytics.enabled=false",
    "feedback.enabled=false",
    'history.persistence="none"',
    "features.apps=false",
    "features.plugins=false",
    "features.multi_agent=false",
)


class CodexHarnessConfig(ProgramHarnessConfig):
    id: str = "codex"
    version: str = "0.155.1"
    """The Codex release (``@openai/codex`` on npm, installed once)."""
    reasoning_effort: str | None = None
    """Codex's ``model_reasoning_effort`` (None: its default)."""

    @field_validator("version")
    @classmethod
    def _pinned(cls, value: str) -> str:
        return check_pinned(value)


class CodexHarness(ProgramHarness[CodexHarnessConfig]):
    name = "codex"

    @cached_property
    def install(self) -> NpmInstall:
        """The CLI's cached install (made on first use)."""
        from verifiers.agents.npm_installs import CODEX, npm_agent

        return npm_agent(CODEX, self.config.version)

    def binds(self) -> dict[str, str]:
        return {str(self.install.directory): INSIDE}

    def command(
        self, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> tuple[list[str], dict[str, str]]:
        inside = self.runtime_config(agent).type != "subprocess"
        root = INSIDE if inside else str(self.install.directory)
        settings = list(SETTINGS)
        if self.config.reasoning_effort:
            settings.append(f"model_reasoning_effort={_toml_string(self.config.reasoning_effort)}")
        for tool in self.config.disabled_tools or []:
            settings.append(f"features.{tool}=false")
        options = " ".join(f"-c {shlex.quote(s)}" for s in settings)
        script = (
            'export CODEX_HOME="$PWD/.codex-home" && mkdir -p "$CODEX_HOME" && '
            f"exec {shlex.quote(f'{root}/{self.install.executable}')} exec "
            "--skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --color never "
            f'-m "$OPENAI_MODEL" {options} '
            '-c "model_providers.vf.base_url=\\"$OPENAI_BASE_URL\\"" -- "$VF_TASK" </dev/null'
        )
        env = {"VF_TASK": task.data.prompt_text, "NO_COLOR": "1"}
        return ["/bin/sh", "-c", script], env


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
