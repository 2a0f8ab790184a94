"""Weight-sync requests as servers see them, and the errors when a server refuses."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from verifiers.errors import InfraError
from verifiers.testing import OpenAITestServer
from verifiers.train.weight_sync import make_weight_sync, server_root


class Recorder:
    """An HTTP server that records JSON bodies per path."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        self.calls.append((request.path, body))
        return web.json_response({"results": [None]})

    async def __aenter__(self) -> str:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}/v1"

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.cleanup()


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        (
            "reload",
            [
                ("/collective_rpc", {"method": "reload_weights", "kwargs": {"weights_path": "D"}}),
                ("/reset_prefix_cache", None),
            ],
        ),
        ("prime-rl", [("/update_weights", {"weight_dir": "D"})]),
    ],
)
async def test_each_method_sends_its_servers_body(
    tmp_path: Path, method: str, expected: list[tuple[str, Any]]
) -> None:
    rec = Recorder()
    async with rec as url:
        sync = make_weight_sync(method, [url, url])
        seconds = await asyncio.to_thread(sync.push, 3, tmp_path, None)
    want = [(p, _with_dir(b, str(tmp_path.resolve()))) for p, b in expected] * 2
    assert rec.calls == want and seconds >= 0


def _with_dir(body: Any, d: str) -> Any:
    if body is None:
        return None
    return {
        k: (_with_dir(v, d) if isinstance(v, dict) else (d if v == "D" else v))
        for k, v in body.items()
    }


async def test_a_server_without_dev_mode_is_a_clear_error(tmp_path: Path) -> None:
    async with OpenAITestServer() as server:  # no /collective_rpc: 404, as vLLM without dev mode
        sync = make_weight_sync("reload", [server.base_url])
        with pytest.raises(InfraError, match=r"HTTP 404.*VLLM_SERVER_DEV_MODE=1"):
            await asyncio.to_thread(sync.push, 1, tmp_path, None)


def test_an_unreachable_server_is_named(tmp_path: Path) -> None:
    sync = make_weight_sync("prime-rl", ["http://127.0.0.1:9/v1"])
    with pytest.raises(InfraError, match=r"could not update the weights of http://127.0.0.1:9"):
        sync.push(1, tmp_path, None)


def test_server_root_and_unknown_method() -> None:
    assert server_root("http://h:8000/v1/") == "http://h:8000"
    with pytest.raises(ValueError, match="unknown weight_sync 'rsync'"):
        make_weight_sync("rsync", [])
