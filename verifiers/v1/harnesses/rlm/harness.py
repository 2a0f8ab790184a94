"""The ``rlm`` harness: nano-rlm (github.com/PrimeIntellect-ai/nano-rlm), a recursive agent that
spawns sub-agents and compacts its context, run over ACP.

Implemented here: its config (the session policy nano-rlm reads), the runtime metadata its ACP
session opens with (:meth:`RLMHarness.runtime_metadata`), and how its results land on the trace:
each turn's and the session close's snapshot (``ai.prime.rlm/session-v1``) records the session's
metrics, and a budget stop reason becomes the matching truncating stop condition; the semantic
edges it publishes (sub-agent calls, compaction attempts...) link the trace's nodes, so a
rejected compaction attempt's branch is not trained on. Running the agent itself needs the ACP
session driver this package does not include (see :mod:`verifiers.v1.acp`)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, model_validator

from verifiers.v1.acp import ACPConfig, ACPHarness, ACPTurn, JsonObject
from verifiers.v1.configs import Config
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.harness import opening_messages
from verifiers.v1.semantic import ACP_REQUEST_ID_PATTERN
from verifiers.v1.trace import Trace
from verifiers.v1.types import Messages, SystemMessage, UserMessage

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.task import Task

__all__ = [
    "RLM_RUNTIME_METADATA_KEY",
    "RLM_SESSION_METADATA_KEY",
    "CompactionConfig",
    "RLMHarness",
    "RLMHarnessConfig",
]

RLM_REPO = "github.com/PrimeIntellect-ai/nano-rlm.git"
RLM_CACHE_DIR = "/tmp/vf-rlm"
RLM_STATE_DIR = "/tmp/vf-rlm-state"
RLM_RUNTIME_METADATA_KEY = "ai.prime.rlm/runtime-v1"
"""The session-opening metadata key nano-rlm reads its model endpoint and policy from."""
RLM_SESSION_METADATA_KEY = "ai.prime.rlm/session-v1"
"""The response metadata key of nano-rlm's session snapshot (metrics, last stop reason)."""

BuiltinSkill = Literal["bash", "edit", "fetch", "search"]
BuiltinTool = Literal["bash", "edit", "fetch", "ipython"]
_EDIT: BuiltinSkill = "edit"

STOP_CONDITIONS: dict[str, str] = {
    "max_total_tokens": "max_total_tokens",
    "max_total_turns": "max_turns",
    "token_budget": "max_output_tokens",
    "compaction_failed": "compaction_failed",
}
"""nano-rlm's budget stop reasons -> the trace's (truncating) stop conditions; any other
reason (``done``, none) leaves the stop to the rollout (``agent_completed``)."""


class SessionSnapshot(BaseModel):
    """nano-rlm's report on its session (unknown keys ignored)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    session_id: str = Field(pattern=ACP_REQUEST_ID_PATTERN)
    metrics: dict[str, int | float]
    last_stop_reason: str | None = None


class CompactionConfig(Config):
    """When nano-rlm compacts its context."""

    summarize_at_tokens: PositiveInt | None = None
    """Compact at this many context tokens (None: when 16k tokens remain of the model's
    advertised context window)."""
    max_compactions: PositiveInt | None = None
    """Compactions per session (None: nano-rlm's default)."""
    max_attempts: PositiveInt | None = None
    """Summary attempts per compaction (None: nano-rlm's default, 5)."""


class RLMHarnessConfig(HarnessConfig):
    """The ``rlm`` harness: which nano-rlm to install and the policy of its sessions (a None
    knob is left out of the session, so nano-rlm's own default applies)."""

    id: str = "rlm"
    version: str = Field(default="c38e20b60c90bbf625274d3fde2b2a384f390a66", min_length=1)
    """The nano-rlm git ref to install (at least the default: it must know every field this
    harness sends)."""
    max_depth: NonNegativeInt | None = None
    """How deep sub-agents may recurse (0: no sub-agents; None: nano-rlm's default, 1)."""
    builtin_skills: list[BuiltinSkill] = Field(default_factory=lambda: [_EDIT])
    """nano-rlm's built-in skills to enable."""
    builtin_tools: list[BuiltinTool] | None = None
    """The native tools (None: nano-rlm's selection, and the key is left out)."""
    compaction: CompactionConfig | bool | None = None
    """``true`` or a section: compact (with those settings); ``false``: never (an overflowing
    session fails); None: nano-rlm's default (on, automatic thresholds)."""
    max_concurrent_subagents: PositiveInt | None = None
    """Sub-agents running at once per session tree (None: nano-rlm's 4, raised to an
    explicit ``max_depth``)."""
    max_subagent_calls: PositiveInt | None = None
    """Sub-agent calls per session tree (None: uncapped)."""
    delegation_prompt: bool | None = None
    """Append nano-rlm's guidance on delegating to sub-agents (None: its default, off)."""
    exec_timeout: PositiveInt | None = None
    """Seconds one IPython or native tool execution may take (None: nano-rlm's 300)."""
    allow_git: bool | None = None
    """Allow Git history queries such as ``git log --all`` (None: nano-rlm's default, no)."""
    max_total_turns: PositiveInt | None = None
    """Model calls of the whole session tree (None: uncapped); spent, it stops as
    ``max_turns``."""
    max_total_tokens: NonNegativeInt | None = 10_000_000
    """New tokens (completion plus uncached prompt) of the whole session tree; spent, it stops
    as ``max_total_tokens``. 0: no budget; None: nano-rlm's default (1,000,000)."""
    max_tool_output_bytes: PositiveInt | None = None
    """Bytes of one tool result kept in the conversation (None: nano-rlm's 20KB)."""
    append_to_system_prompt: str | None = None
    """Appended to the root agent's system prompt, after the task's."""
    subagent_append_to_system_prompt: str | None = None
    """Appended for sub-agents that may still delegate (None: ``append_to_system_prompt``)."""
    leaf_append_to_system_prompt: str | None = None
    """Appended for sub-agents at the depth limit (None: the sub-agent append)."""

    @model_validator(mode="after")
    def _check_policy(self) -> Self:
        if self.disabled_tools:
            raise ValueError(
                "the rlm harness has no `disabled_tools`; choose its tools with "
                "`builtin_tools` and its skills with `builtin_skills`"
            )
        if (
            self.max_depth is not None
            and self.max_concurrent_subagents is not None
            and self.max_concurrent_subagents < self.max_depth
        ):
            raise ValueError(
                f"max_concurrent_subagents ({self.max_concurrent_subagents}) must be at least "
                f"max_depth ({self.max_depth}); nano-rlm rejects the policy otherwise"
            )
        return self


class RLMHarness(ACPHarness[RLMHarnessConfig]):
    """nano-rlm over ACP (see the module docstring for what runs here)."""

    name = "rlm"
    AGENT_PROGRAM = f"nano-rlm (`rlm --acp`, installed from {RLM_REPO})"

    def install_dir(self) -> str:
        """Where the configured nano-rlm version is installed in a runtime (one per version)."""
        digest = hashlib.sha256(self.config.version.encode()).hexdigest()
        return f"{RLM_CACHE_DIR}-{digest}"

    def policy(self) -> JsonObject:
        """The session policy nano-rlm reads: the set knobs only, except that a
        ``max_total_tokens`` of 0 is sent as an explicit null (nano-rlm's "unbounded")."""
        config = self.config
        concurrent = config.max_concurrent_subagents
        if concurrent is None and config.max_depth is not None:
            concurrent = max(4, config.max_depth)
        knobs: dict[str, Any] = {
            "max_depth": config.max_depth,
            "max_concurrent_subagents": concurrent,
            "max_subagent_calls": config.max_subagent_calls,
            "delegation_prompt": config.delegation_prompt,
            "exec_timeout": config.exec_timeout,
            "allow_git": config.allow_git,
            "max_total_turns": config.max_total_turns,
            "max_total_tokens": config.max_total_tokens or None,
            "max_tool_output_bytes": config.max_tool_output_bytes,
        }
        compaction = config.compaction
        if isinstance(compaction, bool):
            knobs["compaction"] = compaction
        elif compaction is not None:
            knobs["compaction"] = True
            knobs["summarize_at_tokens"] = compaction.summarize_at_tokens
            knobs["max_compactions"] = compaction.max_compactions
            knobs["max_compaction_attempts"] = compaction.max_attempts
        policy: JsonObject = {k: v for k, v in knobs.items() if v is not None}
        if config.max_total_tokens == 0:
            policy["max_total_tokens"] = None
        return policy

    def runtime_metadata(
        self,
        trace: Trace,
        *,
        model: str,
        endpoint: str,
        secret: str,
        system_prompt: str | None,
        kernel_env: dict[str, str] | None = None,
    ) -> JsonObject:
        """The metadata nano-rlm's session opens with: the session id (the trace's), the model
        and its endpoint, the policy, the system prompt appends and the skills."""
        config = self.config
        appends = [text for text in (system_prompt, config.append_to_system_prompt) if text]
        payload: JsonObject = {
            "session_id": trace.id,
            "model": model,
            "provider": {"base_url": endpoint, "api_key": secret},
            "policy": self.policy(),
            "system_prompt_path": None,
            "append_to_system_prompt": "\n\n".join(appends) or None,
            "subagent_append_to_system_prompt": config.subagent_append_to_system_prompt,
            "leaf_append_to_system_prompt": config.leaf_append_to_system_prompt,
            "skills": list(config.builtin_skills),
            "kernel_env": dict(kernel_env or {}),
            "search_api_key": config.resolved_env.get("SERPER_API_KEY"),
        }
        if config.builtin_tools is not None:
            payload["builtin_tools"] = list(config.builtin_tools)
        return {RLM_RUNTIME_METADATA_KEY: payload}

    def acp_config(
        self,
        task: Task[Any, Any, Any],
        trace: Trace,
        agent: Agent,
        *,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str] | None = None,
    ) -> ACPConfig:
        """``rlm --acp`` with its home under the rollout's state directory; the task's system
        prompt goes to nano-rlm as an append (it keeps its own), its prompt opens the session."""
        opening = opening_messages(task.data)
        system = next((m for m in opening if isinstance(m, SystemMessage)), None)
        users: Messages = [m for m in opening if isinstance(m, UserMessage)]
        prompt = task.data.prompt if isinstance(task.data.prompt, str) else users or None
        system_prompt = system.content if system is not None else None
        return ACPConfig(
            env={**self.config.resolved_env, "RLM_HOME": f"{RLM_STATE_DIR}/{trace.id}/home"},
            command=[f"{self.install_dir()}/bin/rlm", "--acp"],
            prompt=prompt,
            mcp_urls=mcp_urls,
            session_meta=self.runtime_metadata(
                trace,
                model=agent.model,
                endpoint=endpoint,
                secret=secret,
                system_prompt=system_prompt if isinstance(system_prompt, str) else None,
            ),
        )

    def _consume_snapshot(self, trace: Trace, metadata: dict[str, Any]) -> None:
        snapshot = SessionSnapshot.model_validate(metadata.get(RLM_SESSION_METADATA_KEY))
        if snapshot.session_id != trace.id:
            raise ValueError(
                f"the rlm session snapshot is of session {snapshot.session_id!r}, not of this "
                f"rollout ({trace.id!r})"
            )
        trace.record_metrics(snapshot.metrics)
        condition = STOP_CONDITIONS.get(snapshot.last_stop_reason or "")
        if condition is not None:
            trace.stop(condition)

    def acp_turn_result(self, trace: Trace, result: ACPTurn) -> None:
        """Record the turn's session snapshot (metrics; a budget stop)."""
        self._consume_snapshot(trace, result.response_metadata)

    def acp_close_result(self, trace: Trace, response_metadata: dict[str, Any]) -> None:
        """Record the closing snapshot, when the session close returned one."""
        if RLM_SESSION_METADATA_KEY in response_metadata:
            self._consume_snapshot(trace, response_metadata)
