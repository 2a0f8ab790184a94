"""Toolsets (``@vf.tool`` methods, served over MCP too) and MCP servers' tools in rollouts."""

from verifiers.v1.mcp.toolset import (
    MCPToolset,
    SharedToolsetConfig,
    ToolError,
    Toolset,
    ToolsetConfig,
    tool,
    toolsets_of,
)

__all__ = [
    "MCPToolset",
    "SharedToolsetConfig",
    "ToolError",
    "Toolset",
    "ToolsetConfig",
    "tool",
    "toolsets_of",
]
