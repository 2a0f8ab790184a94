"""OpenAI function-tool schemas from plain Python functions.

The schema comes from the signature's type hints and the Google-style docstring: the summary
line becomes the description, ``Args:`` entries describe the parameters. Supported annotations:
``str``, ``int``, ``float``, ``bool``, ``None``, ``list[T]``, ``tuple[T, ...]``, ``dict[str, T]``,
``Literal[...]``, ``Optional[T]`` / ``T | None``, unions, ``Enum`` subclasses, ``TypedDict`` and
pydantic models. Parameters with defaults are optional; without, required.

Schemas are *strict* in the OpenAI sense (``additionalProperties: false``) so the model cannot
invent arguments; optional parameters stay out of ``required``.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, cast

from verifiers.errors import ConfigError

__all__ = ["as_openai_tool", "function_to_tool_schema", "tool_name"]

_PRIMITIVES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
}


def tool_name(func: Callable[..., Any]) -> str:
    """The name a tool is called by: the function's ``__name__`` (or its class name)."""
    name = getattr(func, "__name__", None)
    if name is None:
        inner = getattr(func, "func", None)  # functools.partial
        name = getattr(inner, "__name__", None) or type(func).__name__
    return str(name)


def _type_schema(tp: Any, where: str) -> dict[str, Any]:
    if tp in _PRIMITIVES:
        return dict(_PRIMITIVES[tp])
    if tp is inspect.Parameter.empty:
        return {}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        schema = _type_schema(args[0], where)
        for meta in args[1:]:
            if isinstance(meta, str):
                schema.setdefault("description", meta)
        return schema
    if origin is typing.Literal:
        values = list(args)
        kinds = {type(v) for v in values}
        schema = {"enum": values}
        if len(kinds) == 1 and (k := kinds.pop()) in _PRIMITIVES:
            schema.update(_PRIMITIVES[k])
        return schema
    if origin in (typing.Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        subs = [_type_schema(a, where) for a in non_null]
        if len(non_null) < len(args):
            subs.append({"type": "null"})
        if all(set(s) == {"type"} for s in subs):
            return {"type": [s["type"] for s in subs]}
        return {"anyOf": subs}
    if origin in (list, set, frozenset, typing.Sequence, typing.Iterable) or tp in (list, set):
        array: dict[str, Any] = {"type": "array"}
        if args:
            array["items"] = _type_schema(args[0], where)
        return array
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0], where)}
        return {
            "type": "array",
            "prefixItems": [_type_schema(a, where) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin is dict or tp is dict:
        obj: dict[str, Any] = {"type": "object"}
        if len(args) == 2:
            obj["additionalProperties"] = _type_schema(args[1], where)
        return obj
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if isinstance(tp, type) and typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        required = sorted(getattr(tp, "__required_keys__", set(hints)))
        return {
            "type": "object",
            "properties": {k: _type_schema(v, f"{where}.{k}") for k, v in hints.items()},
            "required": required,
            "additionalProperties": False,
        }
    model_json_schema = getattr(tp, "model_json_schema", None)
    if callable(model_json_schema):  # pydantic model
        return dict(model_json_schema())
    raise ConfigError(
        f"cannot build a tool schema for {where}: unsupported type {tp!r}. "
        "Use str/int/float/bool, list[...], dict[str, ...], Literal[...], Optional[...], "
        "an Enum, a TypedDict or a pydantic model."
    )


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_SECTION = re.compile(r"^\s*(Returns|Return|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary (text before the first section) and per-argument descriptions."""
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            section, current, arg_indent = "args", None, None
            continue
        if _SECTION.match(line):
            section, current = "other", None
            continue
        if section is None:
            summary.append(line)
        elif section == "args" and line.strip():
            indent = len(line) - len(line.lstrip())
            m = _ARG_LINE.match(line)
            if m and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = m.group(1).lstrip("*")
                params[current] = m.group(3).strip()
            elif current is not None:
                params[current] = f"{params[current]} {line.strip()}".strip()
    text = "\n".join(summary).strip()
    return re.sub(r"\s*\n\s*", " ", text), params


def function_to_tool_schema(
    func: Callable[..., Any], *, skip: typing.Iterable[str] = ()
) -> dict[str, Any]:
    """The OpenAI ``{"type": "function", "function": {...}}`` schema of ``func``.

    ``skip`` names parameters hidden from the model (injected by the environment instead).
    """
    name = tool_name(func)
    target = func
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"tool {name!r}: cannot read its signature ({e})") from e
    call = getattr(target, "__call__", None)  # noqa: B004 - callable objects
    hint_source = target if inspect.isroutine(target) or call is None else call
    try:
        hints = typing.get_type_hints(hint_source, include_extras=True)
    except Exception:
        hints = {}
    summary, arg_docs = _parse_docstring(inspect.getdoc(target) or "")
    skipped = set(skip)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in sig.parameters.items():
        if pname in skipped or pname in ("self", "cls"):
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        schema = _type_schema(hints.get(pname, param.annotation), f"{name}({pname})")
        if arg_docs.get(pname):
            schema["description"] = arg_docs[pname]
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        elif _json_safe(param.default):
            schema["default"] = param.default
        properties[pname] = schema
    function: dict[str, Any] = {
        "name": name,
        "description": summary or name,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }
    return {"type": "function", "function": function}


def _json_safe(value: Any) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(_json_safe(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_safe(v) for k, v in value.items())
    return False


def as_openai_tool(tool: Any) -> dict[str, Any]:
    """A tool definition as an OpenAI function-tool schema: accepts that schema, a classic
    ``vf.Tool`` or the flat 0.3.x mapping (``name``, ``description``, ``parameters``, optional
    ``strict``)."""
    to_openai = getattr(tool, "to_openai", None)
    if callable(to_openai):
        return cast(dict[str, Any], to_openai())
    if isinstance(tool, Mapping):
        if isinstance(tool.get("function"), Mapping):
            return {"type": "function", **tool, "function": dict(tool["function"])}
        if "name" in tool:
            fn: dict[str, Any] = {
                "name": tool["name"],
                "description": tool.get("description") or "",
                "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
            }
            if tool.get("strict") is not None:
                fn["strict"] = tool["strict"]
            return {"type": "function", "function": fn}
    raise ConfigError(
        "a tool definition must be a vf.Tool, a {'name', 'description', 'parameters'} mapping "
        f"or an OpenAI function-tool schema, not {type(tool).__name__}: {tool!r:.120}"
    )
