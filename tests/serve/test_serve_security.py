"""The env servers' security (issue 39), each attack replayed against real servers on
127.0.0.1 ports: unauthenticated clients are refused, the server's secrets stay home, hostile
frames neither kill a server nor blow up its memory, a poison request is answered after one
retry, the model-client cache is bounded, and the same user's default flow needs no setup."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq

import verifiers as vf
from tests.serve.conftest import authenticated_dealer, spawned_server, wait_until
from verifiers.serve import EnvServerError, ZMQEnvClient, ZMQEnvServer
from verifiers.serve.protocol import pack, unpack
from verifiers.serve.security import (
    Limits,
    PayloadError,
    ServeAuth,
    bounded_unpack,
    default_keys_path,
    generate_keys,
    user_keys,
)
from verifiers.testing.server import OpenAITestServer

ROWS = [
    {
        "prompt": [{"role": "user", "content": f"Say: {i}"}],
        "example_id": i,
        "info": {"numbers": [i, i + 10, i + 20]},
    }
    for i in range(4)
]
V1_FIXTURES = Path(__file__).resolve().parents[1] / "v1" / "fixtures"
SECRET = "s3cret-of-the-server"


class Listener:
    """A TCP listener recording every byte a client sends it (a thief's endpoint)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.received = b""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                while chunk := conn.recv(65536):
                    self.received += chunk
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    thief = Listener()
    yield thief
    thief.close()


@pytest.fixture
def server_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """A secret in the environment the (spawned) server inherits."""
    monkeypatch.setenv("VF_TEST_SERVER_SECRET", SECRET)
    return "VF_TEST_SERVER_SECRET"


def peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM), bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def hostile_payload(size: int = 16 * 1024 * 1024) -> bytes:
    """``size`` bytes of msgpack: one array of empty arrays (each byte a Python list)."""
    n = size - 5
    return b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n


# ------------------------------------------------------------------ authentication


def test_the_per_user_key_is_private_and_racing_creators_agree(private_serve_keys: Path) -> None:
    ctx = mp.get_context("spawn")
    with ctx.Pool(6) as pool:
        keys = pool.map(_public_key, range(6))
    assert len(set(keys)) == 1
    path = default_keys_path()
    assert path.parent.parent.parent == private_serve_keys  # $XDG_CONFIG_HOME/verifiers/serve
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert user_keys()[0] == keys[0]
    path.chmod(0o644)
    with pytest.raises(PermissionError, match="chmod 600"):
        user_keys()


def _public_key(_: int) -> bytes:
    return user_keys()[0]


async def test_unauthenticated_clients_are_refused_and_keyed_ones_served(
    model_server: OpenAITestServer, tmp_path: Path
) -> None:
    other_keys = tmp_path / "other"
    generate_keys(other_keys)
    with spawned_server("serve_probe") as (address, _):
        # no key at all, and another key pair: the handshake is refused, nothing runs
        for kwargs in ({"insecure": True}, {"keys_dir": str(other_keys)}):
            stranger = ZMQEnvClient(address=address, **kwargs)
            try:
                with pytest.raises(TimeoutError):
                    await stranger.wait_for_server_startup(timeout=3)
            finally:
                await stranger.close()
        # the same user's client, built with upstream's arguments only, is served
        client = ZMQEnvClient(address=address, name="probe")
        try:
            await client.wait_for_server_startup(timeout=120)
            out = await client.run_rollout(ROWS[1], _cfg(model_server), "m", {})
            assert out["reward"] == 1.0
        finally:
            await client.close()


async def test_explicit_keys_from_a_directory(
    model_server: OpenAITestServer, tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    written = generate_keys(keys)
    assert stat.S_IMODE(written["server.key_secret"].stat().st_mode) == 0o600
    with spawned_server("serve_probe", keys_dir=str(keys)) as (address, _):
        mine = ZMQEnvClient(address=address)  # the per-user key: not authorised there
        theirs = ZMQEnvClient(address=address, keys_dir=str(keys))
        try:
            with pytest.raises(TimeoutError):
                await mine.wait_for_server_startup(timeout=3)
            await theirs.wait_for_server_startup(timeout=120)
            assert (await theirs.run_rollout(ROWS[0], _cfg(model_server), "m", {}))["reward"] == 1.0
        finally:
            await mine.close()
            await theirs.close()


async def test_the_hmac_fallback_signs_every_message(
    model_server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VF_SERVE_AUTH", "hmac")
    with spawned_server("serve_probe") as (address, _):
        client = ZMQEnvClient(address=address)
        try:
            await client.wait_for_server_startup(timeout=120)
            assert (await client.run_rollout(ROWS[2], _cfg(model_server), "m", {}))["reward"] == 1.0
        finally:
            await client.close()
        # an unsigned message (a plain client) gets nothing back
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.connect(address)
        sock.send_multipart([b"x", b"ping"])
        assert not sock.poll(1500)
        sock.close(linger=0)
        ctx.term()


# ------------------------------------------------------------------ secrets stay home


async def test_classic_requests_cannot_send_the_servers_secrets_elsewhere(
    model_server: OpenAITestServer, listener: Listener, server_secret: str
) -> None:
    allow = {"endpoints": {model_server.base_url: server_secret}}
    with spawned_server("serve_probe", allow=allow) as (address, _):
        client = ZMQEnvClient(address=address)
        try:
            await client.wait_for_server_startup(timeout=120)
            attacks: list[tuple[dict[str, Any], str]] = [
                (dict(api_base_url=listener.url, api_key_var=server_secret), "api_key_var"),
                (dict(api_base_url="http://10.255.255.1:9/v1", api_key_var="UNSET_X"), "base URL"),
                (
                    dict(
                        api_base_url=listener.url,
                        api_key_var="PRIME_API_KEY",
                        extra_headers={"Authorization": "x"},
                    ),
                    "header",
                ),
                (
                    dict(
                        api_base_url=listener.url,
                        api_key_var="UNSET_X",
                        endpoint_configs=[
                            {"api_base_url": "http://evil.example/v1", "api_key_var": server_secret}
                        ],
                    ),
                    "evil.example",  # the endpoint the client resolves it to
                ),
            ]
            for fields, named in attacks:
                with pytest.raises(EnvServerError, match=f"refused: .*{named}"):
                    await client.run_rollout(ROWS[0], vf.ClientConfig(**fields), "m", {})
            # sent unresolved by a raw client, every endpoint of the list is checked
            ctx = zmq.Context()
            sock = authenticated_dealer(ctx, address)
            config = {
                "api_base_url": model_server.base_url,
                "api_key_var": "UNSET_X",
                "endpoint_configs": [{"api_base_url": listener.url, "api_key_var": server_secret}],
            }
            request = {
                "request_type": "run_rollout",
                "input": ROWS[0],
                "model": "m",
                "client_config": config,
                "sampling_args": {},
                "max_retries": 0,
            }
            sock.send_multipart([b"r", pack(request)])
            assert sock.poll(30_000)
            error = unpack(sock.recv_multipart()[1])["error"]
            assert "endpoint_configs[0]: api_key_var" in error
            sock.close(linger=0)
            ctx.term()
            assert listener.received == b""  # the thief's endpoint heard nothing
            # the endpoint the server is configured with gets its key
            ok = await client.run_rollout(
                ROWS[0],
                vf.ClientConfig(api_base_url=model_server.base_url, api_key_var=server_secret),
                "m",
                {},
            )
            assert ok["reward"] == 1.0
            headers = {k.lower(): v for k, v in model_server.last_headers.items()}
            assert headers["authorization"] == f"Bearer {SECRET}"
        finally:
            await client.close()


async def test_v1_requests_cannot_read_the_servers_environment(
    listener: Listener, server_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verifiers.v1.serve import EnvClient, EnvServer
    from verifiers.v1.serve import EnvServerError as V1Error

    monkeypatch.syspath_prepend(str(V1_FIXTURES))
    server = EnvServer({"taskset": {"id": "count-words-v1"}}, address="tcp://127.0.0.1:0")
    stop = asyncio.Event()
    serving = asyncio.create_task(server.run(stop))
    client = EnvClient(server.address)
    task = {"prompt": "How many words: a", "answer": 1}
    try:
        await client.wait_for_server_startup(timeout=30)
        attacks: list[tuple[dict[str, Any], str]] = [
            (
                {
                    "type": "eval",
                    "base_url": listener.url,
                    "headers_from_env": {"X-Home": "HOME", "X-Path": "PATH"},
                },
                "headers_from_env",
            ),
            (
                {"type": "eval", "base_url": listener.url, "api_key_var": server_secret},
                "api_key_var",
            ),
            ({"type": "train", "base_url": "http://192.0.2.1/v1"}, "base URL"),
            ({"type": "eval", "base_url": listener.url, "headers": {"Cookie": "x"}}, "header"),
        ]
        for config, named in attacks:
            with pytest.raises(V1Error, match=f"refused: .*{named}"):
                await client.run(client=config, model="m", task_data=task)
        assert listener.received == b""
        assert server.stats["refused"] == len(attacks)
    finally:
        await client.close()
        stop.set()
        await serving


# ------------------------------------------------------------------ hostile frames


async def test_a_v1_server_survives_non_utf8_ids_and_garbage_frames(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verifiers.v1.serve import EnvClient, EnvServer

    monkeypatch.syspath_prepend(str(V1_FIXTURES))
    server = EnvServer({"taskset": {"id": "count-words-v1"}}, address="tcp://127.0.0.1:0")
    stop = asyncio.Event()
    serving = asyncio.create_task(server.run(stop))
    ctx = zmq.Context()
    sock = authenticated_dealer(ctx, server.address)
    client = EnvClient(server.address)
    try:
        for frames in (
            [b"\xff\xfe", b"run", pack({"task_data": {}})],
            [b"\xff\xfe", b"cancel", pack({"request_id": "x"})],
            [b"\xff\xfe", b"\xff", b"\xc1"],
            [b"\xff\xfe", b"run", b"\xc1\xc1 not msgpack"],
            [b"lonely"],
            [b"a", b"b", b"c", b"d", b"e"],
        ):
            sock.send_multipart(frames)
        answers = []
        for _ in range(4):  # the 3-frame messages are answered under their (binary) id
            # the server shares this event loop: wait off it
            assert await asyncio.to_thread(sock.poll, 10_000), "no answer"
            # a client that never showed 0.4's run config is answered in the two-frame
            # protocol ([id, data]); 0.4's streamed one is [id, b"reply", data]
            *head, data = sock.recv_multipart()
            answers.append((head[0], head[1:], unpack(data)))
        assert all(rid == b"\xff\xfe" and kind in ([], [b"reply"]) for rid, kind, _ in answers)
        assert [a["success"] for _, _, a in answers].count(False) >= 3
        assert await client.health(timeout=10)
        assert not serving.done()
        assert server.stats["bad_frames"] == 2
    finally:
        sock.close(linger=0)
        ctx.term()
        await client.close()
        stop.set()
        await serving


def test_decoding_is_bounded() -> None:
    limits = Limits(max_message_bytes=1 << 20, max_items=1000, max_depth=8)
    assert bounded_unpack(pack({"a": [1, 2, {"b": "c"}]}), limits) == {"a": [1, 2, {"b": "c"}]}
    for bad, why in (
        (hostile_payload(1 << 16), "elements"),
        (b"\x91" * 20 + b"\x90", "deeper"),
        (b"\x91" * 5000 + b"\x90", "deeper"),
        (b"\xc1", "not a msgpack"),
        (b"\x00" * (2 << 20), "bytes"),
        (msgpack.packb([[1] * 600, [2] * 600]), "elements"),
    ):
        with pytest.raises(PayloadError, match=why):
            bounded_unpack(bad, limits)


async def test_a_16_mib_hostile_payload_stays_under_the_memory_bound(
    model_server: OpenAITestServer,
) -> None:
    """Before: 16 MiB of empty arrays grew a v1 server by 1.37 GB (80x). Now the request is
    refused after ``max_items`` elements: the server's peak RSS grows by < 200 MiB."""
    bound = 200 * 1024 * 1024
    with spawned_server("serve_probe") as (address, process):
        client = ZMQEnvClient(address=address)
        await client.wait_for_server_startup(timeout=120)
        assert process.pid is not None
        before = peak_rss(process.pid)
        ctx = zmq.Context()
        sock = authenticated_dealer(ctx, address)
        try:
            sock.send_multipart([b"big", hostile_payload()])
            assert sock.poll(60_000), "no answer to the hostile request"
            rid, answer = sock.recv_multipart()
            reply = unpack(answer)
            assert rid == b"big" and reply["success"] is False and "elements" in reply["error"]
            grown = peak_rss(process.pid) - before
            assert grown < bound, f"the server grew by {grown / 2**20:.0f} MiB"
            # an over-limit frame (default limit 64 MiB) drops that connection only
            sock.send_multipart([b"huge", b"\x00" * (65 * 1024 * 1024)])
            assert not sock.poll(2000)
            assert (await client.run_rollout(ROWS[1], _cfg(model_server), "m", {}))["reward"] == 1.0
        finally:
            sock.close(linger=0)
            ctx.term()
            await client.close()


def _serve_v1(address_queue: Any) -> None:
    import sys

    sys.path.insert(0, str(V1_FIXTURES))
    from verifiers.v1.serve import serve_env

    serve_env(
        max_workers=1,
        address="tcp://127.0.0.1:0",
        config_data={"taskset": {"id": "count-words-v1"}},
        address_queue=address_queue,
    )


async def test_a_v1_server_stays_under_the_memory_bound() -> None:
    from verifiers.v1.serve import EnvClient

    ctx_mp = mp.get_context("spawn")
    queue = ctx_mp.Queue()
    process = ctx_mp.Process(target=_serve_v1, args=(queue,))
    process.start()
    client = None
    ctx = zmq.Context()
    sock = None
    try:
        address = queue.get(timeout=120)
        client = EnvClient(address)
        await client.wait_for_server_startup(timeout=120)
        assert process.pid is not None
        before = peak_rss(process.pid)
        sock = authenticated_dealer(ctx, address)
        sock.send_multipart([b"big", b"run", hostile_payload()])
        assert sock.poll(60_000)
        # a connection that never showed 0.4's run config gets the two-frame answer
        # ([id, data]); 0.4's streamed protocol answers [id, b"reply", data]
        rid, *kind, data = sock.recv_multipart()
        assert rid == b"big" and kind in ([], [b"reply"]), kind
        assert "elements" in unpack(data)["error"]
        grown = peak_rss(process.pid) - before
        assert grown < 200 * 1024 * 1024, f"the server grew by {grown / 2**20:.0f} MiB"
        assert await client.health(timeout=10)
    finally:
        if sock is not None:
            sock.close(linger=0)  # before term(), which waits for every socket to close
        ctx.term()
        if client is not None:
            await client.close()
        process.terminate()
        process.join(30)


# ------------------------------------------------------------------ workers and caches


async def test_a_poison_request_is_retried_once_then_answered_with_an_error(
    model_server: OpenAITestServer, tmp_path: Path
) -> None:
    args = {"poison": 3, "poison_dir": str(tmp_path)}
    with spawned_server("serve_probe", args, num_workers=2) as (address, _):
        client = ZMQEnvClient(address=address)
        try:
            await client.wait_for_server_startup(timeout=180)
            with pytest.raises(EnvServerError, match="again when it was retried"):
                await asyncio.wait_for(
                    client.run_rollout(ROWS[3], _cfg(model_server), "m", {}), 180
                )
            assert len(os.listdir(tmp_path)) == 2  # run, retried once, never a third time
            await client.wait_for_server_startup(timeout=180)  # the workers were replaced
            assert (await client.run_rollout(ROWS[1], _cfg(model_server), "m", {}))["reward"] == 1.0
            assert len(os.listdir(tmp_path)) == 2
        finally:
            await client.close()


async def test_the_model_client_cache_is_bounded(
    model_server: OpenAITestServer, env_paths: list[str]
) -> None:
    server = ZMQEnvServer("serve_probe", address=f"tcp://127.0.0.1:{_free_port()}")
    stop = asyncio.Event()
    serving = asyncio.create_task(server.serve(stop))
    client = ZMQEnvClient(address=server.address)
    try:
        await client.wait_for_server_startup(timeout=60)
        configs = [
            vf.ClientConfig(
                api_base_url=model_server.base_url, api_key_var="VF_TEST_NO_KEY", timeout=100 + i
            )
            for i in range(40)
        ]
        outs = await asyncio.gather(*(client.run_rollout(ROWS[0], c, "m", {}) for c in configs))
        assert all(o["reward"] == 1.0 for o in outs)
        assert len(server._clients) == 32
        await wait_until(lambda: not server._clients.closing, what="evicted clients closed")
    finally:
        await client.close()
        stop.set()
        await serving
        await server.close()


async def test_a_v1_run_is_cancelled_when_its_client_disconnects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verifiers.v1.serve import EnvServer

    monkeypatch.syspath_prepend(str(V1_FIXTURES))
    reached, release = asyncio.Event(), asyncio.Event()

    async def stuck(request: dict[str, Any]) -> str:
        reached.set()
        await release.wait()
        return "1"

    async with OpenAITestServer(stuck) as model:
        server = EnvServer({"taskset": {"id": "count-words-v1"}}, address="tcp://127.0.0.1:0")
        stop = asyncio.Event()
        serving = asyncio.create_task(server.run(stop))
        ctx = zmq.Context()
        sock = authenticated_dealer(ctx, server.address)
        try:
            request = {
                "task_data": {"prompt": "How many words: a", "answer": 1},
                "client": {"type": "eval", "base_url": model.base_url},
                "model": "m",
            }
            sock.send_multipart([b"r1", b"run", pack(request)])
            await asyncio.wait_for(reached.wait(), 30)
            (episode,) = server._running.values()
            sock.close(linger=0)  # a trainer that crashed
            await asyncio.wait_for(asyncio.gather(episode, return_exceptions=True), 30)
            # it ended while the model call it waits on is still held: it was cancelled
            assert not release.is_set() and server._running == {}
            assert server.stats["disconnects"] == 1
        finally:
            release.set()
            ctx.term()
            stop.set()
            await serving


def test_the_default_elastic_pool_is_capped() -> None:
    from verifiers.v1.serve import EnvServerPool

    pool = EnvServerPool({"taskset": {"id": "x"}}, max_workers=None, address="tcp://127.0.0.1:0")
    try:
        assert pool.max_workers == 2 * (os.cpu_count() or 1)
    finally:
        pool.frontend.close(linger=0)
        pool.monitor.close(linger=0)
        if pool.gate is not None:
            pool.gate.stop()
        pool.ctx.term()


def test_an_insecure_server_warns(caplog: pytest.LogCaptureFixture) -> None:
    auth = ServeAuth.resolve("server", insecure=True)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    with caplog.at_level("WARNING", logger="verifiers.serve.security"):
        assert auth.secure_server(ctx, sock) is None
    assert "WITHOUT authentication" in caplog.text
    sock.close()
    ctx.term()


def _cfg(srv: OpenAITestServer) -> vf.ClientConfig:
    return vf.ClientConfig(api_base_url=srv.base_url, api_key_var="VF_TEST_NO_KEY")


def _free_port() -> int:
    from verifiers.utils.serve_utils import get_free_port

    return get_free_port()
