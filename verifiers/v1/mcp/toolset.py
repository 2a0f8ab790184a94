"""Toolsets: a task's tools, written as ``@vf.tool`` methods of a :class:`Toolset`.

A task offers toolsets through its ``toolsets(config)`` classmethod. In a rollout the toolset's
tools are advertised to the model as ``<prefix>_<tool>`` and run in this process by the
harness, with ``self.state`` bound to the rollout's state (the trace's typed ``State``), so a
reward reads what the tools changed. The same class is an MCP server: :meth:`Toolset.run`
serves its tools over stdio (or streamable HTTP) with the ``mcp`` package (the ``mcp`` extra),
and :class:`MCPToolset` brings any MCP server's tools into a rollout.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import re
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from typing_extensions import TypeVar as TypeVarD

from verifiers.v1.state import State
from verifiers.v1.types import Tool

__all__ = [
    "MCPToolset",
    "SharedToolsetConfig",
    "ToolError",
    "Toolset",
    "ToolsetConfig",
    "rollout_tools",
    "tool",
    "toolsets_of",
]

F = TypeVar("F", bound=Callable[..., Any])
ConfigT = TypeVarD("ConfigT", bound="ToolsetConfig", default="ToolsetConfig")
StateT = TypeVarD("StateT", bound=State, default=State)

_call_state: contextvars.ContextVar[State | None] = contextvars.ContextVar(
    "vf_toolset_state", default=None
)


class ToolError(Exception):
    """A tool call that cannot run (unknown tool, bad arguments); its message goes back to the
    model as the tool result."""


class ToolsetConfig(BaseModel):
    """A toolset's config. ``colocated``, ``runtime`` and ``url`` are accepted for configs
    written for upstream; toolsets run in the environment's process here."""

    model_config = ConfigDict(extra="forbid")
    colocated: bool = True
    runtime: dict[str, Any] | None = None
    url: str | None = None


class SharedToolsetConfig(ToolsetConfig):
    """The config of a toolset shared by every rollout of a worker (a taskset's
    ``toolsets``): one instance serves them all, each rollout's ``self.state`` its own."""


@overload
def tool(fn: F) -> F: ...


@overload
def tool(*, name: str | None = None) -> Callable[[F], F]: ...


def tool(fn: Any = None, *, name: str | None = None) -> Any:
    """Mark a toolset method as a tool (``name`` overrides the method's name)."""

    def mark(f: F) -> F:
        f._vf_tool = name or f.__name__  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


def _doc(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The docstring's description and its Google-style ``Args:`` entries."""
    text = inspect.cleandoc(fn.__doc__ or "")
    head, _, rest = text.partition("\nArgs:")
    args: dict[str, str] = {}
    for line in rest.splitlines():
        found = re.match(r"\s+(\w+)(?:\s*\([^)]*\))?:\s*(.*)", line)
        if found:
            args[found.group(1)] = found.group(2).strip()
        elif args and line.strip() and not re.match(r"\S", line):
            last = next(reversed(args))
            args[last] += " " + line.strip()
        elif line.strip() and re.match(r"\S", line):
            break
    return head.strip(), args


class _Spec:
    """One tool: its advertised name, schema, argument model and bound method."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name = name
        self.fn = fn
        description, arg_docs = _doc(fn)
        hints = typing.get_type_hints(fn)
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            annotation = hints.get(pname, Any)
            default = ... if param.default is param.empty else param.default
            fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
        self.model: type[BaseModel] = create_model(  # type: ignore[call-overload]
            f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self.tool = Tool(name=name, description=description, parameters=schema)


class Toolset(Generic[ConfigT, StateT]):
    """Tools as ``@vf.tool`` methods. ``TOOL_PREFIX`` names them ``<prefix>_<tool>`` (empty:
    the snake-cased class name without ``Toolset``; None: no prefix)."""

    TOOL_PREFIX: ClassVar[str | None] = ""

    def __init__(self, config: ConfigT | None = None) -> None:
        self.config: ConfigT = config if config is not None else self._config_type()()  # type: ignore[assignment]
        self._inert: State = self._state_type()()
        self._specs: dict[str, _Spec] | None = None

    @classmethod
    def _type_arg(cls, base: type) -> type | None:
        for klass in cls.__mro__:
            for orig in getattr(klass, "__orig_bases__", ()):
                for arg in typing.get_args(orig):
                    if isinstance(arg, type) and issubclass(arg, base):
                        return arg
        return None

    @classmethod
    def _config_type(cls) -> type[ToolsetConfig]:
        return cls._type_arg(ToolsetConfig) or ToolsetConfig

    @classmethod
    def _state_type(cls) -> type[State]:
        return cls._type_arg(State) or State

    @property
    def state(self) -> StateT:
        """The calling rollout's state (a fresh one outside a rollout, e.g. over MCP)."""
        current = _call_state.get()
        return current if current is not None else self._inert  # type: ignore[return-value]

    @property
    def prefix(self) -> str:
        if self.TOOL_PREFIX is None:
            return ""
        stem = self.TOOL_PREFIX or type(self).__name__.removesuffix("Toolset")
        return self.TOOL_PREFIX or re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()

    def _table(self) -> dict[str, _Spec]:
        if self._specs is None:
            specs: dict[str, _Spec] = {}
            for attr in dir(type(self)):
                member = getattr(type(self), attr, None)
                if not callable(member) or not hasattr(member, "_vf_tool"):
                    continue
                base = str(member._vf_tool)
                name = f"{self.prefix}_{base}" if self.prefix else base
                specs[name] = _Spec(name, getattr(self, attr))
            self._specs = specs
        return self._specs

    def tools(self) -> list[Tool]:
        """The tools as the model sees them."""
        return [spec.tool for spec in self._table().values()]

    def bare_names(self) -> dict[str, str]:
        """Advertised name -> the method's tool name (for serving without the prefix)."""
        cut = len(self.prefix) + 1 if self.prefix else 0
        return {name: name[cut:] for name in self._table()}

    def has(self, name: str) -> bool:
        return name in self._table()

    async def tools_for(self, state: State | None) -> list[Tool]:
        """The tools offered to one rollout (``state`` its state): :meth:`tools` unless a
        toolset's tools depend on the rollout (a session it opened in setup)."""
        return self.tools()

    async def call(self, name: str, arguments: str | dict[str, Any], state: State | None) -> str:
        """Run tool ``name`` with ``arguments`` (JSON text or a dict), ``self.state`` bound to
        ``state``; the result as text (JSON for non-strings). Raises :class:`ToolError` for an
        unknown tool or arguments that do not fit its signature."""
        spec = self._table().get(name)
        if spec is None:
            raise ToolError(f"no tool {name!r}; tools: {sorted(self._table())}")
        try:
            raw = json.loads(arguments or "{}") if isinstance(arguments, str) else arguments
            args = spec.model.model_validate(raw)
        except (json.JSONDecodeError, ValidationError) as exc:
            raise ToolError(f"bad arguments for {name}: {exc}") from exc
        token = _call_state.set(state)
        try:
            result = spec.fn(**{k: getattr(args, k) for k in type(args).model_fields})
            if inspect.isawaitable(result):
                result = await result
        finally:
            _call_state.reset(token)
        if isinstance(result, str):
            return result
        if isinstance(result, BaseModel):
            return result.model_dump_json()
        return json.dumps(result, default=str)

    # MCP -------------------------------------------------------------------------------------

    def mcp_server(self) -> Any:
        """This toolset as an MCP server object of the ``mcp`` package (tools prefixed)."""
        import importlib

        server_cls: Any = None
        for module, attr in (
            ("mcp.server.mcpserver", "MCPServer"),
            ("mcp.server.fastmcp", "FastMCP"),
        ):
            try:  # mcp 2, else mcp 1
                server_cls = getattr(importlib.import_module(module), attr)
                break
            except (ImportError, AttributeError):
                continue
        if server_cls is None:
            raise ImportError(
                "serving a toolset over MCP needs the mcp package: pip install 'verifiers[mcp]'"
            )
        server = server_cls(name=self.prefix or type(self).__name__)
        for name, spec in self._table().items():
            server.add_tool(
                _mcp_callable(self, name, spec), name=name, description=spec.tool.description
            )
        return server

    @classmethod
    def run(cls, transport: str = "stdio", **kwargs: Any) -> None:
        """Serve a default-configured instance over MCP (``stdio`` or ``streamable-http``)."""
        cls().mcp_server().run(transport, **kwargs)


def _mcp_callable(toolset: Toolset[Any, Any], name: str, spec: _Spec) -> Callable[..., Any]:
    async def call(**kwargs: Any) -> str:
        return await toolset.call(name, kwargs, None)

    params = [
        inspect.Parameter(
            pname,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if field.is_required() else field.default,
            annotation=field.annotation,
        )
        for pname, field in spec.model.model_fields.items()
    ]
    call.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    call.__name__ = name
    call.__doc__ = spec.tool.description
    return call


class MCPToolset:
    """The tools of an MCP server reached over stdio (``command``) or streamable HTTP (``url``),
    offered to the model like a :class:`Toolset`'s. Open it (``async with``) for the rollouts."""

    def __init__(
        self,
        *,
        command: list[str] | None = None,
        url: str | None = None,
        env: dict[str, str] | None = None,
        prefix: str = "",
    ) -> None:
        if (command is None) == (url is None):
            raise ValueError("give an MCP server's `command` (stdio) or its `url`, not both")
        self.command, self.url, self.env, self.prefix = command, url, env, prefix
        self._session: Any = None
        self._stack: Any = None
        self._tools: list[Tool] = []

    async def __aenter__(self) -> MCPToolset:
        import contextlib

        try:
            from mcp import ClientSession
        except ImportError as exc:
            raise ImportError(
                "MCPToolset needs the mcp package: pip install 'verifiers[mcp]'"
            ) from exc
        self._stack = contextlib.AsyncExitStack()
        try:
            if self.command is not None:
                from mcp.client.stdio import StdioServerParameters, stdio_client

                params = StdioServerParameters(
                    command=self.command[0], args=self.command[1:], env=self.env
                )
                read, write = await self._stack.enter_async_context(stdio_client(params))
            else:
                from mcp.client.streamable_http import streamable_http_client

                url = str(self.url)
                streams = await self._stack.enter_async_context(streamable_http_client(url))
                read, write = streams[0], streams[1]
            self._session = await self._stack.enter_async_context(ClientSession(read, write))
            await self._session.initialize()
            listed = await self._session.list_tools()
        except BaseException:
            await self._stack.aclose()
            raise
        self._tools = [
            Tool(
                name=self._name(t.name),
                description=t.description or "",
                parameters=_schema(t),
            )
            for t in listed.tools
        ]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()
        self._session = self._stack = None

    def _name(self, name: str) -> str:
        return f"{self.prefix}_{name}" if self.prefix else name

    def tools(self) -> list[Tool]:
        return list(self._tools)

    def has(self, name: str) -> bool:
        return any(t.name == name for t in self._tools)

    async def call(self, name: str, arguments: str | dict[str, Any], state: State | None) -> str:
        if self._session is None:
            raise ToolError("the MCP toolset is not open; use `async with MCPToolset(...)`")
        bare = name[len(self.prefix) + 1 :] if self.prefix else name
        try:
            raw = json.loads(arguments or "{}") if isinstance(arguments, str) else arguments
        except json.JSONDecodeError as exc:
            raise ToolError(f"bad arguments for {name}: {exc}") from exc
        result = await self._session.call_tool(bare, raw)
        parts = [getattr(c, "text", "") for c in getattr(result, "content", []) or []]
        text = "\n".join(p for p in parts if p)
        if getattr(result, "is_error", None) or getattr(result, "isError", None):
            raise ToolError(text or f"the MCP tool {bare} failed")
        return text


def _schema(listed: Any) -> dict[str, Any]:
    """An MCP tool's input schema (``input_schema`` in mcp 2, ``inputSchema`` in mcp 1)."""
    raw = getattr(listed, "input_schema", None) or getattr(listed, "inputSchema", None) or {}
    schema = dict(raw)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


async def rollout_tools(
    toolsets: list[Any], state: State | None
) -> tuple[list[Tool], dict[str, Any]]:
    """The tools ``toolsets`` offer one rollout and which toolset owns each name (the first
    that offers it)."""
    tools: list[Tool] = []
    owners: dict[str, Any] = {}
    for toolset in toolsets:
        listing = getattr(toolset, "tools_for", None)
        offered = await listing(state) if listing is not None else toolset.tools()
        for one in offered:
            tools.append(one)
            owners.setdefault(one.name, toolset)
    return tools, owners


def toolsets_of(task: Any) -> list[Any]:
    """The toolsets a task offers: its class's ``toolsets(config)``, if it has one, then its
    taskset's shared ones (``Taskset.shared_toolsets``)."""
    factory = getattr(type(task), "toolsets", None)
    own = [] if factory is None else list(factory(task.config))
    return own + list(getattr(task, "_vf_shared_toolsets", None) or [])
