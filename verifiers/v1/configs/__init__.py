"""Configuration models of the v1 API (pydantic, unknown keys rejected)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    field_validator,
    model_validator,
)

__all__ = [
    "AgentConfig",
    "ClientConfig",
    "Config",
    "DecoratedFunctionConfig",
    "EnvConfig",
    "EvalClientConfig",
    "HarnessConfig",
    "JudgeConfig",
    "RetryConfig",
    "RetryRule",
    "RewardFunctionConfig",
    "SelectCLIConfig",
    "SelectConfig",
    "SharedEnvConfig",
    "SharedTasksetConfig",
    "TaskConfig",
    "TaskMatchConfig",
    "TasksetConfig",
    "WireHarnessConfig",
]

_SLICE = re.compile(r"(\d*):(\d*)(?::(\d*))?")


class Config(BaseModel):
    """Base of every v1 config: a typo in a key is an error, not a silent default."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _default_union_tags(cls, data: Any) -> Any:
        """A nested config of a tagged union given without its tag (``client = {base_url =
        ...}``) takes the tag of the field's default (``client``'s is ``eval``), as upstream's
        configs read it; with no default to take it from, the tag stays required."""
        if not isinstance(data, dict):
            return data
        filled: dict[str, Any] | None = None
        for name, field in cls.model_fields.items():
            tag = field.discriminator
            value = data.get(name)
            if not isinstance(tag, str) or not isinstance(value, dict) or tag in value:
                continue
            default = getattr(field.get_default(call_default_factory=True), tag, None)
            if isinstance(default, str):
                filled = filled if filled is not None else dict(data)
                filled[name] = {tag: default, **value}
        return data if filled is None else filled


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
    found = _SLICE.fullmatch(text)
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


class DecoratedFunctionConfig(Config):
    """A function plugged in by config: ``fn`` is ``"path/or/module:name"``."""

    fn: str | None = None
    priority: int | None = None


class RewardFunctionConfig(DecoratedFunctionConfig):
    weight: float | None = None


# The judge config builds on Config (a task plugs judges).
from verifiers.v1.configs.judge import Judges, check_judges, resolve_judges  # noqa: E402


class TaskConfig(Config):
    """Per-task behaviour overrides: plugged stop conditions, metrics, rewards and judges
    (judge plugins by ``id``, run after the task's rewards)."""

    stops: dict[str, DecoratedFunctionConfig] = Field(default_factory=dict)
    metrics: dict[str, DecoratedFunctionConfig] = Field(default_factory=dict)
    rewards: dict[str, RewardFunctionConfig] = Field(default_factory=dict)
    judges: Judges = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _resolve_judges(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("judges"):
            data = {**data, "judges": resolve_judges(data["judges"])}
        return data

    @model_validator(mode="after")
    def _check_judges(self) -> TaskConfig:
        check_judges(self.judges)
        return self


class SharedTasksetConfig(Config):
    """The knobs every taskset has: ``system_prompt`` is a file whose text replaces every
    task's, ``task`` configures each task."""

    system_prompt: Path | None = None
    task: SerializeAsAny[TaskConfig] = Field(default_factory=TaskConfig)


class TasksetConfig(SharedTasksetConfig):
    """A taskset's config; ``id`` names the installed taskset module (``--env.taskset.id``)."""

    id: str = ""

    @property
    def name(self) -> str:
        return self.id


# The seat, harness, client and env configs build on the ones above.
from verifiers.v1.configs.agent import AgentConfig  # noqa: E402
from verifiers.v1.configs.client import ClientConfig, EvalClientConfig  # noqa: E402
from verifiers.v1.configs.env import EnvConfig, SharedEnvConfig  # noqa: E402
from verifiers.v1.configs.harness import HarnessConfig, WireHarnessConfig  # noqa: E402
from verifiers.v1.configs.judge import JudgeConfig  # noqa: E402
from verifiers.v1.configs.retries import RetryConfig, RetryRule  # noqa: E402
