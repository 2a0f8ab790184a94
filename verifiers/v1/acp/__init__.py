"""Harnesses whose agent program speaks the Agent Client Protocol (ACP): the framework opens one
ACP session per rollout, sends each user turn as a prompt, and reads the agent's result and
extension metadata back. What this package implements is the framework's side of the results:
:class:`ACPTurn` (one prompt's result), :class:`ACPConfig` (the session a harness asks for) and
:class:`ACPHarness`, which attaches the protocol's semantic edges
(:data:`~verifiers.v1.semantic.ACP_SEMANTIC_EDGES_METADATA_KEY`) to the trace and hands each
turn's and the session close's metadata to its subclass. The ACP session driver itself (the
JSON-RPC client run next to the agent program) is not included: running an ACP harness here
raises :class:`~verifiers.v1.errors.HarnessError` saying so."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar

from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.errors import HarnessError
from verifiers.v1.harness import Harness
from verifiers.v1.semantic import ACP_SEMANTIC_EDGES_METADATA_KEY, SemanticEdgeSet
from verifiers.v1.trace import Trace
from verifiers.v1.types import Messages

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.task import Task

__all__ = ["ACPConfig", "ACPHarness", "ACPTurn", "JsonObject", "JsonValue"]

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
JsonObject: TypeAlias = dict[str, JsonValue]


class ACPTurn(BaseModel):
    """The result of one ACP prompt: the agent's ``reply``, why it stopped, and the extension
    metadata of the response and of the session updates streamed during the turn."""

    model_config = ConfigDict(extra="forbid", strict=True)

    reply: str
    stop_reason: str | None = None
    response_metadata: dict[str, Any] = Field(default_factory=dict)
    update_metadata: list[dict[str, Any]] = Field(default_factory=list)


@dataclass
class ACPConfig:
    """The ACP session a harness asks for: the agent program (``command``, run with ``env``),
    the opening ``prompt``, MCP servers to attach, and the session's extension metadata."""

    env: dict[str, str]
    command: list[str]
    prompt: str | Messages | None
    mcp_urls: dict[str, str] | None = None
    system_prompt: str | None = None
    session_meta: JsonObject | None = None
    client_capabilities: JsonObject | None = None


ACPHarnessConfigT = TypeVar("ACPHarnessConfigT", bound=HarnessConfig, default=HarnessConfig)


class ACPHarness(Harness[ACPHarnessConfigT]):
    """A harness backed by one ACP session per rollout. A subclass says which session to open
    (:meth:`acp_config`) and reads its agent's results (:meth:`acp_turn_result`,
    :meth:`acp_close_result`); semantic edges published under the protocol's metadata key are
    attached for every ACP harness (:meth:`_consume_protocol_metadata`)."""

    AGENT_PROGRAM: ClassVar[str] = "an ACP agent program"
    """What the harness runs, for error messages (the program and where it comes from)."""

    @abstractmethod
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
        """The session for ``trace``'s rollout: the agent reaches the model at ``endpoint``
        with ``secret`` as its key."""

    def acp_turn_result(self, trace: Trace, result: ACPTurn) -> None:
        """Read one prompt's result (its protocol metadata was consumed just before)."""

    def acp_close_result(self, trace: Trace, response_metadata: dict[str, Any]) -> None:
        """Read the metadata the agent returned when its session closed."""

    def _consume_protocol_metadata(self, trace: Trace, response_metadata: dict[str, Any]) -> None:
        """Attach the semantic edges a response publishes (cumulatively: edges already on the
        trace are not added twice); a response without them changes nothing."""
        edges = response_metadata.get(ACP_SEMANTIC_EDGES_METADATA_KEY)
        if edges is not None:
            trace.add_semantic_edges(SemanticEdgeSet.model_validate(edges))

    async def run(self, task: Task[Any, Any, Any], trace: Trace, agent: Agent) -> bool:
        raise HarnessError(
            f"harness {self.config.id!r} runs {self.AGENT_PROGRAM} over the Agent Client "
            "Protocol (ACP), and this package does not include an ACP session driver; run it with "
            "upstream verifiers 0.4 (`pip install verifiers==0.4.0`, `verifiers.v1`), or pick a "
            "program harness here (`bash`, `mini_swe_agent`)"
        )
