"""Tool schemas from type hints and Google docstrings."""

from __future__ import annotations

import enum
from typing import Literal, Optional, TypedDict

import pytest
from pydantic import BaseModel

import verifiers as vf
from verifiers.utils.tool_schema import function_to_tool_schema


class Unit(enum.Enum):
    KM = "km"
    MI = "mi"


class Point(TypedDict):
    x: float
    y: float


class Filter(BaseModel):
    column: str
    value: int


def search(
    query: str,
    tags: list[str],
    mode: Literal["fast", "exact"] = "fast",
    limit: Optional[int] = None,  # noqa: UP045 - the Optional spelling is what we test
    unit: Unit = Unit.KM,
    where: Point | None = None,
    flt: Filter | None = None,
) -> str:
    """Search the corpus.

    Longer explanation that spans
    two lines.

    Args:
        query: the text to look for,
            continued on a second line
        tags: tags that must all match
        mode: matching mode
        limit: most results
        unit: distance unit
        where: a location
        flt: a filter

    Returns:
        the hits
    """
    return query


def test_schema_types_descriptions_and_required() -> None:
    fn = function_to_tool_schema(search)["function"]
    assert fn["name"] == "search"
    assert fn["description"] == "Search the corpus. Longer explanation that spans two lines."
    params = fn["parameters"]
    assert params["required"] == ["query", "tags"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["query"] == {
        "type": "string",
        "description": "the text to look for, continued on a second line",
    }
    assert props["tags"]["type"] == "array" and props["tags"]["items"] == {"type": "string"}
    assert props["mode"]["enum"] == ["fast", "exact"] and props["mode"]["default"] == "fast"
    assert props["limit"]["type"] == ["integer", "null"]
    assert props["unit"]["enum"] == ["km", "mi"]
    assert props["where"]["anyOf"][0]["properties"]["x"] == {"type": "number"}
    assert "column" in props["flt"]["anyOf"][0]["properties"]


def test_skipped_arguments_are_hidden() -> None:
    props = function_to_tool_schema(search, skip=["tags"])["function"]["parameters"]
    assert "tags" not in props["properties"] and props["required"] == ["query"]


def test_unsupported_type_is_a_clear_error() -> None:
    def bad(x: complex) -> None:
        """Bad."""

    with pytest.raises(vf.ConfigError, match=r"bad\(x\)"):
        function_to_tool_schema(bad)
