"""``MCPEnv``: a tool environment whose tools come from MCP servers (the ``mcp`` package).

Each server is reached over stdio (a command verifiers starts: ``command``/``args``/``env``) or
over HTTP (``url``: the streamable-HTTP transport; ``transport="sse"`` for the older SSE one).
The connections are opened when the environment is built, on a background event loop of their
own (an MCP session is bound to the loop that opened it, while rollouts run on the caller's),
and closed by :meth:`MCPEnv.close` (a ``@vf.teardown`` handler). The servers are shared by all
rollouts: use them for read-only, stateless tools.

A tool's result reaches the model as the text of its content items (one per line); a result the
server marks as an error is shown to the model like a raising Python tool.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from verifiers.decorators import teardown
from verifiers.envs.tool_env import ToolEnv
from verifiers.errors import ConfigError, InfraError, ToolCallError

__all__ = ["MCPEnv", "MCPServerConfig", "MCPServerConnection", "MCPToolWrapper"]

logger = logging.getLogger("verifiers.envs.mcp_env")

Transport = Literal["stdio", "http", "sse"]


@dataclass
class MCPServerConfig:
    """One MCP server: ``command`` (+ ``args``, ``env``) for stdio, or ``url`` for HTTP."""

    name: str
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    description: str = ""
    url: str | None = None
    transport: Transport | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.transport is None:
            self.transport = "stdio" if self.command else "http"
        if self.transport == "stdio" and not self.command:
            raise ConfigError(f"MCP server {self.name!r}: the stdio transport needs a command")
        if self.transport in ("http", "sse") and not self.url:
            raise ConfigError(
                f"MCP server {self.name!r}: give a command (stdio) or a url (http, sse)"
            )

    @classmethod
    def from_any(cls, server: MCPServerConfig | Mapping[str, Any]) -> MCPServerConfig:
        if isinstance(server, MCPServerConfig):
            return server
        if not isinstance(server, Mapping) or "name" not in server:
            raise ConfigError(
                "each MCP server is an MCPServerConfig or a dict with 'name' and 'command' "
                f"(stdio) or 'url' (http); got {server!r}"
            )
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(server) - known)
        if unknown:
            raise ConfigError(
                f"MCP server {server['name']!r}: unknown key(s) {unknown}; known: {sorted(known)}"
            )
        return cls(**dict(server))

    def where(self) -> str:
        if self.transport == "stdio":
            return " ".join([str(self.command), *(self.args or [])])
        return str(self.url)


def _mcp() -> Any:
    try:
        import mcp
    except ImportError:
        raise ConfigError(
            "MCPEnv needs the mcp package: pip install 'verifiers[mcp]' (or pip install mcp)"
        ) from None
    return mcp


class MCPServerConnection:
    """A session with one server, kept open by a task on the background loop."""

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.session: Any = None
        self.tools: dict[str, Any] = {}
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    def _client(self) -> Any:
        cfg = self.config
        if cfg.transport == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=str(cfg.command), args=list(cfg.args or []), env=cfg.env
            )
            return stdio_client(params)
        if cfg.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(str(cfg.url), headers=cfg.headers or None)
        from mcp.client import streamable_http

        if hasattr(streamable_http, "streamablehttp_client"):  # mcp 1.x
            return streamable_http.streamablehttp_client(str(cfg.url), headers=cfg.headers or None)
        # mcp 2.x: headers go on the HTTP client
        http_client = None
        if cfg.headers:
            make_client = getattr(streamable_http, "create_mcp_http_client")  # noqa: B009
            http_client = make_client(headers=dict(cfg.headers))
        return streamable_http.streamable_http_client(str(cfg.url), http_client=http_client)

    async def connect(self) -> dict[str, Any]:
        """Open the session and list the tools (runs on the background loop)."""
        self._task = asyncio.create_task(self._hold())
        await self._ready.wait()
        if self._error is not None:
            raise InfraError(
                f"could not connect to MCP server {self.config.name!r} "
                f"({self.config.transport}: {self.config.where()}): "
                f"{type(self._error).__name__}: {self._error}"
            ) from self._error
        return self.tools

    async def _hold(self) -> None:
        from mcp import ClientSession

        try:
            async with self._client() as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    self.tools = {tool.name: tool for tool in listed.tools}
                    self.session = session
                    self._ready.set()
                    await self._stop.wait()
        except BaseException as e:  # reported through connect() while connecting
            if not self._ready.is_set():
                self._error = e
            elif not isinstance(e, asyncio.CancelledError):
                logger.warning("MCP server %r closed: %s", self.config.name, e)
            if not isinstance(e, Exception):  # cancellation, interpreter exit: pass it on
                raise
        finally:
            self.session = None
            self._ready.set()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """The tool's result as text (runs on the background loop)."""
        if self.session is None:
            raise InfraError(f"MCP server {self.config.name!r} is not connected")
        result = await self.session.call_tool(name, arguments=arguments)
        parts = []
        for item in result.content or []:
            text = getattr(item, "text", None)
            parts.append(text if isinstance(text, str) else str(item))
        text = "\n".join(parts) if parts else "(no result)"
        if getattr(result, "is_error", None) or getattr(result, "isError", None):
            raise ToolCallError(text)
        return text

    async def disconnect(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout=10)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()


class MCPToolWrapper:
    """One MCP tool as the callable ``ToolEnv`` runs; it hops to the background loop."""

    def __init__(self, server_name: str, tool: Any, env: MCPEnv) -> None:
        self.server_name = server_name
        self.tool = tool
        self._env = env
        self.__name__ = tool.name
        self.__doc__ = tool.description or ""

    async def __call__(self, **kwargs: Any) -> str:
        connection = self._env.server_connections[self.server_name]
        text: str = await self._env._on_loop(connection.call_tool(self.tool.name, kwargs))
        return text

    def to_tool_def(self) -> dict[str, Any]:
        """The OpenAI function schema (the server's input schema, as given)."""
        schema = getattr(self.tool, "input_schema", None)  # mcp 2.x
        if schema is None:
            schema = getattr(self.tool, "inputSchema", None)  # mcp 1.x
        parameters = schema or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {
                "name": self.__name__,
                "description": self.__doc__ or "",
                "parameters": dict(parameters),
            },
        }


class MCPEnv(ToolEnv):
    """A :class:`~verifiers.ToolEnv` offering the tools of MCP servers.

    Args:
        mcp_servers: :class:`MCPServerConfig` objects or dicts with the same keys
            (``{"name", "command", "args", "env"}`` for stdio, ``{"name", "url"}`` for HTTP).
        max_turns: model calls per rollout (default 10).
        error_formatter: turns a failed call into the text the model sees.
        **kwargs: see :class:`~verifiers.ToolEnv` (``tools`` adds Python tools as well).
    """

    def __init__(
        self,
        mcp_servers: list[MCPServerConfig | dict[str, Any]] | None = None,
        max_turns: int = 10,
        error_formatter: Callable[[Exception], str] = lambda e: f"Error: {e}",
        connect_timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        _mcp()
        self.mcp_servers = [MCPServerConfig.from_any(s) for s in mcp_servers or []]
        names = [s.name for s in self.mcp_servers]
        if len(set(names)) != len(names):
            raise ConfigError(f"MCP server names must be unique, got {names}")
        self.server_connections: dict[str, MCPServerConnection] = {}
        self.mcp_tools: dict[str, MCPToolWrapper] = {}
        super().__init__(max_turns=max_turns, error_formatter=error_formatter, **kwargs)
        self._mcp_loop = asyncio.new_event_loop()
        self._mcp_thread = threading.Thread(
            target=self._mcp_loop.run_forever, name="verifiers-mcp", daemon=True
        )
        self._mcp_thread.start()
        try:
            future = asyncio.run_coroutine_threadsafe(self._connect_all(), self._mcp_loop)
            wrappers = future.result(timeout=connect_timeout)
        except BaseException:
            self._shutdown()
            raise
        for wrapper in wrappers:
            self.mcp_tools[wrapper.__name__] = wrapper
            self._register(wrapper, wrapper.to_tool_def())

    async def _connect_all(self) -> list[MCPToolWrapper]:
        wrappers: list[MCPToolWrapper] = []
        for config in self.mcp_servers:
            connection = MCPServerConnection(config)
            self.server_connections[config.name] = connection
            for tool in (await connection.connect()).values():
                wrappers.append(MCPToolWrapper(config.name, tool, self))
                logger.info("MCP tool %r from server %r", tool.name, config.name)
        return wrappers

    async def _on_loop(self, coro: Any) -> Any:
        """Run ``coro`` on the background loop and await it from the caller's loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._mcp_loop))

    def _shutdown(self) -> None:
        if not self._mcp_thread.is_alive():
            return

        async def disconnect_all() -> None:
            for connection in self.server_connections.values():
                await connection.disconnect()

        try:
            asyncio.run_coroutine_threadsafe(disconnect_all(), self._mcp_loop).result(timeout=15)
        finally:
            self._mcp_loop.call_soon_threadsafe(self._mcp_loop.stop)
            self._mcp_thread.join(timeout=5)
            self.server_connections.clear()
            self.mcp_tools.clear()

    @teardown
    async def teardown_mcp_servers(self) -> None:
        """Close every server connection (a stdio server process exits with it)."""
        await asyncio.to_thread(self._shutdown)


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
