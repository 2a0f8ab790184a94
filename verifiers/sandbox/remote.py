"""The ``remote`` backend: sandboxes that live in a ``vf sandbox serve`` service, over HTTP.

``create_sandbox("remote", url="http://host:8765", token=...)`` (``url`` defaults to
``$VF_SANDBOX_URL``, ``token`` to ``$VF_SANDBOX_TOKEN``). Transport failures and service errors
raise :class:`SandboxError`; the program's own failures come back in the :class:`ExecResult`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from typing import TYPE_CHECKING, Any

from verifiers.errors import ConfigError, SandboxError
from verifiers.sandbox.base import (
    RawExecResult,
    Sandbox,
    SandboxLimits,
    SandboxProcess,
    StreamProcess,
)

if TYPE_CHECKING:
    import aiohttp

__all__ = ["RemoteSandbox"]


class RemoteSandbox(Sandbox):
    """A sandbox in a remote sandbox service."""

    backend = "remote"
    isolated = True

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        network: bool = False,
        url: str | None = None,
        token: str | None = None,
    ) -> None:
        super().__init__(limits, network=network)
        base = url or os.environ.get("VF_SANDBOX_URL")
        if not base:
            raise ConfigError(
                "the remote sandbox backend needs a service URL: url='http://HOST:PORT' or "
                "VF_SANDBOX_URL (start one with `vf sandbox serve`)"
            )
        self.url = base.rstrip("/")
        self._token = token or os.environ.get("VF_SANDBOX_TOKEN")
        self._session: aiohttp.ClientSession | None = None
        self._remote_id: str | None = None

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    async def _request(
        self, method: str, path: str, body: dict[str, Any] | None = None, limit_s: float = 60.0
    ) -> Any:
        import aiohttp

        assert self._session is not None
        try:
            async with self._session.request(
                method,
                f"{self.url}{path}",
                json=body,
                headers=self._headers(),
                timeout=aiohttp.ClientTimeout(total=limit_s),
            ) as resp:
                if resp.status == 204:
                    return None
                try:
                    data = await resp.json(content_type=None)
                except ValueError:
                    data = {"error": (await resp.text())[:500]}
                if resp.status >= 400:
                    message = data.get("error") if isinstance(data, dict) else str(data)
                    if resp.status == 400:
                        raise ConfigError(f"sandbox service: {message}")
                    raise SandboxError(f"sandbox service ({resp.status}): {message}")
                return data
        except (aiohttp.ClientError, TimeoutError) as e:
            raise SandboxError(f"sandbox service at {self.url} unreachable: {e!r}") from e

    async def _start(self) -> None:
        import aiohttp

        self._session = aiohttp.ClientSession()
        body = {"limits": self.limits.to_dict(), "network": self.network}
        data = await self._request("POST", "/v1/sandboxes", body, self.limits.start_timeout + 30)
        self._remote_id = str(data["id"])

    async def _stop(self) -> None:
        try:
            if self._remote_id is not None and self._session is not None:
                with contextlib.suppress(SandboxError):
                    await self._request("DELETE", f"/v1/sandboxes/{self._remote_id}", limit_s=30)
        finally:
            if self._session is not None:
                await self._session.close()

    async def _run(
        self,
        argv: list[str],
        stdin: bytes | None,
        env: dict[str, str],
        cwd: str | None,
        timeout: float,  # noqa: ASYNC109
        max_output_bytes: int,
    ) -> RawExecResult:
        body = {
            "argv": argv,
            "stdin": base64.b64encode(stdin).decode() if stdin is not None else None,
            "env": env,
            "cwd": cwd,
            "timeout": timeout,
            "max_output_bytes": max_output_bytes,
        }
        data = await self._request(
            "POST", f"/v1/sandboxes/{self._remote_id}/exec", body, timeout + 60
        )
        try:
            fields = {k: data[k] for k in RawExecResult.__dataclass_fields__ if k in data}
            fields["stdout"] = base64.b64decode(data["stdout"])
            fields["stderr"] = base64.b64decode(data["stderr"])
            return RawExecResult(**fields)
        except (KeyError, TypeError, ValueError) as e:
            raise SandboxError(f"sandbox service sent a malformed exec result: {e!r}") from e

    def _env(self, env: Any) -> dict[str, str]:
        # the service adds the sandbox's base environment
        return dict(env or {})

    async def _spawn(self, argv: list[str], env: dict[str, str], cwd: str | None) -> SandboxProcess:
        import aiohttp

        assert self._session is not None
        try:
            ws = await self._session.ws_connect(
                f"{self.url}/v1/sandboxes/{self._remote_id}/process",
                headers=self._headers(),
                max_msg_size=64 << 20,
            )
            await ws.send_json({"argv": argv, "env": env, "cwd": cwd})
        except aiohttp.ClientError as e:
            raise SandboxError(f"sandbox service at {self.url} unreachable: {e!r}") from e
        return _RemoteProcess(ws)


class _RemoteProcess(StreamProcess):
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._stdout = asyncio.StreamReader(limit=1 << 24)
        self._exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._tail = b""
        self._pump = asyncio.ensure_future(self._receive())

    async def _receive(self) -> None:
        import aiohttp

        try:
            async for msg in self._ws:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    self._stdout.feed_data(msg.data)
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    info = msg.json()
                    if info.get("op") == "exit":
                        self._tail = base64.b64decode(info.get("stderr_tail", ""))
                        if not self._exit.done():
                            self._exit.set_result(int(info["status"]))
        finally:
            self._stdout.feed_eof()
            if not self._exit.done():
                self._exit.set_exception(SandboxError("lost the connection to the process"))

    async def write(self, data: bytes) -> None:
        if self._ws.closed:
            raise BrokenPipeError("the process's connection is closed")
        await self._ws.send_bytes(data)

    async def close_stdin(self) -> None:
        if not self._ws.closed:
            await self._ws.send_json({"op": "close_stdin"})

    async def wait(self) -> int:
        self.returncode = await asyncio.shield(self._exit)
        return self.returncode

    async def kill(self) -> None:
        if not self._ws.closed and not self._exit.done():
            with contextlib.suppress(Exception):
                await self._ws.send_json({"op": "kill"})
            with contextlib.suppress(SandboxError):
                await self.wait()
        await self._ws.close()

    def stderr_tail(self) -> bytes:
        return self._tail
