"""Where one turn's tokens go in the message graph: which tokens of the server's prompt each
message of the prompt spans, whether a stored node's tokens are the ones this prompt has at a
position, and which rows of the turn's mixture-of-experts routing each new node gets.

:func:`verifiers.v1.graph.PendingTurn.commit` uses these to turn a prompt and a reply into
nodes; nothing here changes the graph's shape.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import Trace
    from verifiers.v1.types import TurnTokens

__all__ = [
    "PromptTokens",
    "Span",
    "attribute_prompt",
    "attribute_routing",
    "fits_between",
    "has_span",
    "prompt_token_ids",
]

Span = tuple[int, int]


def prompt_token_ids(tokens: TurnTokens | None) -> tuple[list[int], list[int]]:
    """The prompt in the server's tokens and in the renderer's (the same list when the
    renderer's are not given); both empty when the turn has no tokens."""
    prompt_ids = tokens.prompt_ids if tokens is not None else []
    renderer_ids = (
        tokens.renderer_prompt_ids
        if tokens is not None and tokens.renderer_prompt_ids is not None
        else prompt_ids
    )
    return prompt_ids, renderer_ids


@dataclass(frozen=True)
class PromptTokens:
    """One turn's prompt tokens with each message's span in them: ``spans`` in the server's
    tokens (multimodal placeholders expanded), ``renderer_spans`` in the renderer's;
    ``is_content`` flags, per server token, message content as opposed to template."""

    prompt_ids: list[int]
    renderer_ids: list[int]
    spans: list[Span | None] | None
    renderer_spans: list[Span | None] | None
    is_content: list[bool] | None

    @property
    def has_content(self) -> bool:
        """Whether there is a content flag for every server token."""
        return self.is_content is not None and len(self.is_content) == len(self.prompt_ids)

    def span(self, i: int) -> Span | None:
        """Message ``i``'s span in the server's tokens, if known."""
        return _span_of(self.spans, i)

    def renderer_span(self, i: int) -> Span | None:
        """Message ``i``'s span in the renderer's tokens, if known."""
        return _span_of(self.renderer_spans, i)

    def next_start(self, i: int, default: int) -> int:
        """Where the first attributed message after ``i`` starts (server tokens)."""
        return _next_start(self.spans, i, default)

    def next_renderer_start(self, i: int, default: int) -> int:
        """Where the first attributed message after ``i`` starts (renderer tokens)."""
        return _next_start(self.renderer_spans, i, default)


def _span_of(spans: list[Span | None] | None, i: int) -> Span | None:
    return spans[i] if spans and i < len(spans) else None


def _next_start(spans: list[Span | None] | None, i: int, default: int) -> int:
    return next((s[0] for s in (spans or [])[i + 1 :] if s is not None), default)


def attribute_prompt(
    tokens: TurnTokens | None,
    prompt_ids: list[int],
    renderer_ids: list[int],
    placeholder_ids: dict[int, int],
) -> PromptTokens:
    """The turn's message spans and content flags, mapped onto the server's prompt tokens."""
    renderer_spans = tokens.message_spans if tokens is not None else None
    spans, is_content = _expand_attribution(
        renderer_ids,
        prompt_ids,
        placeholder_ids,
        tokens.mm_placeholders if tokens is not None else None,
        renderer_spans,
        tokens.is_content if tokens is not None else None,
    )
    return PromptTokens(prompt_ids, renderer_ids, spans, renderer_spans, is_content)


def _expand_attribution(
    renderer_ids: list[int],
    prompt_ids: list[int],
    placeholder_ids: dict[int, int],
    placeholders: list[Span] | None,
    spans: list[Span | None] | None,
    is_content: list[bool] | None,
) -> tuple[list[Span | None] | None, list[bool] | None]:
    """Map the renderer's per-message spans and content flags onto the server's prompt, where
    each multimodal placeholder token stands for ``length`` tokens at ``offset``."""
    if renderer_ids == prompt_ids:
        return spans, is_content
    if not placeholder_ids or placeholders is None:
        raise ValueError(
            "the renderer's prompt tokens differ from the server's and no multimodal "
            "placeholders say how; pass TurnTokens.mm_placeholders and mm_token_type_id_map, or "
            "leave renderer_prompt_ids unset when the prompts are the same"
        )
    mismatch = "the server's prompt tokens do not expand the renderer's prompt tokens"
    ends = [0]  # ends[i]: where renderer token i starts in the server prompt (ends[-1]: length)
    at = 0
    expanded = 0
    for token in renderer_ids:
        if token in placeholder_ids:
            if expanded >= len(placeholders):
                raise ValueError(f"{mismatch}: more placeholder tokens than placeholders")
            offset, length = placeholders[expanded]
            if offset != at or length < 1:
                raise ValueError(f"{mismatch}: placeholder {expanded} is at {offset}, not {at}")
            at += length
            expanded += 1
        else:
            if at >= len(prompt_ids) or prompt_ids[at] != token:
                raise ValueError(f"{mismatch} (at server position {at})")
            at += 1
        ends.append(at)
    if at != len(prompt_ids) or expanded != len(placeholders):
        raise ValueError(f"{mismatch}: lengths or placeholder counts differ")
    mapped_spans: list[Span | None] | None = None
    if spans is not None:
        mapped_spans = []
        for span in spans:
            if span is None:
                mapped_spans.append(None)
                continue
            start, end = span
            if not 0 <= start <= end <= len(renderer_ids):
                raise ValueError(f"message span {span} lies outside the renderer prompt")
            mapped_spans.append((ends[start], ends[end]))
    mapped_content = is_content
    if is_content:
        if len(is_content) != len(renderer_ids):
            raise ValueError(
                f"is_content has {len(is_content)} flags for {len(renderer_ids)} renderer tokens"
            )
        mapped_content = [
            flag for i, flag in enumerate(is_content) for _ in range(ends[i + 1] - ends[i])
        ]
    return mapped_spans, mapped_content


def _decode_routing(payload: Mapping[str, Any]) -> Any:
    import numpy as np

    raw = base64.b64decode(payload["data"])
    dtype = np.dtype(payload.get("dtype") or "uint8")
    return np.frombuffer(raw, dtype=dtype).reshape(payload["shape"])


def attribute_routing(
    trace: Trace[Any, Any, Any],
    prefix: list[int],
    created: list[int],
    path_len: int,
    payload: Mapping[str, Any] | None,
) -> None:
    """Give each node created this turn its rows of the turn's routing array (row ``i`` is
    sequence position ``start + i``). The server never forwards a turn's last sampled token,
    so that position gets a copy of the row before it; the next turn's prefill does forward
    it, and its row replaces the copy on the prefix's last node. A node whose rows the array
    does not cover is left without routing (its branch then reports none)."""
    if payload is None:
        return
    import numpy as np

    rows = _decode_routing(payload)
    at = path_len - int(payload.get("start") or 0)
    last = next((trace.nodes[n] for n in reversed(prefix) if trace.nodes[n].token_ids), None)
    if last is not None and last.sampled and 1 <= at <= rows.shape[0]:
        held = last.routed_experts
        if held is not None and held.shape[0] and held.shape[1:] == rows.shape[1:]:
            last.routed_experts = np.concatenate([held[:-1], rows[at - 1 : at]], axis=0)
    total = at + sum(len(trace.nodes[n].token_ids) for n in created)
    for n in created:
        node = trace.nodes[n]
        end = at + len(node.token_ids)
        if node.token_ids and at >= 0:
            if end <= rows.shape[0]:
                node.routed_experts = rows[at:end].copy()
            elif end == total == rows.shape[0] + 1 and rows.shape[0]:
                node.routed_experts = np.concatenate([rows[at:], rows[-1:]], axis=0)
        at = end


def has_span(node: MessageNode, *, ids: list[int], logical: list[int]) -> bool:
    return node.token_ids == ids and node.logical_ids == logical


def fits_between(
    node: MessageNode,
    *,
    prompt_ids: list[int],
    start: int,
    stop: int,
    renderer_ids: list[int],
    renderer_start: int,
    renderer_stop: int,
) -> bool:
    """Whether the node's own tokens continue the prompt at ``start`` and end by ``stop`` (in
    both the server's and the renderer's tokens)."""
    ids, logical = node.token_ids, node.logical_ids
    return (
        start + len(ids) <= stop
        and prompt_ids[start : start + len(ids)] == ids
        and renderer_start + len(logical) <= renderer_stop
        and renderer_ids[renderer_start : renderer_start + len(logical)] == logical
    )
