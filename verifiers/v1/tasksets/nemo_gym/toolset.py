"""A NeMo Gym resource server's tools, per rollout: listed from the session's MCP endpoint
(or the row's plain function tools) and called there, with the rollout's session."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from pydantic import Field

from verifiers.v1.mcp.toolset import SharedToolsetConfig, ToolError, Toolset, _schema
from verifiers.v1.state import State
from verifiers.v1.types import Tool

__all__ = ["NeMoGymState", "NeMoGymToolset"]


class NeMoGymState(State):
    """What a rollout's task hooks and its tools share: the resource server, the session's
    cookies, its MCP endpoint (or the row's plain tools) and the tool names offered."""

    resources_url: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    request_timeout: float = 60.0
    cookies: dict[str, str] = Field(default_factory=dict)
    mcp_url: str | None = None
    mcp_headers: dict[str, str] = Field(default_factory=dict)
    direct_tools: dict[str, dict[str, Any]] = Field(default_factory=dict)
    tool_names: list[str] = Field(default_factory=list)

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """POST ``body`` to the resource server's ``path`` within this rollout's session."""
        async with httpx.AsyncClient(
            headers=self.headers, cookies=self.cookies, timeout=self.request_timeout
        ) as client:
            return await client.post(f"{self.resources_url}/{path}", json=body)


@contextlib.asynccontextmanager
async def _session(state: NeMoGymState) -> AsyncIterator[Any]:
    try:
        from mcp import ClientSession
        from mcp.client.streamable_http import (  # type: ignore[attr-defined]
            create_mcp_http_client,
            streamable_http_client,
        )
    except ImportError as exc:  # pragma: no cover - the mcp extra
        raise ImportError("NeMo Gym's MCP tools need the mcp package: pip install mcp") from exc
    assert state.mcp_url is not None
    async with (
        create_mcp_http_client(headers=state.mcp_headers or None) as http,
        streamable_http_client(state.mcp_url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


class NeMoGymToolset(Toolset[SharedToolsetConfig, NeMoGymState]):
    """The rollout's resource-server tools under their own names: what the session's MCP
    endpoint lists, else the row's function tools (each called as ``POST /<name>``)."""

    TOOL_PREFIX = None

    def tools(self) -> list[Tool]:
        return []  # no static tools: each rollout's come from its session (tools_for)

    async def tools_for(self, state: State | None) -> list[Tool]:
        state = self._nemo(state)
        if state.mcp_url is not None:
            async with asyncio.timeout(state.request_timeout), _session(state) as session:
                listed = (await session.list_tools()).tools
            tools = [
                Tool(name=t.name, description=t.description or "", parameters=_schema(t))
                for t in listed
            ]
        else:
            tools = [
                Tool(
                    name=spec["name"],
                    description=spec.get("description") or "",
                    parameters=spec.get("parameters") or {},
                )
                for spec in state.direct_tools.values()
            ]
        state.tool_names = [t.name for t in tools]
        return tools

    async def call(self, name: str, arguments: str | dict[str, Any], state: State | None) -> str:
        nemo = self._nemo(state)
        try:
            args = json.loads(arguments or "{}") if isinstance(arguments, str) else arguments
        except json.JSONDecodeError as exc:
            raise ToolError(f"bad arguments for {name}: {exc}") from exc
        if nemo.mcp_url is not None:
            async with asyncio.timeout(nemo.request_timeout), _session(nemo) as session:
                result = await session.call_tool(name, args)
            parts = [getattr(c, "text", None) for c in getattr(result, "content", []) or []]
            return "\n".join(p for p in parts if isinstance(p, str))
        if name not in nemo.direct_tools:
            raise ToolError(f"unknown NeMo Gym tool: {name}")
        response = await nemo.post(name, args)
        return response.text

    def _nemo(self, state: State | None) -> NeMoGymState:
        if not isinstance(state, NeMoGymState):
            raise ToolError("NeMo Gym tools run within a NeMo Gym task's rollout")
        return state
