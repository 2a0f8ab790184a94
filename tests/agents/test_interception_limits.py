"""The interception server keeps the host's memory bounded whatever an agent sends: a channel
(and the server) holds a bounded number of body bytes at once, a body that does not arrive in
time is cut off, and each refusal is an error response naming the limit, recorded on the
channel so that the rollout ends as errored."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from verifiers.agents.interception import InterceptionServer
from verifiers.errors import ConfigError
from verifiers.types import ModelResponse

MiB = 1 << 20

# The server alone in a process of its own, so that its memory is what is measured. It takes
# every call and never answers (a slow model: requests are held as long as they can be),
# reports its resident memory before the attack, each call it takes, and its peak when told
# to on stdin.
SERVER = r"""
import asyncio, json, sys
from verifiers.agents.interception import InterceptionServer

def mem(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024

async def main():
    server = InterceptionServer()
    channel = await server.open_channel()
    held = []
    async def take():
        while True:
            held.append(await channel.next_call())
            print(json.dumps({"taken": len(held)}), flush=True)
    taker = asyncio.ensure_future(take())
    print(json.dumps({"path": channel.path, "base": channel.base_path(), "rss": mem("VmRSS:"),
                      "hwm": mem("VmHWM:")}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    print(json.dumps({"hwm": mem("VmHWM:"), "calls": len(held), "stats": channel.stats,
                      "errors": channel.limit_errors, "held_bytes": channel.held_bytes}),
          flush=True)
    await server.close()
    taker.cancel()

asyncio.run(main())
"""


async def _post(path: str, head: bytes, body: bytes) -> tuple[int, dict[str, Any]]:
    """Send ``head`` and (as far as the server takes it) ``body`` on a new connection; the
    response's status and JSON body (status 0: the connection ended without one)."""
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(head)

    async def pump() -> None:
        try:
            for i in range(0, len(body), MiB):
                writer.write(body[i : i + MiB])
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    pumping = asyncio.ensure_future(pump())
    try:
        status_head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return 0, {}
    finally:
        pumping.cancel()
        writer.transport.abort()
    lines = status_head.decode().split("\r\n")
    length = next(int(x.split(":")[1]) for x in lines if x.lower().startswith("content-length"))
    payload = await reader.readexactly(length) if length else b"{}"
    return int(lines[0].split()[1]), json.loads(payload)


async def test_sixteen_connections_of_16_mib_keep_the_server_under_64_mib() -> None:
    """The attack: 16 connections (the per-channel cap), each sending a 16 MiB body (the
    largest one allowed) while the model is slow. One body is taken; the 15 others get a 413
    naming ``max_channel_bytes`` before their bodies are read; the server's peak resident
    memory grows by less than 64 MiB (it grew by hundreds of MiB before the budget)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        ready = json.loads(await asyncio.to_thread(proc.stdout.readline))
        pad = 16 * MiB - len(b'{"messages":[{"role":"user","content":""}]}')
        body = b'{"messages":[{"role":"user","content":"' + b"x" * pad + b'"}]}'
        assert len(body) == 16 * MiB
        head = (
            f"POST {ready['base']}/chat/completions HTTP/1.1\r\n"
            f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n"
        ).encode()
        attacks = [asyncio.ensure_future(_post(ready["path"], head, body)) for _ in range(16)]
        refused: list[tuple[int, dict[str, Any]]] = []
        pending = set(attacks)
        while len(refused) < 15:
            done, pending = await asyncio.wait(
                pending, timeout=60, return_when=asyncio.FIRST_COMPLETED
            )
            assert done, f"only {len(refused)} of 15 refusals came"
            refused.extend(t.result() for t in done)
        taken = json.loads(await asyncio.to_thread(proc.stdout.readline))
        assert taken == {"taken": 1}  # the one body let in arrived and waits for the model
        proc.stdin.write("report\n")
        proc.stdin.flush()
        report = json.loads(await asyncio.to_thread(proc.stdout.readline))
        # the one taken is refused when the server closes the rollout's channel
        (last,) = await asyncio.wait_for(asyncio.gather(*pending), 30)
    finally:
        proc.kill()
        proc.communicate()
    assert [status for status, _ in refused] == [413] * 15
    for _, error in refused:
        assert error["error"]["code"] == "max_channel_bytes"
        assert "max_channel_bytes" in error["error"]["message"]
    assert last[0] == 503
    assert report["calls"] == 1 and report["stats"]["over_budget"] == 15
    assert report["errors"] and report["errors"][0].startswith("max_channel_bytes")
    growth = report["hwm"] - ready["rss"]
    assert growth < 64 * MiB, f"the server's memory grew by {growth / MiB:.0f} MiB"


async def test_a_slow_body_is_cut_off_by_the_read_timeout() -> None:
    server = InterceptionServer(read_timeout=0.5)
    channel = await server.open_channel()
    try:
        reader, writer = await asyncio.open_unix_connection(channel.path)
        writer.write(
            f"POST {channel.base_path()}/chat/completions HTTP/1.1\r\n"
            "Content-Length: 1000\r\n\r\n".encode()
            + b'{"messages": ['
        )
        await writer.drain()
        # the rest never comes: the server answers (within the read timeout and a margin)
        response = await asyncio.wait_for(reader.read(), 10)
        head, _, payload = response.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408")
        error = json.loads(payload)["error"]
        assert error["code"] == "read_timeout" and "0.5 seconds" in error["message"]
        await asyncio.wait_for(channel.limit_hit(), 1)  # the rollout learns of it
        assert channel.limit_errors[0].startswith("read_timeout")
        assert channel.stats["read_timeouts"] == 1 and channel.held_bytes == 0
        writer.close()
    finally:
        await server.close()


async def test_the_server_wide_budget_and_release_of_held_bytes() -> None:
    """One rollout holding a body while it arrives uses the server's budget: another
    rollout's body that would pass it is refused (413 naming ``max_total_bytes``); once the
    first connection ends, its bytes are released and the other rollout is served."""
    server = InterceptionServer(
        max_body_bytes=MiB, max_channel_bytes=2 * MiB, max_total_bytes=MiB + MiB // 2
    )
    a, b = await server.open_channel(), await server.open_channel()
    try:
        _reader, writer = await asyncio.open_unix_connection(a.path)
        writer.write(
            f"POST {a.base_path()}/chat/completions HTTP/1.1\r\nContent-Length: {MiB}\r\n\r\n"
            .encode() + b"{"
        )  # fmt: skip
        await writer.drain()
        while a.held_bytes == 0:  # the head has been read: the server holds a's budget
            await asyncio.sleep(0.01)
        assert server.held_bytes == MiB
        body = json.dumps({"messages": [{"role": "user", "content": "x" * (MiB - 100)}]})
        head = (
            f"POST {b.base_path()}/chat/completions HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        status, error = await _post(b.path, head, body.encode())
        assert status == 413 and error["error"]["code"] == "max_total_bytes"
        assert b.limit_errors and not a.limit_errors
        writer.transport.abort()  # a's agent goes away: its held bytes are released
        while server.held_bytes:
            await asyncio.sleep(0.01)
        assert a.held_bytes == 0
        served = asyncio.ensure_future(_post(b.path, head, body.encode()))
        call = await asyncio.wait_for(b.next_call(), 10)
        call.answer(ModelResponse(message={"role": "assistant", "content": "ok"}))
        status, reply = await served
        assert status == 200 and reply["choices"][0]["message"]["content"] == "ok"
        assert server.held_bytes == 0
    finally:
        await server.close()


def test_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="must be positive"):
        InterceptionServer(read_timeout=0)
    with pytest.raises(ConfigError, match="over the byte budget"):
        InterceptionServer(max_body_bytes=2 * MiB, max_channel_bytes=MiB)
    # a larger body limit raises the channel's budget with it
    assert InterceptionServer(max_body_bytes=64 * MiB).max_channel_bytes == 64 * MiB
