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
from typing import TYPE_CHECKING, Any

from verifiers.v1.harnesses.npm_cli import NpmCliHarness, NpmCliHarnessConfig

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.task import Task
    from verifiers.v1.trace import Trace

__all__ = ["CodexHarness", "CodexHarnessConfig"]

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


class CodexHarnessConfig(NpmCliHarnessConfig):
    id: str = "codex"
    version: str = "0.155.1"
    """The Codex release (``@openai/codex`` on npm, installed once)."""
    reasoning_effort: str | None = None
    """Codex's ``model_reasoning_effort`` (None: its default)."""


class CodexHarness(NpmCliHarness[CodexHarnessConfig]):
    name = "codex"
    npm_key = "codex"
    inside = "/opt/vf-codex"

    def command(
        self, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> tuple[list[str], dict[str, str]]:
        settings = list(SETTINGS)
        if self.config.reasoning_effort:
            settings.append(f"model_reasoning_effort={_toml_string(self.config.reasoning_effort)}")
        for tool in self.config.disabled_tools or []:
            settings.append(f"features.{tool}=false")
        options = " ".join(f"-c {shlex.quote(s)}" for s in settings)
        script = (
            'export CODEX_HOME="$PWD/.codex-home" && mkdir -p "$CODEX_HOME" && '
            f"exec {shlex.quote(self.executable(agent))} exec "
            "--skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --color never "
            f'-m "$OPENAI_MODEL" {options} '
            '-c "model_providers.vf.base_url=\\"$OPENAI_BASE_URL\\"" -- "$VF_TASK" </dev/null'
        )
        env = {"VF_TASK": task.data.prompt_text, "NO_COLOR": "1"}
        return ["/bin/sh", "-c", script], env


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
