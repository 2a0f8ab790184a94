"""Which reply shape each client of a v1 env server reads.

Two clients speak to the same requests (``[request_id, method, payload]`` from a DEALER):

- ``stream`` (verifiers 0.4.0 and this package's :class:`EnvClient`): every server message is
  ``[request_id, kind, data]``; a run's traces come first as ``delta`` messages, then one
  ``reply`` whose ``RunResponse`` holds the episode head and per-trace sizes.
- ``two-frame`` (verifiers at a60a606, the revision prime-rl 559b447 pins): every server
  message is ``[request_id, data]``; a run's reply holds the whole episode under ``episode``.

The requests look alike, so the server tells them apart by what they carry
(:func:`declared`): this package's client names its protocol in the payload
(``"protocol": "stream"``, ignored by servers that do not know it); a run's ``client`` map
dumped by a 0.4.0-era client config carries ``timeout``, one dumped at a60a606 does not. A
connection keeps the protocol its last telling request showed (:class:`PeerProtocols`).

A health check from a connection that has shown nothing yet is the one undecidable case. A
two-frame message is dropped, logged, by a stream client, which asks again; a three-frame
message ends a two-frame client's receive loop for good. So such answers are two frames,
until a connection asks again after a prompt, successful two-frame answer (which a
two-frame client waiting for the server would have taken): it is then taken to speak
``stream``. A two-frame client that polls health again before its first run, after a
healthy answer, would be misread; ``protocol=`` on the server pins one protocol instead.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Literal, get_args

from verifiers.v1.serve.delta import EpisodeAssembly, TraceSummary
from verifiers.v1.serve.encoding import pack, unpack

__all__ = [
    "PROTOCOL_KEY",
    "PeerProtocols",
    "Protocol",
    "ServeProtocol",
    "declared",
    "recv_bounded",
    "reply_frames",
    "whole_reply",
]

Protocol = Literal["stream", "two-frame"]
ServeProtocol = Literal["auto", "stream", "two-frame"]
PROTOCOLS: tuple[str, ...] = get_args(Protocol)
PROTOCOL_KEY = "protocol"
"""The payload key naming the client's protocol (sent by this package's :class:`EnvClient`)."""

MAX_FRAMES = 5
"""The most frames a request has at a ROUTER: routing id, HMAC signature, request id,
method, payload. A message with more is drained unread."""

PROMPT_S = 0.5
"""A two-frame health answer sent this soon after the request reached a client that waits
about a second (both upstream clients' default); asked again, the client did not take it."""


def declared(method: bytes, raw: Any) -> Protocol | None:
    """The protocol a decoded request shows, or None when it shows none."""
    if not isinstance(raw, dict):
        return None
    named = raw.get(PROTOCOL_KEY)
    if isinstance(named, str) and named in PROTOCOLS:
        return named  # type: ignore[return-value]
    client = raw.get("client")
    if method == b"run" and isinstance(client, dict):
        return "stream" if "timeout" in client else "two-frame"
    return None


async def recv_bounded(socket: Any, max_frames: int = MAX_FRAMES) -> list[Any]:
    """One message from ``socket`` as ``zmq.Frame`` objects, or ``[]`` when it has more than
    ``max_frames`` frames (the rest are received and let go, never kept or decoded)."""
    frame = await socket.recv(copy=False)
    frames = [frame]
    over = False
    while frame.more:
        frame = await socket.recv(copy=False)
        if len(frames) < max_frames:
            frames.append(frame)
        else:
            over = True
    return [] if over else frames


def reply_frames(protocol: Protocol, rid: bytes, kind: bytes, data: bytes) -> list[bytes] | None:
    """A message's frames after the routing id in ``protocol``; None when that protocol has
    no such message (a delta to a two-frame client, which gets the whole episode at once)."""
    if protocol == "stream":
        return [rid, kind, data]
    return None if kind == b"delta" else [rid, data]


def whole_reply(assembly: EpisodeAssembly, data: bytes) -> bytes:
    """A streamed run's reply ``data`` (its deltas applied to ``assembly``) as the two-frame
    reply: the whole episode, its traces inline."""
    try:
        answer = unpack(data)
        if not answer.get("success") or answer.get("head") is None:
            return pack({"success": False, "error": answer.get("error") or "no episode"})
        summaries = [TraceSummary.model_validate(t) for t in answer.get("traces") or []]
        episode = assembly.finish(answer["head"], summaries)
        return pack({"success": True, "error": None, "episode": episode})
    except Exception as exc:  # the client gets a reason, never silence
        return pack({"success": False, "error": f"{type(exc).__name__}: {exc}"})


class PeerProtocols:
    """The protocol each connection (ROUTER routing id) has shown, at most ``capacity`` of
    them (the least recently seen forgotten first), and the health answers given to those
    that have shown none."""

    def __init__(self, pinned: ServeProtocol = "auto", capacity: int = 65536) -> None:
        if pinned not in get_args(ServeProtocol):
            raise ValueError(
                f"protocol must be one of {list(get_args(ServeProtocol))}, got {pinned!r}"
            )
        self.pinned = pinned
        self.capacity = capacity
        self.known: OrderedDict[bytes, Protocol] = OrderedDict()
        self.probed: OrderedDict[bytes, bool] = OrderedDict()
        """Connections answered a two-frame health while undecided: whether promptly."""

    def _remember(self, table: OrderedDict[bytes, Any], cid: bytes, value: Any) -> None:
        table[cid] = value
        table.move_to_end(cid)
        while len(table) > self.capacity:
            table.popitem(last=False)

    def known_for(self, cid: bytes) -> Protocol | None:
        """The protocol this connection is known to speak (or the pinned one), if any."""
        if self.pinned != "auto":
            return self.pinned  # type: ignore[return-value]
        return self.known.get(cid)

    def resolve(self, cid: bytes, method: bytes, raw: Any) -> Protocol:
        """The protocol to answer this request in (learning from it)."""
        if self.pinned != "auto":
            return self.pinned  # type: ignore[return-value]
        shown = declared(method, raw)
        if shown is not None:
            self.probed.pop(cid, None)
            self._remember(self.known, cid, shown)
            return shown
        known = self.known.get(cid)
        if known is not None:
            return known
        if method == b"health" and self.probed.get(cid):
            # a prompt two-frame answer did not satisfy it: it reads three frames
            self.probed.pop(cid, None)
            self._remember(self.known, cid, "stream")
            return "stream"
        return "two-frame"  # harmless to a stream client, which drops it

    def answered(self, cid: bytes, method: bytes, received: float, ok: bool) -> None:
        """Note that a request received at ``received`` (``time.monotonic()``) was answered,
        ``ok`` whether with success (in two frames, when its connection has shown no
        protocol). A two-frame client asks again only after a failed or late answer."""
        if self.pinned == "auto" and method == b"health" and cid not in self.known:
            self._remember(self.probed, cid, ok and time.monotonic() - received < PROMPT_S)

    def forget(self, cid: bytes) -> None:
        self.known.pop(cid, None)
        self.probed.pop(cid, None)
