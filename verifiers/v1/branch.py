"""A trace's branches: each a root-to-leaf path of message nodes whose token spans, joined, are
one training sequence.

A node's span is ``token_ids`` (the tokens it adds to its branch), ``mask`` (which of them the
model sampled) and ``logprobs`` (those of the sampled ones). A recorder may write spans
directly; one that records, per sampled node, the prompt it was sampled on and the completion
(``prompt_token_ids`` / ``completion_token_ids``) gets its spans derived by
:func:`fill_spans`: the prompt tokens past the path's sequence so far go to the node before
(the message that added them; or the sampled node itself, masked out, when that one was
sampled too), the completion to the sampled node. A prompt that does not extend the path's
sequence (the conversation was rendered differently) ends the derivation on that path: a
branch never holds tokens the model did not see in that order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verifiers.v1.graph import MessageNode
from verifiers.v1.types import Message, Tool

if TYPE_CHECKING:
    from verifiers.v1.trace import Trace

__all__ = ["Branch", "MultiModalData", "fill_spans", "trace_branches"]


@dataclass
class Branch:
    """A root-to-leaf path of the trace (the nodes themselves, so annotations written on a
    branch's nodes land on the trace) read as one token sequence."""

    index: int
    nodes: list[MessageNode]
    trainable: bool = True
    mm_token_type_id_map: dict[int, int] = field(default_factory=dict)
    """The trace's placeholder token id -> modality marker map."""

    @property
    def messages(self) -> list[Message]:
        return [n.message for n in self.nodes]

    @property
    def tools(self) -> list[Tool]:
        """The tools the branch's prompts were rendered with (held by its root)."""
        return self.nodes[0].tools if self.nodes else []

    @property
    def token_ids(self) -> list[int]:
        out: list[int] = []
        for node in self.nodes:
            out.extend(node.token_ids)
        return out

    @property
    def sampled_mask(self) -> list[bool]:
        out: list[bool] = []
        for node in self.nodes:
            out.extend(node.mask)
        return out

    def spread(self, values: Callable[[MessageNode], list[float] | None]) -> list[float]:
        """A per-sampled-token node field widened to ``token_ids`` (0.0 elsewhere)."""
        out: list[float] = []
        for node in self.nodes:
            given = iter(values(node) or [])
            out.extend(next(given, 0.0) if sampled else 0.0 for sampled in node.mask)
        return out

    @property
    def logprobs(self) -> list[float]:
        return self.spread(lambda node: node.logprobs)

    @property
    def advantages(self) -> list[float] | None:
        if all(node.advantages is None for node in self.nodes):
            return None
        return self.spread(lambda node: node.advantages)

    @property
    def reference_logprobs(self) -> list[float] | None:
        if all(node.reference_logprobs is None for node in self.nodes):
            return None
        return self.spread(lambda node: node.reference_logprobs)

    @property
    def routed_experts(self) -> Any | None:
        """The nodes' routing joined along the tokens; None unless every span has it."""
        spans = [n for n in self.nodes if n.token_ids]
        if not spans or any(n.routed_experts is None for n in spans):
            return None
        import numpy as np

        return np.concatenate([n.routed_experts for n in spans], axis=0)

    @property
    def mm_token_type_ids(self) -> list[int] | None:
        """Per token, its modality (0 text, 1 image placeholder, 2 video placeholder); None
        when the branch has no multimodal token."""
        if not self.mm_token_type_id_map:
            return None
        types = [self.mm_token_type_id_map.get(t, 0) for t in self.token_ids]
        return types if any(types) else None

    @property
    def multi_modal_data(self) -> MultiModalData | None:
        """The images the branch's nodes introduced, joined in node order per modality; None
        when no node carries any."""
        joined = MultiModalData()
        for node in self.nodes:
            data = node.multi_modal_data or {}
            for key in ("mm_items", "mm_hashes", "mm_placeholders"):
                for modality, items in (data.get(key) or {}).items():
                    getattr(joined, key).setdefault(modality, []).extend(items)
        return joined if joined.mm_items or joined.mm_hashes else None


@dataclass
class MultiModalData:
    """A branch's images as the trainer reads them: per modality, the renderer's items
    (``mm_items``), their hashes and their placeholder ranges."""

    mm_items: dict[str, list[Any]] = field(default_factory=dict)
    mm_hashes: dict[str, list[Any]] = field(default_factory=dict)
    mm_placeholders: dict[str, list[Any]] = field(default_factory=dict)


def _path(nodes: list[MessageNode], at: int | None) -> list[int]:
    path: list[int] = []
    while at is not None:
        path.append(at)
        at = nodes[at].parent
    return path[::-1]


def fill_spans(trace: Trace[Any, Any, Any]) -> None:
    """Derive the spans of nodes recorded with prompt / completion token ids (see the module
    docstring); nodes that have spans are left alone."""
    nodes = trace.nodes
    broken: set[int] = set()  # nodes on a path whose derivation stopped
    for index, node in enumerate(nodes):
        parent = node.parent
        if parent is not None and parent in broken:
            broken.add(index)
            continue
        prompt, completion = node.prompt_token_ids, node.completion_token_ids
        if node.token_ids or not node.sampled or prompt is None or completion is None:
            continue
        sequence = [t for at in _path(nodes, parent) for t in nodes[at].token_ids]
        if prompt[: len(sequence)] != sequence:
            broken.add(index)
            continue
        context = prompt[len(sequence) :]
        before = nodes[parent] if parent is not None else None
        if context and before is not None and not before.sampled and not before.token_ids:
            before.token_ids, before.mask = list(context), [False] * len(context)
            context = []
        node.token_ids = [*context, *completion]
        node.mask = [False] * len(context) + [True] * len(completion)
        node.logprobs = list(node.completion_logprobs or [0.0] * len(completion))


def trace_branches(trace: Trace[Any, Any, Any]) -> list[Branch]:
    """The trace's branches in leaf order (a node shared by two leaves is in both)."""
    fill_spans(trace)
    parents = {n.parent for n in trace.nodes if n.parent is not None}
    leaves = [i for i in range(len(trace.nodes)) if i not in parents]
    # A compaction attempt (a leaf linked by ``compaction_attempt``) trains only when the
    # harness went on from it (some node links to it by ``compaction``).
    resumed = {
        link.node for n in trace.nodes for link in n.semantic_parents if link.type == "compaction"
    }
    return [
        Branch(
            index=k,
            nodes=[trace.nodes[i] for i in _path(trace.nodes, leaf)],
            trainable=leaf in resumed
            or all(
                link.type != "compaction_attempt" for link in trace.nodes[leaf].semantic_parents
            ),
            mm_token_type_id_map=trace.mm_token_type_id_map,
        )
        for k, leaf in enumerate(leaves)
    ]
