"""Request bodies are bounded before authentication and parsing (issue 13, point 1): a
300 MB body without credentials costs the server process less than 50 MiB."""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from .conftest import Hub
from .procserver import HubProcess, hub_process
from .wheelfactory import make_metadata_bomb

MIB = 1024 * 1024
HOSTILE = 300 * 1000 * 1000


@pytest.fixture(scope="module")
def hub_proc(hub: Hub) -> Iterator[HubProcess]:
    with hub_process(hub.settings) as proc:
        yield proc


def raw_post(url: str, path: str, total: int, *, declared: bool) -> tuple[int, dict[str, object]]:
    """POST ``total`` bytes to ``path`` over a plain socket, sending until the server answers
    or closes; returns the status and the JSON body of the answer."""
    parts = urlsplit(url)
    head = [f"POST {path} HTTP/1.1", f"Host: {parts.netloc}", "Content-Type: application/json"]
    head.append(f"Content-Length: {total}" if declared else "Transfer-Encoding: chunked")
    chunk = b"[" + b"1," * (MIB // 2 - 1) + b"1"  # one MiB of a JSON array, never closed
    with socket.create_connection((parts.hostname, parts.port), timeout=120) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sent = 0
        while sent < total:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:  # the server has answered (or closed): stop sending
                break
            data = chunk[: total - sent]
            try:
                if declared:
                    sock.sendall(data)
                else:
                    sock.sendall(b"%x\r\n" % len(data) + data + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(data)
        else:
            if not declared:
                sock.sendall(b"0\r\n\r\n")
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply) < _expected_len(reply):
            more = sock.recv(65536)
            if not more:
                break
            reply += more
    header, _, body = reply.partition(b"\r\n\r\n")
    status = int(header.split(b" ", 2)[1])
    return status, json.loads(body[: _expected_len(reply) - len(header) - 4] or b"{}")


def _expected_len(reply: bytes) -> int:
    header, sep, _ = reply.partition(b"\r\n\r\n")
    if not sep:
        return 1 << 62
    for line in header.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(header) + 4 + int(value)
    return len(reply)


@pytest.mark.parametrize(
    ("path", "declared"),
    [("/api/v1/tokens", True), ("/api/v1/tokens", False), ("/legacy/", True)],
    ids=["json-declared", "json-chunked", "upload-declared"],
)
def test_huge_body_without_credentials_is_refused_with_bounded_memory(
    hub_proc: HubProcess, path: str, declared: bool
) -> None:
    base = hub_proc.reset_peak()
    status, body = raw_post(hub_proc.url, path, HOSTILE, declared=declared)
    growth = hub_proc.peak() - base
    print(f"peak RSS growth for a 300 MB body to {path}: {growth / MIB:.1f} MiB")
    assert status == 413, body
    assert "limit" in str(body.get("message"))
    assert growth < 50 * MIB, f"server peak RSS grew {growth / MIB:.0f} MiB"


def test_small_json_bodies_still_work(hub: Hub) -> None:
    _, token = hub.new_user()
    r = hub.api("POST", "/tokens", token, json={"name": "ok", "scopes": ["read"]})
    assert r.status_code == 201, r.text


def test_json_body_just_over_the_limit_is_413(hub: Hub) -> None:
    _, token = hub.new_user()
    r = hub.api("POST", "/tokens", token, json={"name": "x" * (hub.settings.max_json_bytes + 1)})
    assert r.status_code == 413
    assert r.json()["error"] == "too_large"


@pytest.fixture(scope="session")
def metadata_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_metadata_bomb(tmp_path_factory.mktemp("bomb"), "bomb-env", 600 * MIB)


def test_metadata_bomb_is_refused_with_bounded_memory(
    hub: Hub, hub_proc: HubProcess, metadata_bomb: Path
) -> None:
    assert 15 * MIB < metadata_bomb.stat().st_size < 30 * MIB  # ~20 MB on the wire
    _, token = hub.new_user()
    base = hub_proc.reset_peak()
    with metadata_bomb.open("rb") as f:
        r = httpx.post(
            f"{hub_proc.url}/legacy/",
            data={":action": "file_upload"},
            files={"content": (metadata_bomb.name, f, "application/octet-stream")},
            headers={"Authorization": f"Bearer {token}"},
            timeout=300,
        )
    growth = hub_proc.peak() - base
    print(
        f"peak RSS growth for a 20 MB wheel whose METADATA inflates to 600 MiB: "
        f"{growth / MIB:.1f} MiB"
    )
    assert r.status_code == 400, r.text
    assert "METADATA" in r.json()["message"]
    assert growth < 100 * MIB, f"server peak RSS grew {growth / MIB:.0f} MiB"
