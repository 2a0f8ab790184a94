"""The host's end of the agents' ``listen`` message (see ``_agent.py``): receive the listening
socket a sandbox's agent opened on the sandbox's loopback, and check what came back (the host
does not trust the sandbox: anything but one listening IPv4 TCP socket on 127.0.0.1 is
refused)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket

from verifiers.errors import SandboxError

__all__ = ["receive_listener"]


async def receive_listener(host: socket.socket, sandbox_id: str, timeout: float) -> socket.socket:  # noqa: ASYNC109
    """Wait (at most ``timeout`` seconds) for the agent's answer on ``host`` and return the
    checked listening socket (blocking off, for an event loop)."""
    loop = asyncio.get_running_loop()
    host.setblocking(False)
    try:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    data, fds, _flags, _addr = socket.recv_fds(host, 64, 4)
                    break
                except BlockingIOError:
                    ready: asyncio.Future[None] = loop.create_future()
                    loop.add_reader(host.fileno(), ready.set_result, None)
                    try:
                        await ready
                    finally:
                        loop.remove_reader(host.fileno())
    except TimeoutError:
        raise SandboxError(
            f"sandbox {sandbox_id}: its agent did not open a loopback listener within {timeout}s"
        ) from None
    return _checked(sandbox_id, data, fds)


def _checked(sandbox_id: str, data: bytes, fds: list[int]) -> socket.socket:
    if data != b"ok" or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        words = data.decode("ascii", "replace").split()
        reason = "no answer"
        if len(words) == 2 and words[0] == "error" and words[1].isdigit():
            reason = os.strerror(int(words[1]))
        elif data:
            reason = "an unexpected answer"
        raise SandboxError(
            f"sandbox {sandbox_id}: cannot listen on the sandbox's loopback ({reason})"
        )
    try:
        sock = socket.socket(fileno=fds[0])
    except OSError as e:
        os.close(fds[0])
        raise SandboxError(f"sandbox {sandbox_id}: the agent sent no socket ({e})") from None
    try:
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        address = sock.getsockname() if sock.family == socket.AF_INET else None
    except OSError:
        listening, address = 0, None
    if (
        sock.type != socket.SOCK_STREAM
        or not listening
        or not isinstance(address, tuple)
        or address[0] != "127.0.0.1"
    ):
        with contextlib.suppress(OSError):
            sock.close()
        raise SandboxError(
            f"sandbox {sandbox_id}: the agent's answer is not a TCP socket listening on 127.0.0.1"
        )
    sock.setblocking(False)
    return sock
