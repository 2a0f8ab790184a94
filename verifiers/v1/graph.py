"""Message nodes: a trace stores its conversation as nodes linked to their parent."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, SerializationInfo, field_serializer, field_validator
from pydantic.json_schema import SkipJsonSchema

from verifiers.v1.semantic import ParentLink
from verifiers.v1.turn_tokens import (
    PromptTokens,
    attribute_prompt,
    attribute_routing,
    fits_between,
    has_span,
    prompt_token_ids,
)
from verifiers.v1.types import (
    AssistantMessage,
    Message,
    Response,
    TextContentPart,
    Tool,
    ToolMessage,
    TurnTokens,
)

if TYPE_CHECKING:
    from verifiers.v1.trace import Trace

__all__ = [
    "RECORD_FLOAT_DECIMALS",
    "MessageNode",
    "PendingTurn",
    "continue_branch",
    "decode_ndarray",
    "encode_ndarray",
    "leaves",
    "message_hash",
    "message_prefix_len",
    "node_key",
    "path",
    "prepare_turn",
    "private_attrs",
    "tools_hash",
]

RECORD_FLOAT_DECIMALS = 4
"""Decimals the per-token float streams of a node (``logprobs``, ``advantages``,
``reference_logprobs``) keep in a JSON record (``Trace.to_record``, ``Episode.to_record``,
whose ``float_decimals`` overrides it; None keeps every digit): a logprob stays within 1e-4 of
what the trainer saw. The serve wire keeps full precision."""


def private_attrs(model: BaseModel) -> dict[str, Any]:
    """``model``'s private attributes, as the dict pydantic keeps them in: reading
    ``model._name`` goes through ``BaseModel.__getattr__`` (microseconds, on the hot path)."""
    private = model.__pydantic_private__
    assert private is not None
    return private


class MessageNode(BaseModel):
    """One message of a trace; ``parent`` is the index of the node before it (None at a root).
    ``sampled`` is true for messages the model generated."""

    parent: int | None = None
    message: Message
    sampled: bool = False
    tools: list[Tool] = Field(default_factory=list)
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    completion_logprobs: list[float] | None = None
    timestamp: float = Field(default_factory=time.time)
    token_ids: list[int] = Field(default_factory=list)
    """The tokens this node adds to its branch's sequence, where the recorder knows the span
    (template tokens and, on a sampled node, the completion); ``mask`` marks the sampled ones,
    ``logprobs`` are those of the sampled tokens. Empty: the span is derived from
    ``prompt_token_ids`` / ``completion_token_ids``."""
    mask: list[bool] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)
    semantic_parents: list[ParentLink] = Field(default_factory=list)
    is_content: list[bool] = Field(default_factory=list)
    """Per token of the span, whether it is message content (not template); empty: unknown."""
    advantages: list[float] | None = None
    """Trainer annotations, per sampled token of the span."""
    reference_logprobs: list[float] | None = None
    loss_weights: dict[str, list[float]] | None = None
    multi_modal_data: dict[str, Any] | None = None
    """The renderer's items for the images this message introduces, as plain data
    (``mm_items``, ``mm_hashes``, ``mm_placeholders``, each by modality); a branch joins them
    (:attr:`~verifiers.v1.branch.Branch.multi_modal_data`, prime-rl's training input)."""
    """Per loss stream, a weight per token of the span."""
    renderer_token_ids: list[int] | None = Field(default=None, exclude=True)
    """The node's span as the renderer tokenized it (before multimodal placeholders were
    expanded), kept while the rollout is live so a later prompt can extend it; None: the same
    as ``token_ids``. Not serialized."""
    routed_experts: SkipJsonSchema[Any | None] = None
    """The mixture-of-experts routing of the node's tokens (a numpy array ``[tokens, layers,
    top_k]``) when the inference server reports it."""

    @property
    def logical_ids(self) -> list[int]:
        """The span in the renderer's tokens (``renderer_token_ids``, else ``token_ids``)."""
        return self.token_ids if self.renderer_token_ids is None else self.renderer_token_ids

    @field_serializer("logprobs", "advantages", "reference_logprobs", when_used="json")
    def _round_floats(
        self, values: list[float] | None, info: SerializationInfo
    ) -> list[float] | None:
        """Rounded to the dump's ``float_decimals`` context, when it gives one (a record)."""
        context = info.context if isinstance(info.context, dict) else {}
        decimals = context.get("float_decimals")
        if values is None or decimals is None:
            return values
        return [round(value, decimals) for value in values]

    @field_serializer("routed_experts")
    def _dump_routing(self, value: Any, info: SerializationInfo) -> dict[str, Any] | None:
        return None if value is None else encode_ndarray(value, binary=info.mode != "json")

    @field_validator("routed_experts", mode="before")
    @classmethod
    def _load_routing(cls, value: Any) -> Any:
        return decode_ndarray(value) if isinstance(value, dict) else value


def encode_ndarray(array: Any, *, binary: bool = True) -> dict[str, Any]:
    """A numpy array as plain data: dtype, shape and its bytes (base64 text unless ``binary``)."""
    import numpy as np

    contiguous = np.ascontiguousarray(array)
    raw = contiguous.tobytes()
    return {
        "__nd__": True,
        "dtype": str(contiguous.dtype),
        "shape": list(contiguous.shape),
        "data": raw if binary else base64.b64encode(raw).decode("ascii"),
    }


def decode_ndarray(data: dict[str, Any]) -> Any:
    """The array :func:`encode_ndarray` encoded."""
    import numpy as np

    raw = data["data"]
    if isinstance(raw, str):
        raw = base64.b64decode(raw)
    return np.frombuffer(raw, dtype=np.dtype(data["dtype"])).reshape(data["shape"]).copy()


# --- the branching message graph ---------------------------------------------------------
#
# A trace stores each distinct message once. A node is identified by its parent, its message
# (``message_hash``) and, at a root, the tools the prompt was rendered with; a prompt whose
# messages walk existing nodes reuses them, and the first message that does not starts a new
# child, so rewritten histories (compaction, sub-agents, retries) become branches. Each node
# holds the tokens it adds to its branch: an input message its leading template plus its own
# tokens, a sampled reply the generation prompt plus the completion. Joined root to leaf they
# are exactly the prompt plus completion the model saw on that branch.

NodeKey = tuple[int | None, str | None, str]


def _canonical_arguments(arguments: str) -> str:
    """Tool-call arguments with JSON key order and spacing normalized (raw text if not JSON)."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return arguments


_REPLAYED_STATE_KEYS = ("data", "encrypted_content", "phase", "signature")
"""Provider-state fields a prompt must replay, so they tell two assistant messages apart."""


def _provider_state_identity(message: AssistantMessage) -> list[Any]:
    """The parts of ``provider_state`` the typed message does not already carry: opaque
    replay fields of items it represents, and every item it does not represent."""
    call_ids = {call.id for call in message.tool_calls or []}
    out: list[Any] = []
    for item in message.provider_state or []:
        kind = item.get("type") or ("message" if item.get("role") == "assistant" else "")
        kept: dict[str, Any] = {k: item[k] for k in _REPLAYED_STATE_KEYS if item.get(k) is not None}
        content = item.get("content")
        if kind == "message" and isinstance(content, list):
            extra = [
                part
                for part in content
                if not (
                    isinstance(part, dict) and part.get("type") in ("input_text", "output_text")
                )
            ]
            if extra:
                kept["content"] = extra
        represented = kind in ("message", "reasoning") or (
            kind in ("function_call", "custom_tool_call") and item.get("call_id") in call_ids
        )
        if represented and not kept:
            continue
        out.append([kind, kept if represented else item])
    return out


def message_hash(message: Message) -> str:
    """A stable digest of what makes ``message`` the same conversational message when a
    prompt restates it: its role, content (None and "" alike), an assistant's reasoning,
    tool calls (arguments JSON-normalized) and replayed provider state, a tool result's call
    id. The same in every process, so a stored trace hashes as it did live."""
    identity: list[Any] = [message.role]
    content = message.content
    if isinstance(content, list):
        identity.append(
            [
                [part.type, part.text if isinstance(part, TextContentPart) else part.image_url.url]
                for part in content
            ]
        )
    else:
        identity.append(content or "")
    if isinstance(message, AssistantMessage):
        identity.append(message.reasoning_content)
        identity.append(_provider_state_identity(message))
        identity.append(
            [
                [
                    call.type,
                    call.id,
                    call.name,
                    call.namespace or "",
                    call.arguments
                    if call.type == "custom"
                    else _canonical_arguments(call.arguments),
                ]
                for call in message.tool_calls or []
            ]
        )
    elif isinstance(message, ToolMessage):
        identity.append(message.tool_call_id)
    encoded = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(encoded.encode(), digest_size=16).hexdigest()


def tools_hash(tools: list[Tool] | None) -> str:
    """A stable digest of a tool list (order matters: it is rendered in order)."""
    payload = [tool.model_dump(mode="json", exclude_none=True) for tool in tools or []]
    encoded = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(encoded.encode(), digest_size=16).hexdigest()


def node_key(parent: int | None, message: Message, tools: list[Tool] | None = None) -> NodeKey:
    """A node's identity: parent, message and (at a root only) the prompt's tools."""
    return (parent, tools_hash(tools) if parent is None else None, message_hash(message))


def _index(trace: Trace[Any, Any, Any]) -> dict[NodeKey, list[int]]:
    """Node key -> the nodes with that key, oldest first (the last is the one a new prompt
    follows), brought up to date with ``trace.nodes``. Nodes are only ever appended; a
    replaced node list, or one whose indexed nodes were swapped out, is indexed afresh."""
    private = private_attrs(trace)
    index: dict[NodeKey, list[int]] = private["_node_index"]
    nodes = trace.nodes
    indexed_list, last = private["_node_index_at"]  # the list indexed, its last node indexed
    seen = last + 1
    if (
        indexed_list is not nodes
        or seen > len(nodes)
        or (seen > 0 and private["_node_index_last"] is not nodes[last])
    ):
        index.clear()
        seen = 0
    if seen == len(nodes):
        return index
    for at in range(seen, len(nodes)):
        node = nodes[at]
        index.setdefault(node_key(node.parent, node.message, node.tools), []).append(at)
    private["_node_index_at"] = (nodes, len(nodes) - 1)
    private["_node_index_last"] = nodes[-1] if nodes else None
    return index


def leaves(trace: Trace[Any, Any, Any]) -> list[int]:
    """The nodes no node follows: the last node of each branch, in node order."""
    parents = {node.parent for node in trace.nodes if node.parent is not None}
    return [at for at in range(len(trace.nodes)) if at not in parents]


def path(trace: Trace[Any, Any, Any], node: int) -> list[Message]:
    """The messages from the root to ``node``."""
    out: list[Message] = []
    at: int | None = node
    while at is not None:
        out.append(trace.nodes[at].message)
        at = trace.nodes[at].parent
    return out[::-1]


def message_prefix_len(trace: Trace[Any, Any, Any], prompt: list[Message]) -> int:
    """How many leading messages of ``prompt`` some path of the graph holds, by message alone
    (whatever tools or tokens)."""
    children: dict[int | None, list[int]] = {}
    for at, node in enumerate(trace.nodes):
        children.setdefault(node.parent, []).append(at)
    frontier: list[int | None] = [None]
    matched = 0
    for message in prompt:
        wanted = message_hash(message)
        frontier = [
            child
            for parent in frontier
            for child in children.get(parent, [])
            if message_hash(trace.nodes[child].message) == wanted
        ]
        if not frontier:
            break
        matched += 1
    return matched


def _find_node(
    trace: Trace[Any, Any, Any],
    key: NodeKey,
    accepts: Callable[[MessageNode], bool],
) -> list[int]:
    """The nodes with ``key`` that ``accepts`` takes, newest first."""
    variants = _index(trace).get(key, [])
    return [at for at in reversed(variants) if accepts(trace.nodes[at])]


def _merge_tools(trace: Trace[Any, Any, Any], tools: list[Tool]) -> None:
    merged: dict[tuple[str | None, str, str], Tool] = {}
    for tool in [*trace.tools, *tools]:
        merged[(tool.namespace, tool.name, tool.type)] = tool
    trace.tools = list(merged.values())


@dataclass(frozen=True)
class PendingTurn:
    """A prompt resolved against the graph, waiting on the model. ``prefix_node_ids`` are the
    nodes its leading messages reuse (``path_len`` their tokens); :meth:`commit` adds the rest
    of the prompt and the reply, reusing what concurrent turns committed meanwhile."""

    trace: Trace[Any, Any, Any]
    prompt: list[Message]
    tools: list[Tool]
    prefix_node_ids: list[int]
    path_len: int

    @property
    def tail_start(self) -> int:
        return len(self.prefix_node_ids)

    @property
    def tail(self) -> list[Message]:
        """The prompt's messages no node holds yet."""
        return self.prompt[self.tail_start :]

    @property
    def renderer_path_len(self) -> int:
        """The prefix's length in renderer tokens."""
        return sum(len(self.trace.nodes[at].logical_ids) for at in self.prefix_node_ids)

    def previous_renderer_token_ids(self) -> tuple[list[int], list[int]] | None:
        """The renderer prompt and completion of the sampled turn the prefix ends with (what a
        renderer extends instead of re-rendering); None when the prefix does not end with a
        sampled reply that has tokens."""
        if not self.prefix_node_ids:
            return None
        last = self.trace.nodes[self.prefix_node_ids[-1]]
        sampled = sum(last.mask)
        if not last.sampled or not sampled:
            return None
        prompt = [t for at in self.prefix_node_ids[:-1] for t in self.trace.nodes[at].logical_ids]
        prompt.extend(last.logical_ids[:-sampled])
        completion = last.logical_ids[-sampled:]
        if not prompt or not completion:
            return None
        return prompt, completion

    def commit(self, response: Response) -> int:
        """Add the prompt's new messages and the reply to the graph; the reply's node id."""
        reply = _commit(self, response)
        if self.tools:
            _merge_tools(self.trace, self.tools)
        self.trace.clear_preview(self)
        return reply

    def commit_prompt(self) -> None:
        """Record the prompt of a turn that ended before the model was called."""
        parent = self.prefix_node_ids[-1] if self.prefix_node_ids else None
        nodes = self.trace.nodes
        for message in self.tail:
            # Nodes follow their parents, so the newest node (or an empty graph's root) has no
            # child yet to reuse: only another parent needs the graph's index.
            if nodes and parent != len(nodes) - 1:
                found = _find_node(
                    self.trace, node_key(parent, message, self.tools), lambda n: True
                )
                if found:
                    parent = found[0]
                    continue
            nodes.append(
                MessageNode(
                    parent=parent, message=message, tools=self.tools if parent is None else []
                )
            )
            parent = len(self.trace.nodes) - 1
        if self.tools:
            _merge_tools(self.trace, self.tools)
        self.trace.clear_preview(self)

    def abandon(self) -> None:
        """The request failed or was cancelled: its preview goes, the graph is unchanged."""
        self.trace.clear_preview(self)


def prepare_turn(
    trace: Trace[Any, Any, Any], prompt: list[Message], tools: list[Tool] | None = None
) -> PendingTurn:
    """Resolve how much of ``prompt`` (rendered with ``tools``) the graph already holds; the
    trace is not changed until the returned turn commits."""
    tools = list(tools or [])
    parent: int | None = None
    prefix: list[int] = []
    length = 0
    index = _index(trace) if trace.nodes else {}  # an empty graph holds none of the prompt
    for message in prompt if index else ():
        variants = index.get(node_key(parent, message, tools))
        if not variants:
            break
        found = variants[-1]
        prefix.append(found)
        length += len(trace.nodes[found].token_ids)
        parent = found
    return PendingTurn(
        trace=trace, prompt=prompt, tools=tools, prefix_node_ids=prefix, path_len=length
    )


def continue_branch(trace: Trace[Any, Any, Any], messages: list[Message]) -> PendingTurn:
    """A turn that continues the trace's last branch (the path to its newest node) with
    ``messages``: the branch's own nodes are the prefix, whatever other nodes share their
    keys, so committing it extends exactly that conversation."""
    branch: list[int] = []
    at: int | None = len(trace.nodes) - 1 if trace.nodes else None
    while at is not None:
        branch.append(at)
        at = trace.nodes[at].parent
    branch.reverse()
    return PendingTurn(
        trace=trace,
        prompt=[*(trace.nodes[n].message for n in branch), *messages],
        tools=list(trace.nodes[branch[0]].tools) if branch else [],
        prefix_node_ids=branch,
        path_len=sum(len(trace.nodes[n].token_ids) for n in branch),
    )


def _commit(turn: PendingTurn, response: Response) -> int:
    trace = turn.trace
    tokens = response.tokens
    if tokens is not None and tokens.mm_token_type_id_map:
        trace.mm_token_type_id_map = dict(tokens.mm_token_type_id_map)
    prompt_ids, renderer_ids = prompt_token_ids(tokens)
    prefix, length, renderer_length = _confirmed_prefix(turn, tokens, prompt_ids, renderer_ids)
    view = attribute_prompt(tokens, prompt_ids, renderer_ids, trace.mm_token_type_id_map or {})
    length, renderer_length = _follow_committed(
        turn, view, prefix, length, renderer_length, has_tokens=tokens is not None
    )
    created, at, renderer_at = _add_prompt_nodes(turn, view, prefix, length, renderer_length)
    parent = created[-1] if created else (prefix[-1] if prefix else None)
    completion = tokens.completion_ids if tokens is not None else []
    generation_prompt = view.prompt_ids[at:]
    trace.nodes.append(
        MessageNode(
            parent=parent,
            message=response.message,
            sampled=True,
            tools=turn.tools if parent is None else [],
            token_ids=[*generation_prompt, *completion],
            renderer_token_ids=[*view.renderer_ids[renderer_at:], *completion],
            mask=[False] * len(generation_prompt) + [True] * len(completion),
            is_content=[False] * len(generation_prompt) + [True] * len(completion)
            if view.has_content
            else [],
            logprobs=list(tokens.completion_logprobs) if tokens is not None else [],
        )
    )
    reply = len(trace.nodes) - 1
    created.append(reply)
    attribute_routing(
        trace, prefix, created, length, tokens.routed_experts if tokens is not None else None
    )
    return reply


def _confirmed_prefix(
    turn: PendingTurn,
    tokens: TurnTokens | None,
    prompt_ids: list[int],
    renderer_ids: list[int],
) -> tuple[list[int], int, int]:
    """The part of the prefix resolved before inference that still holds: the leading nodes
    whose tokens are this prompt's tokens; with its length in server and renderer tokens."""
    prefix = list(turn.prefix_node_ids)
    if tokens is None or not prefix:
        return prefix, turn.path_len, turn.renderer_path_len
    kept = length = renderer_length = 0
    for at in prefix:
        node = turn.trace.nodes[at]
        logical = node.logical_ids
        if (
            prompt_ids[length : length + len(node.token_ids)] != node.token_ids
            or renderer_ids[renderer_length : renderer_length + len(logical)] != logical
        ):
            break
        length += len(node.token_ids)
        renderer_length += len(logical)
        kept += 1
    if tokens.bridged and kept != len(prefix):
        raise ValueError(
            "the prompt was bridged from the stored rollout but its tokens do not exactly "
            f"extend the stored prefix (they differ at node {prefix[kept]}); render the "
            "prompt in full instead of bridging"
        )
    return prefix[:kept], length, renderer_length


def _follow_committed(
    turn: PendingTurn,
    view: PromptTokens,
    prefix: list[int],
    length: int,
    renderer_length: int,
    *,
    has_tokens: bool,
) -> tuple[int, int]:
    """Extend ``prefix`` (in place) over the nodes concurrent turns committed for this prompt
    since it was prepared, one message at a time, where their tokens are this prompt's tokens
    (a token difference is a real fork and stays one); the new length in server and renderer
    tokens. Commit does not yield, so past this the rest of the prompt is new."""
    trace, prompt = turn.trace, turn.prompt
    while len(prefix) < len(prompt):
        i = len(prefix)
        key = node_key(prefix[-1] if prefix else None, prompt[i], turn.tools)
        span, renderer_span = view.span(i), view.renderer_span(i)
        end = span[1] if span else length
        renderer_end = renderer_span[1] if renderer_span else renderer_length
        if not has_tokens:
            found = _find_node(trace, key, lambda node: True)[:1]
        elif span is None:
            # Unattributed (a prompt-supplied reply): the stored node's own tokens delimit it,
            # as long as they end before the next attributed message starts.
            fits = partial(
                fits_between,
                prompt_ids=view.prompt_ids,
                start=length,
                stop=view.next_start(i, len(view.prompt_ids)),
                renderer_ids=view.renderer_ids,
                renderer_start=renderer_length,
                renderer_stop=view.next_renderer_start(i, len(view.renderer_ids)),
            )
            found = sorted(
                _find_node(trace, key, fits),
                key=lambda n: len(trace.nodes[n].token_ids),
                reverse=True,
            )[:1]
            if found:
                end = length + len(trace.nodes[found[0]].token_ids)
                renderer_end = renderer_length + len(trace.nodes[found[0]].logical_ids)
        else:
            same = partial(
                has_span,
                ids=view.prompt_ids[length:end],
                logical=view.renderer_ids[renderer_length:renderer_end],
            )
            found = _find_node(trace, key, same)[:1]
        if not found:
            break
        prefix.append(found[0])
        length, renderer_length = end, renderer_end
    return length, renderer_length


def _add_prompt_nodes(
    turn: PendingTurn, view: PromptTokens, prefix: list[int], at: int, renderer_at: int
) -> tuple[list[int], int, int]:
    """Append a node for each prompt message after ``prefix``, with its span of the prompt's
    tokens; the new nodes, and where in the server and renderer tokens they end."""
    trace = turn.trace
    parent = prefix[-1] if prefix else None
    created: list[int] = []
    for i in range(len(prefix), len(turn.prompt)):
        span, renderer_span = view.span(i), view.renderer_span(i)
        end = span[1] if span else at
        renderer_end = renderer_span[1] if renderer_span else renderer_at
        ids = view.prompt_ids[at:end]
        trace.nodes.append(
            MessageNode(
                parent=parent,
                message=turn.prompt[i],
                tools=turn.tools if parent is None else [],
                token_ids=ids,
                renderer_token_ids=view.renderer_ids[renderer_at:renderer_end],
                mask=[False] * len(ids),
                is_content=list(view.is_content[at:end])
                if view.is_content and view.has_content
                else [],
            )
        )
        parent = len(trace.nodes) - 1
        created.append(parent)
        at, renderer_at = end, renderer_end
    return created, at, renderer_at
