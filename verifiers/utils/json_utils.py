"""JSON encoding of the values rollout records hold (pydantic models, dates, paths, usage)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

from verifiers.types import Usage

__all__ = ["is_json_serializable", "make_serializable"]


def make_serializable(
    value: object,
) -> str | int | float | bool | list[Any] | dict[str, Any] | None:
    """``default=`` for ``json.dumps``/``orjson.dumps``: pydantic models as dicts, dates as ISO
    text, paths as POSIX text, exceptions as their repr, mappings as dicts, anything else as
    ``str``."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        out: dict[str, Any] = dump(exclude_none=True)
        return out
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, BaseException):
        return repr(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Usage):
        return value.as_dict()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def is_json_serializable(value: object) -> bool:
    """True for JSON values (and what :func:`make_serializable` turns into one faithfully:
    pydantic models, dates, paths, exceptions)."""
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(is_json_serializable(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and is_json_serializable(v) for k, v in value.items())
    return hasattr(value, "model_dump") or isinstance(value, datetime | date | Path | BaseException)
