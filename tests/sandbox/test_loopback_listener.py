"""``listen_loopback``: the sandbox's agent opens a TCP socket listening on the sandbox's own
loopback and hands it to the host, which accepts the sandbox's connections itself. The host
checks what it was handed: only a listening TCP socket on 127.0.0.1 is taken."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from tests.sandbox.conftest import needs_bwrap
from verifiers.errors import SandboxError
from verifiers.sandbox import create_sandbox
from verifiers.sandbox._listen import receive_listener

CONNECT = (
    "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), 5); "
    "s.sendall(b'ping'); print(s.recv(10).decode())"
)


@needs_bwrap
@pytest.mark.parametrize("agent", ["native", "python"])
async def test_the_host_accepts_on_the_sandboxs_own_loopback(agent: str) -> None:
    async with create_sandbox("bwrap", agent=agent) as a, create_sandbox("bwrap") as b:
        listener = await a.listen_loopback()  # type: ignore[attr-defined]
        with listener:
            port = listener.getsockname()[1]
            loop = asyncio.get_running_loop()
            accepted = asyncio.ensure_future(loop.sock_accept(listener))
            inside = asyncio.ensure_future(a.exec(["python3", "-c", CONNECT, str(port)]))
            conn, _ = await asyncio.wait_for(accepted, 30)
            with conn:
                assert await loop.sock_recv(conn, 4) == b"ping"
                await loop.sock_sendall(conn, b"pong")
            assert (await inside).stdout.strip() == "pong"
            # another sandbox's loopback is another network namespace: nothing listens there
            other = await b.exec(["python3", "-c", CONNECT, str(port)])
            assert other.exit_code != 0 and "Connection refused" in other.stderr


async def _answer(data: bytes, fds: list[int]) -> socket.socket:
    host, agent = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with host, agent:
        socket.send_fds(agent, [data], fds)
        return await receive_listener(host, "test", 5.0)


@pytest.mark.parametrize("kind", ["udp", "unix", "not listening", "wildcard", "pipe", "none"])
async def test_what_is_not_a_loopback_listener_is_refused(kind: str) -> None:
    """A forged answer (another kind of descriptor, or none) is a SandboxError, and nothing
    handed over stays open in the host."""
    made: list[socket.socket] = []
    if kind == "udp":
        made.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        made[0].bind(("127.0.0.1", 0))
    elif kind == "unix":
        made += socket.socketpair()
    elif kind == "not listening":
        made.append(socket.socket())
        made[0].bind(("127.0.0.1", 0))
    elif kind == "wildcard":
        made.append(socket.socket())
        made[0].bind(("0.0.0.0", 0))
        made[0].listen()
    fds = [m.fileno() for m in made[:1]]
    if kind == "pipe":
        r, w = os.pipe()
        fds = [r]
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(SandboxError, match=r"127\.0\.0\.1|unexpected answer|no socket"):
        await _answer(b"ok", fds)
    assert len(os.listdir("/proc/self/fd")) == before  # the received copy was closed
    for m in made:
        m.close()
    if kind == "pipe":
        os.close(r)
        os.close(w)


async def test_the_agents_error_is_named() -> None:
    with pytest.raises(SandboxError, match="Address already in use"):
        await _answer(b"error 98", [])
