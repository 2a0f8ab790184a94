"""Which of a taskset's tasks a run uses: ``Taskset.select(SelectConfig)``, the ``--select.*``
flags of the eval CLI (:class:`SelectCLIConfig`). ``include`` keeps the tasks it names,
``exclude`` drops those it names, then ``shuffle`` (under ``seed``), ``skip`` and ``limit``
pick from what is left, in that order."""

from __future__ import annotations

import re
import sys
from typing import Any

from pydantic import AliasChoices, Field, field_validator

from verifiers.v1.configs import Config

__all__ = ["IDX_RANGE", "SelectCLIConfig", "SelectConfig", "TaskMatchConfig"]

IDX_RANGE = re.compile(r"(\d*):(\d*)(?::(\d*))?")
"""An ``idx`` slice: ``start:stop`` or ``start:stop:step``, each part optional."""


def _one_idx(item: Any) -> int | str:
    if isinstance(item, bool) or not isinstance(item, (int, str)):
        raise ValueError(f"idx entry {item!r} must be an int or a 'start:stop:step' string")
    if isinstance(item, int):
        if item < 0:
            raise ValueError(f"idx {item} is negative; positions count from 0")
        return item
    text = item.strip()
    if text.isdigit():
        return int(text)
    found = IDX_RANGE.fullmatch(text)
    if found is None:
        raise ValueError(f"idx {item!r} is neither a position nor a 'start:stop:step' slice")
    start, stop, step = found.groups()
    if step and int(step) == 0:
        raise ValueError(f"idx slice {item!r} has a step of 0")
    if stop and int(start or 0) >= int(stop):
        raise ValueError(f"idx slice {item!r} names no position (stop <= start)")
    return text


class TaskMatchConfig(Config):
    """Names tasks by load position (``idx``), ``ids``, ``keys`` or ``names``; any list matching
    is a match."""

    idx: list[int | str] = Field(default_factory=list)
    ids: list[str] = Field(default_factory=list)
    keys: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)

    @field_validator("idx", mode="before")
    @classmethod
    def _parse(cls, value: Any) -> list[int | str]:
        entries = [value] if isinstance(value, (int, str)) else list(value)
        out: list[int | str] = []
        for entry in entries:
            pieces = entry.split(",") if isinstance(entry, str) else [entry]
            out.extend(_one_idx(piece) for piece in pieces)
        return out

    @property
    def empty(self) -> bool:
        return not (self.idx or self.ids or self.keys or self.names)

    def idx_ranges(self) -> list[range]:
        """Each ``idx`` entry as a range (an open end becomes ``sys.maxsize``)."""
        out: list[range] = []
        for entry in self.idx:
            if isinstance(entry, int):
                out.append(range(entry, entry + 1))
                continue
            parts = ([*entry.split(":"), ""])[:3]
            out.append(range(int(parts[0] or 0), int(parts[1] or sys.maxsize), int(parts[2] or 1)))
        return out

    @property
    def idx_tail(self) -> bool:
        """True when some entry names every position from a start on."""
        return any(r.stop == sys.maxsize and r.step == 1 for r in self.idx_ranges())

    @property
    def idx_stop(self) -> int | None:
        """One past the last matchable position, when only closed idx ranges are given."""
        if self.ids or self.keys or self.names:
            return None
        ranges = self.idx_ranges()
        if not ranges:
            return None
        last = max(r.stop for r in ranges)
        return None if last == sys.maxsize else last


class SelectConfig(Config):
    """Which tasks a run uses, applied in order: include, exclude, shuffle, skip, limit."""

    include: TaskMatchConfig = Field(default_factory=TaskMatchConfig)
    exclude: TaskMatchConfig = Field(default_factory=TaskMatchConfig)
    shuffle: bool = False
    seed: int = 0
    skip: int = Field(default=0, ge=0)
    limit: int | None = Field(default=None, ge=1)


class SelectCLIConfig(SelectConfig):
    """:class:`SelectConfig` also accepting ``n`` (limit) and ``s`` (shuffle)."""

    shuffle: bool = Field(default=False, validation_alias=AliasChoices("shuffle", "s"))
    limit: int | None = Field(default=None, ge=1, validation_alias=AliasChoices("limit", "n"))
