"""The sandbox service behind the ``remote`` backend (``vf sandbox serve``).

An aiohttp application that owns local sandboxes (bwrap by default) and exposes them over HTTP:

==========================================  ===============================================
``GET    /v1/health``                       backend, live sandboxes
``POST   /v1/sandboxes``                    ``{"limits": {...}, "network": bool}`` -> ``{"id"}``
``POST   /v1/sandboxes/{id}/exec``          ``{"argv", "stdin" (base64), "env", "cwd", "timeout",
                                            "max_output_bytes"}`` -> the exec result (base64
                                            output)
``GET    /v1/sandboxes/{id}/process``       websocket: a long-lived process (first message
                                            ``{"argv", "env", "cwd"}``; binary frames are stdin
                                            up and stdout down; ``{"op": "close_stdin"|"kill"}``
                                            up, ``{"op": "exit", "status"}`` down)
``DELETE /v1/sandboxes/{id}``               stop it
==========================================  ===============================================

Errors are JSON ``{"error": message}``: 400 bad request, 401 bad token, 403 network refused,
404 unknown sandbox, 409 the sandbox failed. Sandboxes unused for ``idle_timeout`` seconds
are stopped, so a client that dies leaks nothing for long.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from verifiers.errors import ConfigError, SandboxError
from verifiers.sandbox.base import Sandbox, SandboxLimits, SandboxProcess
from verifiers.sandbox.pool import SandboxPool

__all__ = ["create_app", "serve", "start_server"]


@dataclass
class _Entry:
    sandbox: Sandbox
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0


class _Service:
    def __init__(
        self,
        backend: str | None,
        token: str | None,
        max_live: int,
        max_exec: int | None,
        idle_timeout: float,
        allow_network: bool,
    ) -> None:
        self.backend = backend
        self.token = token
        self.pool = SandboxPool(backend, max_live=max_live, max_exec=max_exec)
        self.idle_timeout = idle_timeout
        self.allow_network = allow_network
        self.sandboxes: dict[str, _Entry] = {}
        self.reaper: asyncio.Task[None] | None = None

    # plumbing ------------------------------------------------------------------------------

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.token is not None and request.path != "/v1/health":
            sent = request.headers.get("Authorization", "")
            if not hmac.compare_digest(sent.encode(), f"Bearer {self.token}".encode()):
                return _error(401, "missing or wrong bearer token (Authorization: Bearer ...)")
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except web.HTTPException:
            raise
        except ConfigError as e:
            return _error(400, str(e))
        except SandboxError as e:
            return _error(409, str(e))
        except (ValueError, KeyError, TypeError) as e:
            return _error(400, f"bad request: {e}")

    def entry(self, request: web.Request) -> _Entry:
        sid = request.match_info["sid"]
        entry = self.sandboxes.get(sid)
        if entry is None:
            raise web.HTTPNotFound(
                text=json.dumps({"error": f"no sandbox {sid!r} (stopped or expired)"}),
                content_type="application/json",
            )
        entry.last_used = time.monotonic()
        return entry

    async def reap(self) -> None:
        while True:
            await asyncio.sleep(max(1.0, self.idle_timeout / 4))
            now = time.monotonic()
            for sid, entry in list(self.sandboxes.items()):
                if entry.busy == 0 and now - entry.last_used > self.idle_timeout:
                    self.sandboxes.pop(sid, None)
                    await self.pool.release(entry.sandbox)

    async def on_startup(self, app: web.Application) -> None:
        self.reaper = asyncio.ensure_future(self.reap())

    async def on_cleanup(self, app: web.Application) -> None:
        if self.reaper is not None:
            self.reaper.cancel()
        self.sandboxes.clear()
        await self.pool.close()

    # handlers ------------------------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"ok": True, "backend": self.backend or "default", "live": len(self.sandboxes)}
        )

    async def create(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        limits = SandboxLimits.from_dict(body.get("limits") or {})
        network = bool(body.get("network", False))
        if network and not self.allow_network:
            return _error(403, "this sandbox service does not allow network access")
        sandbox = await self.pool.acquire(limits=limits, network=network)
        self.sandboxes[sandbox.id] = _Entry(sandbox)
        return web.json_response({"id": sandbox.id}, status=201)

    async def exec(self, request: web.Request) -> web.Response:
        entry = self.entry(request)
        body = await _json_body(request)
        argv = body["argv"]
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ConfigError("argv must be a list of strings")
        stdin = body.get("stdin")
        entry.busy += 1
        try:
            r = await entry.sandbox.exec_raw(
                argv,
                stdin=base64.b64decode(stdin) if stdin is not None else None,
                env=body.get("env"),
                cwd=body.get("cwd"),
                timeout=body.get("timeout"),
                max_output_bytes=body.get("max_output_bytes"),
            )
        finally:
            entry.busy -= 1
            entry.last_used = time.monotonic()
        out = {k: getattr(r, k) for k in r.__dataclass_fields__}
        out["stdout"] = base64.b64encode(r.stdout).decode()
        out["stderr"] = base64.b64encode(r.stderr).decode()
        return web.json_response(out)

    async def delete(self, request: web.Request) -> web.Response:
        sid = request.match_info["sid"]
        entry = self.sandboxes.pop(sid, None)
        if entry is not None:
            await self.pool.release(entry.sandbox)
        return web.Response(status=204)

    async def process(self, request: web.Request) -> web.StreamResponse:
        entry = self.entry(request)
        ws = web.WebSocketResponse(max_msg_size=64 << 20)
        await ws.prepare(request)
        first = await ws.receive_json()
        proc = await entry.sandbox.spawn(first["argv"], env=first.get("env"), cwd=first.get("cwd"))
        entry.busy += 1
        pump = asyncio.ensure_future(_pump_stdout(proc, ws))
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY:
                    await proc.write(msg.data)
                elif msg.type == WSMsgType.TEXT:
                    op = json.loads(msg.data).get("op")
                    if op == "close_stdin":
                        await proc.close_stdin()
                    elif op == "kill":
                        await proc.kill()
        except (BrokenPipeError, ConnectionError):
            pass
        finally:
            entry.busy -= 1
            entry.last_used = time.monotonic()
            await proc.kill()
            pump.cancel()
            with contextlib.suppress(BaseException):
                await pump
        return ws


async def _pump_stdout(proc: SandboxProcess, ws: web.WebSocketResponse) -> None:
    while data := await proc.read(1 << 16):
        await ws.send_bytes(data)
    status = await proc.wait()
    await ws.send_json({"op": "exit", "status": status, "stderr_tail": _b64(proc.stderr_tail())})
    await ws.close()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise ConfigError("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise ConfigError("the request body must be a JSON object")
    return body


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def create_app(
    backend: str | None = None,
    *,
    token: str | None = None,
    max_live: int = 256,
    max_exec: int | None = None,
    idle_timeout: float = 600.0,
    allow_network: bool = False,
) -> web.Application:
    """The service as an aiohttp application (mount it, or run it with :func:`serve`)."""
    service = _Service(backend, token, max_live, max_exec, idle_timeout, allow_network)
    app = web.Application(middlewares=[service.middleware], client_max_size=256 << 20)
    app.router.add_get("/v1/health", service.health)
    app.router.add_post("/v1/sandboxes", service.create)
    app.router.add_post("/v1/sandboxes/{sid}/exec", service.exec)
    app.router.add_get("/v1/sandboxes/{sid}/process", service.process)
    app.router.add_delete("/v1/sandboxes/{sid}", service.delete)
    app.on_startup.append(service.on_startup)
    app.on_cleanup.append(service.on_cleanup)
    return app


async def start_server(
    host: str = "127.0.0.1", port: int = 0, **app_options: Any
) -> tuple[web.AppRunner, str]:
    """Start the service in the running loop; returns the runner (``await runner.cleanup()``
    to stop) and its base URL."""
    # a client that disconnects cancels its handler, which kills the command it was running
    runner = web.AppRunner(create_app(**app_options), handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    server = site._server
    assert server is not None
    sockets = getattr(server, "sockets", None) or []
    bound_port = sockets[0].getsockname()[1] if sockets else port
    return runner, f"http://{host}:{bound_port}"


def serve(host: str = "127.0.0.1", port: int = 8765, **app_options: Any) -> None:
    """Run the service until SIGINT/SIGTERM (``vf sandbox serve``); prints its URL."""
    import signal

    async def main() -> None:
        runner, url = await start_server(host, port, **app_options)
        print(f"vf sandbox service on {url} (Ctrl-C to stop)", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
