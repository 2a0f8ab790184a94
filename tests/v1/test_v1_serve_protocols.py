"""One served v1 env, two wire protocols, each driven by a client that speaks only its own.

- the streamed protocol of verifiers 0.4.0: every server message is ``[request_id, kind,
  data]``; a run streams its traces as ``delta`` messages, then one ``reply`` with the episode
  head and each trace's size; a message of any other shape is dropped (and logged).
- the two-frame protocol of verifiers a60a606, which prime-rl 559b447 pins: every server
  message is ``[request_id, data]``, a run's reply holds the whole episode; a message of any
  other shape ends that client's receive loop (here: recorded, and every wait fails).

Both clients below are written from those descriptions, independent of
``verifiers.v1.serve``'s own client; they send the same requests, ``[request_id, method,
msgpack payload]``, with nothing naming their protocol. They authenticate with CURVE, as every
client of the server must (``ServeAuth`` only sets the socket's keys).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
import zmq.asyncio

import verifiers.v1 as vf
from verifiers.serve.security import ServeAuth
from verifiers.testing import OpenAITestServer
from verifiers.v1.serve import EnvServer, EnvServerPool
from verifiers.v1.serve.wire import PeerProtocols, declared, reply_frames

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]
SENTENCES = ["one two", "a b c", "the quick brown fox"]
ENV = {"taskset": {"id": "count-words-v1", "sentences": SENTENCES}}


def count_words(request: dict[str, Any]) -> str:
    found = re.search(r"How many words: (.*)$", request["messages"][-1]["content"])
    return str(len(found.group(1).split())) if found else "?"


@pytest.fixture(autouse=True)
def private_serve_keys(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
    for var in ("VF_SERVE_KEYS_DIR", "VF_SERVE_SECRET_KEY", "VF_SERVE_ALLOW", "VF_SERVE_AUTH"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def fixtures_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    path = [str(FIXTURES), str(REPO), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))


@pytest.fixture
def model_server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(count_words) as server:
        yield server


@contextlib.asynccontextmanager
async def served(kind: str) -> AsyncIterator[str]:
    """The env served in this loop (one process, or a broker over two worker processes);
    yields its address."""
    server: EnvServer | EnvServerPool
    if kind == "one-process":
        server = EnvServer(config_data=ENV, address="tcp://127.0.0.1:0")
    else:
        server = EnvServerPool(
            ENV,
            max_workers=2,
            elastic=False,
            address="tcp://127.0.0.1:0",
        )
    stop = asyncio.Event()
    running = asyncio.create_task(server.run(stop))
    try:
        yield server.address
    finally:
        stop.set()
        await running


def decode(data: bytes) -> Any:
    return msgpack.unpackb(data, strict_map_key=False)  # delta updates key items by index


class Wire:
    """What both test clients share: a CURVE-authenticated DEALER and request ids."""

    def __init__(self, address: str) -> None:
        self.ctx = zmq.asyncio.Context()
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        ServeAuth.resolve("client").secure_client(self.socket)
        self.socket.connect(address)
        self.pending: dict[bytes, asyncio.Future[bytes]] = {}
        self.receiver = asyncio.create_task(self.guarded())

    async def receive(self) -> None:
        raise NotImplementedError

    async def guarded(self) -> None:
        """The receive loop; a failure in it fails every wait (no test hangs on it)."""
        try:
            await self.receive()
        except Exception as exc:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(AssertionError(f"the receive loop failed: {exc!r}"))

    async def request(
        self,
        method: str,
        payload: dict[str, Any],
        timeout: float | None = None,
    ) -> tuple[bytes, dict[str, Any]]:
        rid = uuid.uuid4().hex.encode()
        future = self.pending[rid] = asyncio.get_running_loop().create_future()
        await self.socket.send_multipart([rid, method.encode(), msgpack.packb(payload)])
        try:
            data = await asyncio.wait_for(future, timeout)
        finally:
            self.pending.pop(rid, None)
        return rid, decode(data)

    async def ready(self) -> None:
        """Ask for health until the server says it serves, as both upstream clients poll:
        each ask waits a second, a not-ready answer is asked again a moment later."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                _, answer = await self.request("health", {}, timeout=1.0)
                if answer["success"]:
                    return
                await asyncio.sleep(0.2)  # the poll interval of a client, not a wait on state
        raise AssertionError("the env server never became healthy")

    async def close(self) -> None:
        self.receiver.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.receiver
        self.socket.close(linger=0)
        self.ctx.term()


class StreamClient(Wire):
    """verifiers 0.4.0's wire: three frames per message, a run's traces as deltas first."""

    def __init__(self, address: str) -> None:
        self.deltas: dict[bytes, list[dict[str, Any]]] = {}
        self.dropped = 0
        super().__init__(address)

    async def receive(self) -> None:
        while True:
            frames = await self.socket.recv_multipart()
            if len(frames) != 3:
                self.dropped += 1  # 0.4.0 logs and drops it
                continue
            rid, kind, data = frames
            if kind == b"delta":
                self.deltas.setdefault(rid, []).append(decode(data))
            elif rid in self.pending:
                self.pending[rid].set_result(data)

    async def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        rid, answer = await self.request("run", payload)
        assert answer["success"], answer["error"]
        traces: dict[str, dict[str, Any]] = {}
        for delta in self.deltas.pop(rid, []):
            if "open" in delta:
                traces[delta["trace"]] = {**delta["open"], "nodes": [], "calls": []}
            trace = traces[delta["trace"]]
            for field in ("nodes", "calls"):
                trace[field] += delta.get(field, [])
            for field, changed in (delta.get("updates") or {}).items():
                for index, item in changed.items():
                    trace[field][int(index)] = item
            trace.update(delta.get("set") or {})
        for summary in answer["traces"]:
            trace = traces[summary["id"]]
            assert (len(trace["nodes"]), len(trace["calls"])) == (
                summary["nodes"],
                summary["calls"],
            )
        return {**answer["head"], "traces": [traces[s["id"]] for s in answer["traces"]]}


class TwoFrameClient(Wire):
    """verifiers a60a606's wire: two frames per message, a run's reply the whole episode."""

    def __init__(self, address: str) -> None:
        self.broken: str | None = None
        super().__init__(address)

    async def receive(self) -> None:
        while True:
            frames = await self.socket.recv_multipart()
            if len(frames) != 2:  # a60a606 unpacks two frames: its receive loop dies here
                self.broken = f"a message of {len(frames)} frames"
                for future in self.pending.values():
                    future.set_exception(AssertionError(self.broken))
                return
            rid, data = frames
            if rid in self.pending:
                self.pending[rid].set_result(data)

    async def request(
        self,
        method: str,
        payload: dict[str, Any],
        timeout: float | None = None,
    ) -> tuple[bytes, dict[str, Any]]:
        assert self.broken is None, self.broken
        return await super().request(method, payload, timeout)

    async def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        _, answer = await self.request("run", payload)
        assert answer["success"], answer["error"]
        episode: dict[str, Any] = answer["episode"]
        return episode


def run_payload(model_server: OpenAITestServer, sentence: str, *, era: str) -> dict[str, Any]:
    """A run request as each era's client dumps it: a60a606's client config has no
    ``timeout``, 0.4.0's always has one."""
    client: dict[str, Any] = {
        "type": "train",
        "base_url": model_server.base_url,
        "api_key_var": "NO_KEY_SET",
        "headers": {},
        "renderer": None,
        "renderer_model_name": None,
        "multiplex": 256,
    }
    if era == "0.4.0":
        client |= {"headers_from_env": {}, "timeout": {"connect": 30.0, "read": None}}
    return {
        "task_data": {"prompt": f"How many words: {sentence}", "answer": len(sentence.split())},
        "client": client,
        "model": "toy-model",
        "sampling": {"temperature": 1.0},
    }


def check_episode(record: dict[str, Any], sentence: str) -> vf.WireEpisode:
    episode = vf.WireEpisode.model_validate(record)
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    assert trace.reward == 1.0
    assert trace.last_reply == str(len(sentence.split()))
    (branch,) = trace.branches
    assert any(branch.sampled_mask) and len(branch.token_ids) == len(branch.logprobs)
    assert branch.multi_modal_data is None  # prime-rl reads it; a text episode has none
    return episode


@pytest.mark.parametrize("kind", ["one-process", "pool"])
async def test_each_protocol_s_client_runs_episodes_on_one_served_env(
    model_server: OpenAITestServer, kind: str
) -> None:
    async with served(kind) as address:
        stream, two = StreamClient(address), TwoFrameClient(address)
        try:
            await asyncio.gather(stream.ready(), two.ready())
            for sentence in SENTENCES:
                streamed, whole = await asyncio.gather(
                    stream.run(run_payload(model_server, sentence, era="0.4.0")),
                    two.run(run_payload(model_server, sentence, era="a60a606")),
                )
                check_episode(streamed, sentence)
                check_episode(whole, sentence)
            # a health asked after a run is answered in the protocol the run showed
            assert (await stream.request("health", {}, timeout=30))[1]["success"]
            assert (await two.request("health", {}, timeout=30))[1]["success"]
            assert two.broken is None
        finally:
            await stream.close()
            await two.close()


async def test_a_two_frame_client_that_starts_with_a_run_never_sees_three_frames(
    model_server: OpenAITestServer,
) -> None:
    async with served("one-process") as address:
        two = TwoFrameClient(address)
        try:
            sentence = SENTENCES[2]
            episode = check_episode(
                await two.run(run_payload(model_server, sentence, era="a60a606")), sentence
            )
            assert episode.traces[0].num_turns == 1
            # images a node introduced reach prime-rl's reader, Branch.multi_modal_data
            record = await two.run(run_payload(model_server, sentence, era="a60a606"))
            first, *_ = record["traces"][0]["nodes"]
            assert "multi_modal_data" in first  # the node field travels in the episode
            image = {"pixel_values": [[0.5]], "image_grid_thw": [1, 1, 1]}
            first["multi_modal_data"] = {
                "mm_items": {"image": [image]},
                "mm_hashes": {"image": ["h"]},
            }
            (branch,) = vf.WireEpisode.model_validate(record).traces[0].branches
            assert branch.multi_modal_data is not None
            assert branch.multi_modal_data.mm_items == {"image": [image]}
            assert branch.multi_modal_data.mm_hashes == {"image": ["h"]}
            _, cancelled = await two.request("cancel", {"request_id": "gone"}, timeout=30)
            assert cancelled == {"success": True, "error": None, "cancelled": False}
            assert two.broken is None
        finally:
            await two.close()


async def test_a_bad_request_is_answered_in_the_client_s_protocol(
    model_server: OpenAITestServer,
) -> None:
    async with served("one-process") as address:
        stream, two = StreamClient(address), TwoFrameClient(address)
        try:
            await asyncio.gather(stream.ready(), two.ready())
            bad = run_payload(model_server, "a b", era="a60a606")
            bad["task_data"] = {"prompt": "no answer"}
            _, answer = await two.request("run", bad, timeout=60)
            assert not answer["success"] and "answer" in answer["error"]
            assert answer.get("episode") is None
            bad = run_payload(model_server, "a b", era="0.4.0")
            bad["task_data"] = {"prompt": "no answer"}
            _, answer = await stream.request("run", bad, timeout=60)
            assert not answer["success"] and "answer" in answer["error"]
            assert two.broken is None
        finally:
            await stream.close()
            await two.close()


async def test_a_message_of_too_many_frames_is_dropped_and_the_server_keeps_serving() -> None:
    server = EnvServer(config_data=ENV, address="tcp://127.0.0.1:0")
    stop = asyncio.Event()
    running = asyncio.create_task(server.run(stop))
    two = TwoFrameClient(server.address)
    try:
        await two.socket.send_multipart([b"x" * 10] * 50)  # 50 frames: no request has so many
        await two.ready()  # answered after the flood, in order: it was drained first
        assert server.stats["bad_frames"] == 1 and two.broken is None
    finally:
        await two.close()
        stop.set()
        await running


def test_the_protocol_of_a_connection_is_learned_from_what_it_sends() -> None:
    table = PeerProtocols(capacity=2)
    run_040 = {"client": {"type": "train", "timeout": {}}}
    run_a60 = {"client": {"type": "train"}}
    assert declared(b"run", run_040) == "stream" and declared(b"run", run_a60) == "two-frame"
    assert declared(b"health", {"protocol": "stream"}) == "stream"
    assert declared(b"health", {"protocol": "three"}) is None and declared(b"run", [1]) is None
    # a health from a connection that showed nothing: two frames, until a prompt healthy
    # two-frame answer is asked again
    assert table.resolve(b"a", b"health", {}) == "two-frame"
    table.answered(b"a", b"health", time.monotonic(), ok=False)  # still loading
    assert table.resolve(b"a", b"health", {}) == "two-frame"
    table.answered(b"a", b"health", time.monotonic(), ok=True)
    assert table.resolve(b"a", b"health", {}) == "stream"
    assert table.resolve(b"a", b"cancel", {"request_id": "r"}) == "stream"
    assert table.resolve(b"b", b"run", run_a60) == "two-frame"
    assert table.resolve(b"b", b"health", {}) == "two-frame"
    table.resolve(b"c", b"run", run_040)  # over capacity: the least recent is forgotten
    assert table.known_for(b"a") is None and table.known_for(b"c") == "stream"
    table.forget(b"c")
    assert table.known_for(b"c") is None
    assert PeerProtocols("two-frame").resolve(b"a", b"run", run_040) == "two-frame"
    with pytest.raises(ValueError, match="protocol must be one of"):
        PeerProtocols("three")  # type: ignore[arg-type]
    assert reply_frames("two-frame", b"r", b"delta", b"d") is None
    assert reply_frames("stream", b"r", b"delta", b"d") == [b"r", b"delta", b"d"]
