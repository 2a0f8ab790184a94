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
from verifiers.sandbox.server import TOKEN, start_server
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
    sb = create_sandbox("remote", url=url, token=runner.app[TOKEN])
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
        sb = create_sandbox("remote", url=url, token=runner.app[TOKEN])
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


# issue 12: the service holds against its clients ---------------------------------------------

AUTH = {"Authorization": "Bearer s3cret"}


async def test_a_token_is_required_even_on_loopback_without_one_configured() -> None:
    runner, url = await start_server(backend="bwrap")
    try:
        token = runner.app[TOKEN]
        assert isinstance(token, str) and len(token) >= 24
        async with aiohttp.ClientSession() as s:
            r = await s.post(f"{url}/v1/sandboxes", json={})
            assert r.status == 401
        async with create_sandbox("remote", url=url, token=token) as sb:
            assert (await sb.exec("echo ok")).stdout == "ok\n"
    finally:
        await runner.cleanup()


def test_cli_serve_without_token_prints_the_one_it_made() -> None:
    proc = subprocess.Popen(
        [VF, "sandbox", "serve", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        assert "http://127.0.0.1:" in proc.stdout.readline().decode()
        line = proc.stdout.readline().decode()
        assert line.startswith("token (made for this run): ") and len(line.split()[-1]) >= 24
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


@pytest.mark.parametrize(
    ("limits", "named"),
    [
        ({"memory_mb": 10**6}, "memory_mb=1000000 is over this service's maximum of 8192"),
        ({"memory_mb": None}, "memory_mb cannot be unlimited here"),
        ({"disk_mb": None}, "disk_mb cannot be unlimited"),
        ({"processes": 10**5}, "maximum of 1024"),
        ({"cpu_seconds": None}, "cpu_seconds cannot be unlimited"),
        ({"timeout": 10**9}, "timeout=1000000000 is over"),
        ({"max_output_bytes": 1 << 40}, "max_output_bytes="),
    ],
)
async def test_limits_over_the_operators_maximum_are_refused(
    service: str, limits: dict[str, object], named: str
) -> None:
    async with aiohttp.ClientSession() as s:
        r = await s.post(f"{service}/v1/sandboxes", json={"limits": limits}, headers=AUTH)
        assert r.status == 400 and named in (await r.json())["error"]


@pytest.mark.parametrize("number", ["Infinity", "NaN", "-Infinity"])
async def test_non_finite_numbers_are_refused(service: str, number: str) -> None:
    async with aiohttp.ClientSession() as s:
        body = f'{{"limits": {{"timeout": {number}}}}}'.encode()
        r = await s.post(f"{service}/v1/sandboxes", data=body, headers=AUTH)
        assert r.status == 400 and number in (await r.json())["error"]
        r = await s.post(f"{service}/v1/sandboxes", json={}, headers=AUTH)
        sid = (await r.json())["id"]
        body = f'{{"argv": ["true"], "timeout": {number}}}'.encode()
        r = await s.post(f"{service}/v1/sandboxes/{sid}/exec", data=body, headers=AUTH)
        assert r.status == 400
        for key, value in (("timeout", 10**7), ("max_output_bytes", 1 << 40)):
            r = await s.post(
                f"{service}/v1/sandboxes/{sid}/exec",
                json={"argv": ["true"], key: value},
                headers=AUTH,
            )
            assert r.status == 400 and "maximum" in (await r.json())["error"]
        await s.delete(f"{service}/v1/sandboxes/{sid}", headers=AUTH)


async def test_operator_maximums_are_configurable() -> None:
    runner, url = await start_server(
        backend="bwrap", token="t", max_limits=SandboxLimits(memory_mb=256, timeout=5.0)
    )
    try:
        async with aiohttp.ClientSession() as s:
            headers = {"Authorization": "Bearer t"}
            r = await s.post(f"{url}/v1/sandboxes", json={"limits": {}}, headers=headers)
            assert r.status == 201  # left out: the default, lowered to the maximum
            r = await s.post(
                f"{url}/v1/sandboxes", json={"limits": {"memory_mb": 512}}, headers=headers
            )
            assert r.status == 400 and "maximum of 256" in (await r.json())["error"]
    finally:
        await runner.cleanup()


async def test_bad_first_websocket_message_gets_a_websocket_close(service: str) -> None:
    async with aiohttp.ClientSession() as s:
        r = await s.post(f"{service}/v1/sandboxes", json={}, headers=AUTH)
        sid = (await r.json())["id"]
        for first in ("not json", '{"argv": 5}', '{"env": {}}'):
            async with s.ws_connect(f"{service}/v1/sandboxes/{sid}/process", headers=AUTH) as ws:
                await ws.send_str(first)
                msg = await ws.receive()
                assert msg.type == aiohttp.WSMsgType.CLOSE
                assert msg.data == 1008 and "bad first message" in msg.extra
        await s.delete(f"{service}/v1/sandboxes/{sid}", headers=AUTH)
