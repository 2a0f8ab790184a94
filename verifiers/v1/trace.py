"""``Trace`` (one agent's rollout record) and ``Episode`` (one run's traces), with their wire
forms ``WireTrace`` / ``WireEpisode`` that read a record back without the task's classes."""

from __future__ import annotations

import copy
import math
import time
import traceback as tb
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, Self

from pydantic import BaseModel, Field, PrivateAttr, SerializeAsAny, model_validator
from typing_extensions import TypeVar

from verifiers.v1.branch import Branch
from verifiers.v1.configs import AgentConfig
from verifiers.v1.configs.agent import WireAgentConfig
from verifiers.v1.graph import RECORD_FLOAT_DECIMALS, MessageNode, private_attrs
from verifiers.v1.run_info import GroupInfo, RunInfo
from verifiers.v1.semantic import ACPInfo, ParentLink, SemanticEdgeSet
from verifiers.v1.state import State, StateT
from verifiers.v1.task import DataT, WireTaskData
from verifiers.v1.types import (
    AssistantMessage,
    Message,
    Messages,
    Tool,
    ToolMessage,
    Usage,
    content_text,
)

if TYPE_CHECKING:
    from verifiers.v1.judge import JudgeResponse

__all__ = [
    "EXCLUDE_FIELDS",
    "TRACE_VERSION",
    "AgentInfo",
    "Branch",
    "EnvInfo",
    "Episode",
    "Error",
    "InterceptRecord",
    "ModelCall",
    "PolicyEvent",
    "Reward",
    "TimeSpan",
    "Timing",
    "Trace",
    "TraceTask",
    "VersionInfo",
    "WireEpisode",
    "WireTrace",
    "min_new_input_tokens",
]

TRACE_VERSION = 1

EXCLUDE_FIELDS: dict[str, Any] = {"nodes": {"__all__": {"routed_experts", "sampling_mask"}}}
"""Per-token tensors of a trace's nodes that travel on the serve wire but are left out of its
JSON record (``to_record``, ``traces.jsonl``)."""

TRUNCATING_STOPS = frozenset(
    {"max_turns", "max_input_tokens", "max_output_tokens", "max_total_tokens", "compaction_failed"}
)
"""Stop conditions that cut a rollout short by a limit (``Trace.is_truncated``)."""

AgentConfigT = TypeVar("AgentConfigT", bound=AgentConfig, default=AgentConfig)


class TimeSpan(BaseModel):
    start: float = 0.0
    end: float = 0.0

    @property
    def duration(self) -> float:
        return max(0.0, self.end - self.start) if self.end else 0.0


class TimeSplit(BaseModel):
    """A measured duration in seconds."""

    duration: float = 0.0


class AgentSpan(TimeSpan):
    """The agent's run, with the part spent waiting on the model and the part in the harness."""

    model: TimeSplit = Field(default_factory=TimeSplit)
    harness: TimeSplit = Field(default_factory=TimeSplit)


class Timing(BaseModel):
    start: float = Field(default_factory=time.time)
    boot: TimeSpan = Field(default_factory=TimeSpan)
    setup: TimeSpan = Field(default_factory=TimeSpan)
    agent: AgentSpan = Field(default_factory=AgentSpan)
    finalize: TimeSpan = Field(default_factory=TimeSpan)
    scoring: TimeSpan = Field(default_factory=TimeSpan)


class Error(BaseModel):
    type: str
    message: str
    status_code: int | None = None
    traceback: str | None = None


class VersionInfo(BaseModel):
    """The verifiers build that recorded a trace: its version and, when known, git commit."""

    version: str
    commit: str | None = None


def _this_build() -> VersionInfo:
    from verifiers import __version__
    from verifiers.v1.utils.version import verifiers_commit

    return VersionInfo(version=__version__, commit=verifiers_commit())


class AgentInfo(BaseModel, Generic[AgentConfigT]):
    config: SerializeAsAny[AgentConfigT]
    name: str = "agent"
    trainable: bool = True


class TraceTask(BaseModel, Generic[DataT]):
    type: str
    data: SerializeAsAny[DataT]  # a TaskData subclass keeps its own fields on the wire
    key: str | None = None
    hash: str | None = None


class Reward(BaseModel):
    score: float
    weight: float = 1.0

    @property
    def value(self) -> float:
        return self.score * self.weight


class PolicyEvent(BaseModel):
    """A decision the framework's policy took on a model request before it was sent (e.g. a
    provider tool removed under the runtime's network policy): a stable ``code`` and the
    request paths it touched (paths only, never the values)."""

    code: str
    paths: list[str]


class ModelCall(BaseModel):
    """One model request: which node it produced, with what, and how long it took."""

    node: int | None = None
    model: str | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    time: TimeSpan = Field(default_factory=TimeSpan)
    error: Error | None = None
    policy: PolicyEvent | None = None
    """What the framework's policy changed in the request before sending it, if anything."""
    acp: ACPInfo | None = None
    """The ACP harness's id for the request (semantic edges name requests by it)."""


def min_new_input_tokens(calls: Iterable[ModelCall]) -> Iterator[tuple[ModelCall, int]]:
    """Each call with usage, with the input tokens it added: its prompt less the previous such
    call's whole sequence (prompt and completion), never below zero. Exact while the history
    only grows; where the engine dropped tokens between calls (stripped reasoning, a trimmed
    history) the count falls short rather than going negative."""
    before = 0
    for call in calls:
        if call.usage is None:
            continue
        yield call, max(0, call.usage.input_tokens - before)
        before = call.usage.total_tokens


class InterceptRecord(BaseModel):
    """One boundary an ``@vf.intercept`` hook replaced: the hook's name."""

    handler: str


class Trace(BaseModel, Generic[DataT, StateT, AgentConfigT]):
    """The record of one agent's rollout on one task."""

    version: int = TRACE_VERSION
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    verifiers: VersionInfo = Field(default_factory=_this_build)
    """The verifiers build that recorded the trace."""
    task: TraceTask[DataT]
    agent: AgentInfo[AgentConfigT]
    tools: list[Tool] = Field(default_factory=list)
    nodes: list[MessageNode] = Field(default_factory=list)
    calls: list[ModelCall] = Field(default_factory=list)
    rewards: dict[str, Reward | None] = Field(default_factory=dict)
    metrics: dict[str, float | None] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)
    extra_usage: list[Usage] = Field(default_factory=list)
    """Usage of calls outside the agent's conversation (judges), kept apart from ``usage``."""
    state: StateT = Field(default_factory=State, exclude=True)  # type: ignore[assignment]
    is_completed: bool = False
    ok: bool = False
    stop_condition: str | None = None
    is_timeout: bool = False
    errors: list[Error] = Field(default_factory=list)
    request_rewrites: list[InterceptRecord] = Field(default_factory=list)
    """The requests (new user or tool messages) an ``@vf.intercept`` hook replaced."""
    response_rewrites: list[InterceptRecord] = Field(default_factory=list)
    """The model replies an ``@vf.intercept`` hook replaced before the harness got them."""
    timing: Timing = Field(default_factory=Timing)
    root_reply: str | None = None
    """The answer the harness reports for the root agent, when it reports one; it is the
    trace's ``last_reply`` (else the last generated reply is)."""
    mm_token_type_id_map: dict[int, int] = Field(default_factory=dict)
    """Placeholder token id -> modality marker (1 image, 2 video) of the multimodal renderer
    that tokenized the trace (``Branch.mm_token_type_ids``); empty for text-only renderers."""
    _node_index: dict[Any, list[int]] = PrivateAttr(default_factory=dict)
    _node_index_at: tuple[list[MessageNode] | None, int] = PrivateAttr(
        default_factory=lambda: (None, -1)  # (a default would be deep-copied per trace)
    )
    _node_index_last: MessageNode | None = PrivateAttr(default=None)
    _watchers: list[Callable[[Trace[Any, Any, Any]], None]] = PrivateAttr(default_factory=list)
    _pending: dict[int, list[Message]] = PrivateAttr(default_factory=dict)

    # change notification (a served episode streams each trace as it grows)
    def watch(self, callback: Callable[[Trace[Any, Any, Any]], None]) -> None:
        """Call ``callback(trace)`` at every :meth:`notify` (each recorded turn)."""
        private_attrs(self)["_watchers"].append(callback)

    def notify(self) -> None:
        """Tell the watchers the trace changed."""
        watchers = private_attrs(self)["_watchers"]
        if watchers:
            for callback in list(watchers):
                callback(self)

    @property
    def pending(self) -> list[Message]:
        """The messages of the requests in flight that no node holds yet, in request order."""
        pending: dict[int, list[Message]] = private_attrs(self)["_pending"]
        return [message for messages in pending.values() for message in messages]

    def preview(self, key: object, messages: Iterable[Message]) -> None:
        """Show watchers the uncommitted messages of one request in flight (e.g. a tool result
        before the model answers it); ``key`` (held by identity) is the request, so
        concurrent requests each clear only their own."""
        private_attrs(self)["_pending"][id(key)] = list(messages)
        self.notify()

    def clear_preview(self, key: object) -> None:
        """The request's previewed messages were committed (or abandoned)."""
        private_attrs(self)["_pending"].pop(id(key), None)

    # the conversation
    @property
    def messages(self) -> Messages:
        """The messages of the last branch, root to leaf."""
        if not self.nodes:
            return []
        path: list[Message] = []
        at: int | None = len(self.nodes) - 1
        while at is not None:
            path.append(self.nodes[at].message)
            at = self.nodes[at].parent
        return path[::-1]

    @property
    def last_message(self) -> Message:
        if not self.nodes:
            raise ValueError("the trace has no messages yet")
        return self.nodes[-1].message

    @property
    def assistant_messages(self) -> list[AssistantMessage]:
        """Every reply the model generated, in order, on whichever branch (assistant messages
        a prompt supplied are not replies)."""
        return [
            n.message for n in self.nodes if n.sampled and isinstance(n.message, AssistantMessage)
        ]

    @property
    def tool_messages(self) -> list[ToolMessage]:
        return [m for m in self.messages if isinstance(m, ToolMessage)]

    @property
    def branches(self) -> list[Branch]:
        """Root-to-leaf paths as flat token sequences (one training sample each)."""
        from verifiers.v1.branch import trace_branches

        return trace_branches(self)

    @property
    def num_branches(self) -> int:
        """How many conversation branches (leaves of the message graph) the trace holds."""
        from verifiers.v1.graph import leaves

        return len(leaves(self))

    @property
    def num_turns(self) -> int:
        """How many messages the model generated."""
        return sum(1 for n in self.nodes if n.sampled)

    @property
    def last_reply(self) -> str:
        """The root agent's reported answer (``root_reply``), else the last generated reply."""
        if self.root_reply is not None:
            return self.root_reply.strip()
        replies = self.assistant_messages
        return content_text(replies[-1].content).strip() if replies else ""

    @property
    def transcript(self) -> str:
        """The conversation as text for a judge: ``[role]`` headed blocks, tool calls as
        ``[tool_call name(arguments)]``; reasoning is left out."""
        blocks: list[str] = []
        for message in self.messages:
            if isinstance(message, ToolMessage) and message.name:
                lines = [f"[tool {message.name}]"]
            else:
                lines = [f"[{message.role}]"]
            if isinstance(message, AssistantMessage):
                if message.content:
                    lines.append(message.content)
                lines.extend(
                    f"[tool_call {call.name}({call.arguments})]"
                    for call in message.tool_calls or []
                )
            elif text := content_text(message.content):
                lines.append(text)
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    def append(self, message: Message, *, sampled: bool = False, **tokens: Any) -> int:
        """Add ``message`` after the last node; returns its index."""
        parent = len(self.nodes) - 1 if self.nodes else None
        self.nodes.append(MessageNode(parent=parent, message=message, sampled=sampled, **tokens))
        return len(self.nodes) - 1

    def add_semantic_edges(self, edge_set: SemanticEdgeSet) -> None:
        """Attach a harness's semantic edges to the nodes its requests produced: each edge
        becomes a :class:`ParentLink` on the target request's node pointing at the source's.
        A request retried after a failure names the last node it committed. Links already
        present are skipped, so a harness may republish its whole set; an edge naming a
        request with no committed node raises, and then no link of the set is added."""
        node_of: dict[str, int] = {}
        for call in self.calls:
            if call.acp is None or call.node is None:
                continue
            if not 0 <= call.node < len(self.nodes):
                raise ValueError(
                    f"model call {call.acp.request_id!r} names node {call.node}, but the trace "
                    f"has {len(self.nodes)} nodes"
                )
            if not self.nodes[call.node].sampled:
                raise ValueError(
                    f"model call {call.acp.request_id!r} names node {call.node}, which the model "
                    "did not generate"
                )
            node_of[call.acp.request_id] = call.node
        resolved: set[tuple[int, int, str]] = set()
        additions: list[tuple[int, ParentLink]] = []
        for edge in edge_set.edges:
            ends: list[int] = []
            for request_id in (edge.source_request_id, edge.target_request_id):
                if request_id not in node_of:
                    raise ValueError(
                        f"semantic edge {edge.type!r} names request {request_id!r}, which has no "
                        "committed message node in this trace (publish edges after the "
                        "request's reply is recorded)"
                    )
                ends.append(node_of[request_id])
            source, target = ends
            if source == target:
                raise ValueError(
                    f"semantic edge {edge.type!r} from {edge.source_request_id!r} to "
                    f"{edge.target_request_id!r} resolves to one message node ({source})"
                )
            if (source, target, edge.type) in resolved:
                raise ValueError(
                    f"semantic edges {edge.type!r} resolve twice to node {source} -> {target}"
                )
            resolved.add((source, target, edge.type))
            link = ParentLink(node=source, type=edge.type)
            if link not in self.nodes[target].semantic_parents:
                additions.append((target, link))
        for target, link in additions:
            self.nodes[target].semantic_parents.append(link)

    # scores
    @property
    def reward(self) -> float:
        """The weighted sum of the recorded rewards."""
        return sum(r.value for r in self.rewards.values() if r is not None)

    @property
    def has_error(self) -> bool:
        return bool(self.errors)

    @property
    def last_error(self) -> Error | None:
        return self.errors[-1] if self.errors else None

    @property
    def usage(self) -> Usage | None:
        used = [c.usage for c in self.calls if c.usage is not None]
        if not used:
            return None
        return Usage(
            input_tokens=sum(u.input_tokens for u in used),
            output_tokens=sum(u.output_tokens for u in used),
        )

    @property
    def num_total_tokens(self) -> int:
        """The tokens of the trace's final sequences (its branches' token ids), else the
        provider's input plus output count."""
        counted = sum(len(branch.token_ids) for branch in self.branches)
        if counted:
            return counted
        usage = self.usage
        return usage.total_tokens if usage is not None else 0

    @property
    def num_output_tokens(self) -> int:
        """Tokens the model generated (the provider's count)."""
        usage = self.usage
        return usage.output_tokens if usage is not None else 0

    @property
    def num_input_tokens(self) -> int:
        """Tokens fed to the model, counted once: the final sequences less what was sampled
        (else the provider's input count of the last call)."""
        spans = self.branches
        if any(branch.token_ids for branch in spans):
            return sum(b.sampled_mask.count(False) for b in spans)
        last = next((c.usage for c in reversed(self.calls) if c.usage is not None), None)
        return last.input_tokens if last is not None else 0

    @property
    def is_truncated(self) -> bool:
        """Stopped by a length limit: a turn or token cap, or a reply cut at ``length``."""
        if self.stop_condition in TRUNCATING_STOPS:
            return True
        last = next((c for c in reversed(self.calls) if c.error is None), None)
        return bool(last and last.finish_reason == "length")

    @model_validator(mode="after")
    def _derive_spans(self) -> Self:
        """Nodes read back with prompt / completion token ids get their spans (a served or
        stored trace reads like one recorded with spans)."""
        from verifiers.v1.branch import fill_spans

        fill_spans(self)
        return self

    def record_metric(self, name: str, value: float) -> None:
        self.metrics[name] = _number(name, value)

    def record_metrics(self, values: Mapping[str, float]) -> None:
        for name, value in values.items():
            self.record_metric(name, value)

    def record_reward(self, name: str, value: float, weight: float = 1.0) -> None:
        self.rewards[name] = Reward(score=_number(name, value), weight=weight)

    def record_judge_call(
        self, *, name: str, request: Mapping[str, Any], response: JudgeResponse[Any]
    ) -> None:
        """Record one judge exchange on ``info["judge_calls"]`` (a copy of the request: later
        changes to it do not reach the record) and its usage on ``extra_usage``."""
        record = response.model_dump(mode="json")
        reply = AssistantMessage(content=record.pop("text"))
        self.info.setdefault("judge_calls", []).append(
            {
                "name": name,
                "request": copy.deepcopy(dict(request)),
                "response": {"message": reply.model_dump(mode="json"), **record},
            }
        )
        if response.usage is not None:
            self.extra_usage.append(response.usage)

    def stop(self, condition: str, override: bool = False) -> None:
        """Mark the rollout stopped by ``condition`` (the first one wins unless ``override``)."""
        if self.stop_condition is None or override:
            self.stop_condition = condition

    def record_timeout(self, stage: str) -> None:
        """A stage's deadline expired: the trace is a timeout, stopped as ``<stage>_timeout``
        (replacing an earlier stop: the deadline is what ended the rollout)."""
        self.is_timeout = True
        self.stop(f"{stage}_timeout", override=True)

    def record_error(self, error: BaseException) -> None:
        self.errors.append(
            Error(
                type=type(error).__name__,
                message=str(error),
                status_code=getattr(error, "status_code", None),
                traceback="".join(tb.format_exception(error)),
            )
        )
        self.stop(error_stop_condition(error))

    def to_record(self, float_decimals: int | None = RECORD_FLOAT_DECIMALS) -> dict[str, Any]:
        """The JSON-ready record written to ``traces.jsonl``: the nodes' raw tensors
        (:data:`EXCLUDE_FIELDS`) left out, per-token float streams rounded to
        ``float_decimals`` (None keeps every digit)."""
        return self.model_dump(
            mode="json", exclude=EXCLUDE_FIELDS, context={"float_decimals": float_decimals}
        )


def error_stop_condition(error: BaseException) -> str:
    """The stop condition an error leaves on a trace (:func:`verifiers.v1.errors.stop_condition`)."""
    from verifiers.v1.errors import stop_condition

    return stop_condition(error)


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)):
        raise TypeError(
            f"score {name!r} must be a number or a bool, got {type(value).__name__}: {value!r}"
        )
    if not math.isfinite(value):
        raise ValueError(f"score {name!r} is {value}; a score must be a finite number")
    return float(value)


class EnvInfo(BaseModel):
    id: str = ""
    name: str | None = None


class Episode(BaseModel, Generic[DataT, StateT, AgentConfigT]):
    """What one env run produces: every agent's trace for one task."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    env: EnvInfo = Field(default_factory=EnvInfo)
    task: TraceTask[DataT]
    group: GroupInfo | None = None
    run: RunInfo | None = None
    ok: bool = False
    is_timeout: bool = False
    errors: list[Error] = Field(default_factory=list)
    traces: list[Trace[DataT, StateT, AgentConfigT]] = Field(default_factory=list)

    @property
    def reward(self) -> float:
        return sum(t.reward for t in self.traces)

    @property
    def num_turns(self) -> int:
        return sum(t.num_turns for t in self.traces)

    @property
    def num_total_tokens(self) -> int:
        return sum(t.num_total_tokens for t in self.traces)

    @property
    def num_input_tokens(self) -> int:
        return sum(t.num_input_tokens for t in self.traces)

    @property
    def num_output_tokens(self) -> int:
        return sum(t.num_output_tokens for t in self.traces)

    def record_run(self, run: RunInfo) -> None:
        """Stamp the run the episode was generated for (a trainer's step and policy)."""
        self.run = run

    @property
    def last_error(self) -> Error | None:
        """The episode's last error, else the last error of its last failed trace."""
        if self.errors:
            return self.errors[-1]
        for trace in reversed(self.traces):
            if trace.errors:
                return trace.errors[-1]
        return None

    def to_record(self, float_decimals: int | None = RECORD_FLOAT_DECIMALS) -> dict[str, Any]:
        """The JSON-ready record of the episode (one line of ``traces.jsonl``), its traces
        recorded as :meth:`Trace.to_record` records them."""
        return self.model_dump(
            mode="json",
            exclude={"traces": {"__all__": EXCLUDE_FIELDS}},
            context={"float_decimals": float_decimals},
        )


WireTrace = Trace[WireTaskData, State, WireAgentConfig]
WireEpisode = Episode[WireTaskData, State, WireAgentConfig]
