"""The remote backend against a real ``vf sandbox serve`` service on loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

from tests.sandbox.conftest import VF, needs_bwrap, vf_exec
from verifiers.errors import ConfigError, SandboxError
from verifiers.sandbox import Sandbox, SandboxLimits, create_sandbox
from verifiers.sandbox.server import start_server
from verifiers.testing.sandbox_conformance import SandboxConformance

pytestmark = needs_bwrap


@pytest.fixture
async def service() -> AsyncIterator[str]:
    runner, url = await start_server(backend="bwrap", token="s3cret", idle_timeout=60)
    try:
        yield url
    finally:
        await runner.cleanup()


class TestRemoteConformance(SandboxConformance):
    url = ""

    @pytest.fixture(autouse=True)
    def _service(self, service: str) -> Iterator[None]:
        self.url = service
        yield

    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        return create_sandbox("remote", limits=limits, url=self.url, token="s3cret")


async def test_wrong_token_is_refused(service: str) -> None:
    with pytest.raises(SandboxError, match="401"):
        await create_sandbox("remote", url=service, token="wrong").start()


async def test_bad_limits_are_a_config_error(service: str) -> None:
    async with aiohttp.ClientSession() as s:
        r = await s.post(
            f"{service}/v1/sandboxes",
            json={"limits": {"memroy_mb": 1}},
            headers={"Authorization": "Bearer s3cret"},
        )
        assert r.status == 400 and "memroy_mb" in (await r.json())["error"]
        r = await s.post(
            f"{service}/v1/sandboxes", data=b"{not json", headers={"Authorization": "Bearer s3cret"}
        )
        assert r.status == 400


async def test_network_is_refused_unless_the_service_allows_it(service: str) -> None:
    sb = create_sandbox("remote", url=service, token="s3cret", network=True)
    with pytest.raises(SandboxError, match="403"):
        await sb.start()


async def test_unknown_sandbox_and_dead_service() -> None:
    runner, url = await start_server(backend="bwrap")
    sb = create_sandbox("remote", url=url)
    await sb.start()
    await runner.cleanup()  # the service goes away under a live client
    with pytest.raises(SandboxError):
        await sb.exec("true")
    await sb.stop()


def test_missing_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VF_SANDBOX_URL", raising=False)
    with pytest.raises(ConfigError, match="vf sandbox serve"):
        create_sandbox("remote")


def test_cli_serve_and_exec_remote() -> None:
    """`vf sandbox serve` in a subprocess, `vf sandbox exec --url` against it."""
    proc = subprocess.Popen(
        [VF, "sandbox", "serve", "--port", "0", "--token", "tok"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert "http://127.0.0.1:" in line, proc.stderr.read() if proc.stderr else line
        url = line.split(" on ")[1].split()[0]
        env_token = {"VF_SANDBOX_TOKEN": "tok"}
        p = subprocess.run(
            [VF, "sandbox", "exec", "--url", url, "--", "sh", "-c", "echo remote; exit 4"],
            capture_output=True,
            env={**os.environ, **env_token},
            timeout=60,
        )
        assert (p.returncode, p.stdout) == (4, b"remote\n"), p.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_cli_refuses_public_bind_without_token() -> None:
    p = subprocess.run(
        [VF, "sandbox", "serve", "--host", "0.0.0.0"], capture_output=True, timeout=60
    )
    assert p.returncode == 1 and b"without a token" in p.stderr


def test_cli_exec_reports_bad_options() -> None:
    p = vf_exec("--env", "NOEQUALS", "--", "true")
    assert p.returncode == 1 and b"KEY=VALUE" in p.stderr
    p = vf_exec("--timeout", "0", "--", "true")
    assert p.returncode == 1 and b"--timeout" in p.stderr


async def test_idle_sandboxes_are_reaped_by_the_service() -> None:
    """A client that goes away without stopping its sandbox leaks it for idle_timeout only."""
    import time

    runner, url = await start_server(backend="bwrap", idle_timeout=0.5)
    try:
        sb = create_sandbox("remote", url=url)
        await sb.start()
        async with aiohttp.ClientSession() as s:
            end = time.monotonic() + 15
            while time.monotonic() < end:  # bounded poll: the reaper runs every second
                live = (await (await s.get(f"{url}/v1/health")).json())["live"]
                if live == 0:
                    break
                await asyncio.sleep(0.1)
        assert live == 0
        with pytest.raises(SandboxError, match="404"):
            await sb.exec("true")
        await sb.stop()
    finally:
        await runner.cleanup()
