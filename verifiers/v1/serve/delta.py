"""A served episode's traces, streamed as deltas while the episode runs.

The server watches each trace the episode starts (``Trace.watch``); every change it is told of
(``Trace.notify``, once per recorded turn) schedules one flush, and changes landing in the same
loop iteration share it. A flush diffs each live trace against what already left and sends
only the new part:

- ``open``: the header fields (``version``, ``id``, ``task``), once, when the trace first
  appears;
- a list field (``nodes``, ``calls``, ``errors``): the items past the count already sent
  (these lists only grow);
- ``set``: every other serialised field whose dumped value changed since it was last sent;
- ``discard``: the trace is gone from the episode (a retried attempt), the client drops it.

The run's reply carries the episode without its traces plus each trace's node and call counts,
which the client checks its assembly against (:meth:`EpisodeAssembly.finish`). A delta the
socket refused is not lost: the sent counts move only after a send succeeded, so the next
flush carries it again.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any, Self

from pydantic import BaseModel

from verifiers.v1.graph import decode_ndarray, encode_ndarray
from verifiers.v1.serve.encoding import pack, unpack
from verifiers.v1.trace import Trace

__all__ = [
    "HEADER_FIELDS",
    "LIST_FIELDS",
    "SCALAR_FIELDS",
    "DeltaStreamer",
    "EpisodeAssembly",
    "TraceCursor",
    "TraceSummary",
    "dump",
    "pack",
    "unpack",
]

logger = logging.getLogger(__name__)


def _serialized_fields() -> list[str]:
    fields = [name for name, info in Trace.model_fields.items() if not info.exclude]
    return fields + list(Trace.model_computed_fields)


_HEADER = ("version", "id", "verifiers", "task")
_LISTS = ("nodes", "calls", "errors", "extra_usage", "request_rewrites", "response_rewrites")

HEADER_FIELDS: tuple[str, ...] = tuple(f for f in _serialized_fields() if f in _HEADER)
"""Sent once, when the trace first appears."""
LIST_FIELDS: tuple[str, ...] = tuple(f for f in _serialized_fields() if f in _LISTS)
"""Append-only: each delta carries the items past the count sent."""
SCALAR_FIELDS: tuple[str, ...] = tuple(
    f for f in _serialized_fields() if f not in _HEADER and f not in _LISTS
)
"""Sent whole whenever their dumped value changes."""
MUTABLE_ITEMS: tuple[str, ...] = tuple(f for f in LIST_FIELDS if f == "calls")
"""List fields whose items may still change after they were sent (a model call is recorded
when it starts and completed when the reply lands): a changed item is sent again under
``updates`` with its index."""


def dump(model: BaseModel, **kwargs: Any) -> dict[str, Any]:
    """``model`` as plain data, each value dumped as its runtime class (a task's own data
    fields, an agent config subclass's settings survive the wire)."""
    data: dict[str, Any] = model.model_dump(mode="json", serialize_as_any=True, **kwargs)
    return data


class TraceSummary(BaseModel):
    """A finished trace's id and size, for the client's assembly check."""

    id: str
    nodes: int
    calls: int


class TraceCursor:
    """What of one trace has left."""

    def __init__(self) -> None:
        self.sent = dict.fromkeys(LIST_FIELDS, 0)
        self.scalars: dict[str, bytes] = {}
        self.links: list[int] = []
        """Per sent node, how many of its semantic links left."""
        self.final_rows: dict[int, bytes] = {}
        """Per node with routing, its last routing row as last sent."""
        self.pending: bytes = pack([])
        self.items: dict[str, list[bytes]] = {field: [] for field in MUTABLE_ITEMS}
        """Per mutable list field, each sent item as packed when last sent."""


class DeltaStreamer:
    """Sends the changes of ``traces()`` through ``send``, one flush per burst of changes.

    Use it as an async context manager around the run: a clean exit flushes what is left; an
    exception cancels pending flushes and sends nothing more."""

    def __init__(
        self,
        traces: Callable[[], Iterable[Trace[Any, Any, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        self.traces = traces
        self.send = send
        self.cursors: dict[str, TraceCursor] = {}
        self._scheduled: asyncio.Handle | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        if exc_type is None:
            await asyncio.gather(*self._flushes, return_exceptions=True)
            await self.flush()
            return
        for task in self._flushes:
            task.cancel()
        await asyncio.gather(*self._flushes, return_exceptions=True)

    def watch(self, trace: Trace[Any, Any, Any]) -> None:
        """Stream ``trace`` from now on (pass this as the agents' ``on_trace``)."""
        trace.watch(self._changed)
        self._changed(trace)

    def _changed(self, _trace: Trace[Any, Any, Any]) -> None:
        if self._scheduled is None:
            self._scheduled = asyncio.get_running_loop().call_soon(self._start_flush)

    def _start_flush(self) -> None:
        self._scheduled = None
        task = asyncio.create_task(self.flush())
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def flush(self) -> None:
        """Send every trace's changes; serialised so deltas leave in the order they were
        diffed."""
        async with self._lock:
            for trace_id, delta, cursor in self.diff():
                try:
                    await self.send(delta)
                except asyncio.CancelledError:
                    raise
                except Exception:  # the cursor stays: the next flush diffs it again
                    logger.warning("could not send a delta of trace %s", trace_id, exc_info=True)
                    continue
                if cursor is None:
                    self.cursors.pop(trace_id, None)
                else:
                    self.cursors[trace_id] = cursor

    def diff(self) -> list[tuple[str, dict[str, Any], TraceCursor | None]]:
        """Each trace's delta against what left, with the cursor as it stands once the delta
        is sent (None: a discard). Nothing is committed here."""
        traces = list(self.traces())
        live = {trace.id for trace in traces}
        out: list[tuple[str, dict[str, Any], TraceCursor | None]] = [
            (gone, {"trace": gone, "discard": True}, None)
            for gone in self.cursors
            if gone not in live
        ]
        for trace in traces:
            sent = self.cursors.get(trace.id)
            cursor = copy.deepcopy(sent) if sent is not None else TraceCursor()
            delta: dict[str, Any] = {"trace": trace.id}
            if sent is None:
                delta["open"] = dump(trace, include=set(HEADER_FIELDS))
            sent_nodes = cursor.sent.get("nodes", 0)
            links: dict[int, list[dict[str, Any]]] = {}
            for index in range(sent_nodes):
                node_links = trace.nodes[index].semantic_parents
                if len(node_links) > cursor.links[index]:
                    links[index] = [dump(link) for link in node_links[cursor.links[index] :]]
                    cursor.links[index] = len(node_links)
            if links:
                delta["links"] = links
            repairs = _routing_repairs(trace, cursor, sent_nodes)
            if repairs:
                delta["routing_repairs"] = repairs
            updates: dict[str, dict[int, Any]] = {}
            for field in MUTABLE_ITEMS:
                packed_items = cursor.items[field]
                for index, item in enumerate(getattr(trace, field)[: len(packed_items)]):
                    dumped = _item(item)
                    packed = pack(dumped)
                    if packed != packed_items[index]:
                        packed_items[index] = packed
                        updates.setdefault(field, {})[index] = dumped
            if updates:
                delta["updates"] = updates
            for field in LIST_FIELDS:
                items = getattr(trace, field)
                count = cursor.sent[field]
                if len(items) > count:
                    delta[field] = [_item(item) for item in items[count:]]
                    cursor.sent[field] = len(items)
                    if field == "nodes":
                        cursor.links.extend(len(n.semantic_parents) for n in items[count:])
                    if field in cursor.items:
                        cursor.items[field].extend(pack(item) for item in delta[field])
            changed: dict[str, Any] = {}
            for field, value in dump(trace, include=set(SCALAR_FIELDS)).items():
                packed = pack(value)
                if cursor.scalars.get(field) != packed:
                    cursor.scalars[field] = packed
                    changed[field] = value
            if changed:
                delta["set"] = changed
            pending = [_item(message) for message in getattr(trace, "pending", [])]
            packed_pending = pack(pending)
            if packed_pending != cursor.pending:
                cursor.pending = packed_pending
                if pending or "nodes" not in delta:  # landing nodes clear the preview anyway
                    delta["pending"] = pending
            if len(delta) > 1:
                out.append((trace.id, delta, cursor))
        return out


def _item(item: Any) -> Any:
    return dump(item) if isinstance(item, BaseModel) else item


def _routing_repairs(
    trace: Trace[Any, Any, Any], cursor: TraceCursor, sent_nodes: int
) -> dict[int, dict[str, Any]]:
    """The last routing rows changed since their node left (the next prefill corrects the
    previous turn's last row), keyed by node index; records every node's current last row."""
    repairs: dict[int, dict[str, Any]] = {}
    for index, node in enumerate(trace.nodes):
        routing = node.routed_experts
        if routing is None:
            continue
        row = encode_ndarray(routing[-1:], binary=False)
        packed = pack(row)
        if cursor.final_rows.get(index) != packed:
            cursor.final_rows[index] = packed
            if index < sent_nodes:
                repairs[index] = row
    return repairs


class EpisodeAssembly:
    """The client's picture of one served episode: each trace as a plain dict, shaped like a
    dumped :class:`Trace`, in the order the traces appeared."""

    def __init__(self) -> None:
        self.traces: dict[str, dict[str, Any]] = {}

    def apply(self, delta: dict[str, Any]) -> None:
        trace_id = delta["trace"]
        if delta.get("discard"):
            self.traces.pop(trace_id, None)
            return
        trace = self.traces.get(trace_id)
        if trace is None:
            if "open" not in delta:
                raise ValueError(
                    f"a delta of trace {trace_id} arrived before the trace was opened; the "
                    "stream lost a frame (is the server speaking the same protocol?)"
                )
            trace = self.traces[trace_id] = {
                **delta["open"],
                **{field: [] for field in LIST_FIELDS},
                "pending": [],
            }
        for index, links in (delta.get("links") or {}).items():
            node = trace["nodes"][int(index)]
            node["semantic_parents"] = [*(node.get("semantic_parents") or []), *links]
        for index, row in (delta.get("routing_repairs") or {}).items():
            import numpy as np  # routing only comes with numpy arrays on the server

            node = trace["nodes"][int(index)]
            earlier = decode_ndarray(node["routed_experts"])
            node["routed_experts"] = encode_ndarray(
                np.concatenate([earlier[:-1], decode_ndarray(row)]), binary=False
            )
        for field in LIST_FIELDS:
            if field in delta:
                items = delta[field]
                if field == "nodes":  # later links and repairs replace a node's keys: copy it
                    items = [dict(node) for node in items]
                trace.setdefault(field, []).extend(items)
        for field, changed in (delta.get("updates") or {}).items():
            for index, item in changed.items():
                trace[field][int(index)] = item
        trace.update(delta.get("set") or {})
        if "nodes" in delta:
            trace["pending"] = []
        if "pending" in delta:
            trace["pending"] = delta["pending"]

    def finish(self, head: dict[str, Any], summaries: list[TraceSummary]) -> dict[str, Any]:
        """The whole episode record: ``head`` (the episode without traces) with the assembled
        traces in the server's order; a size that differs from the server's means a lost
        delta, an error."""
        traces = []
        for summary in summaries:
            trace = self.traces.get(summary.id)
            if trace is None:
                raise RuntimeError(f"the served episode is missing trace {summary.id}")
            trace = {k: v for k, v in trace.items() if k != "pending"}
            nodes, calls = len(trace.get("nodes", [])), len(trace.get("calls", []))
            if (nodes, calls) != (summary.nodes, summary.calls):
                raise RuntimeError(
                    f"served trace {summary.id} assembled {nodes} nodes / {calls} calls, the "
                    f"server reports {summary.nodes} / {summary.calls}"
                )
            traces.append(trace)
        return {**head, "traces": traces}
