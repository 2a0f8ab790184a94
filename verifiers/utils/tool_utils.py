"""Tool helpers of the classic ``verifiers.utils.tool_utils`` module."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

from verifiers.classic.models import Tool
from verifiers.utils.tool_schema import tool_name

__all__ = [
    "VALID_TOOL_CONTENT_PART_TYPES",
    "convert_func_to_tool_def",
    "is_valid_tool_content_parts",
]

VALID_TOOL_CONTENT_PART_TYPES = frozenset({"text", "image_url"})


def is_valid_tool_content_parts(value: Any) -> bool:
    """True for a list of content parts a tool may return (``text`` and ``image_url`` parts)."""
    return isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type") in VALID_TOOL_CONTENT_PART_TYPES for p in value
    )


_SECTION = re.compile(
    r"^\s*(args|arguments|parameters|params|keyword args|returns?|yields?|raises?|examples?|"
    r"notes?|attributes)\s*:?\s*$",
    re.IGNORECASE,
)
_GOOGLE_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def _docstring_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) of a Google-, Sphinx- or NumPy-style
    docstring. The description is the text before the first section."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None  # None (summary), "params" or "other"
    current: str | None = None  # the parameter whose description continues
    entry_indent = 0
    skip = False
    for i, line in enumerate(lines):
        if skip:  # a NumPy header's underline
            skip = False
            continue
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        sphinx = _SPHINX_PARAM.match(stripped)
        header = _SECTION.match(line)
        if sphinx:
            section, current = "params", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
        elif stripped.startswith(":"):
            section, current = "other", None
        elif header and (stripped.endswith(":") or underline):
            kind = header.group(1).lower()
            section = "params" if kind.startswith(("arg", "param", "keyword")) else "other"
            current, skip, entry_indent = None, underline, -1
        elif section is None:
            summary.append(line)
        elif section == "params" and stripped:
            entry = _GOOGLE_PARAM.match(stripped)
            if entry and (entry_indent < 0 or indent <= entry_indent):
                current, entry_indent = entry.group(1).lstrip("*"), indent
                # NumPy puts the type after the colon and the description below
                params[current] = (
                    ""
                    if underline is False
                    and indent == 0
                    and (i + 1 < len(lines) and lines[i + 1][:1].isspace())
                    else entry.group(3).strip()
                )
            elif current is not None:
                params[current] = (params[current] + " " + stripped).strip()
    return "\n".join(summary).strip(), params


def _strict(schema: Any) -> Any:
    """OpenAI strict-mode form of a JSON schema: every object closed
    (``additionalProperties: false``) with all its properties required; a ``None`` default
    dropped."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if out.get("type") == "object":
        out.setdefault("additionalProperties", False)
        props = out.get("properties")
        if isinstance(props, dict):
            out["required"] = list(props)
    if "default" in out and out["default"] is None:
        del out["default"]
    return out


def convert_func_to_tool_def(func: Callable[..., Any]) -> Tool:
    """The :class:`verifiers.types.Tool` of a Python function, as 0.3.x builds it: a strict
    schema (``strict=True``; every parameter in ``required``, defaults kept as ``default``)
    titled ``<name>_args``, pydantic's schema of each parameter, descriptions from the
    docstring (Google, Sphinx or NumPy style) or from ``Annotated[..., Field(description=)]``.
    """
    import pydantic

    name = tool_name(func)
    description, param_docs = _docstring_parts(inspect.getdoc(func))
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:
        hints = {}
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(func).parameters.items():
        ann = hints.get(pname, param.annotation)
        if ann is inspect.Parameter.empty:
            ann = Any
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            ann = list[ann]  # type: ignore[valid-type]
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            ann = dict[str, ann]  # type: ignore[valid-type]
        default = ... if param.default is inspect.Parameter.empty else param.default
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            default = ...
        doc = param_docs.get(pname)
        fields[pname] = (ann, pydantic.Field(default, description=doc) if doc else default)
    model = pydantic.create_model(f"{name}_args", **fields)
    return Tool(
        name=name,
        description=description,
        parameters=_strict(model.model_json_schema()),
        strict=True,
    )


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
