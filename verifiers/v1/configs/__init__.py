"""Configuration models of the v1 API (pydantic, unknown keys rejected)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
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


# Task selection builds on Config.
from verifiers.v1.configs.select import (  # noqa: E402
    SelectCLIConfig,
    SelectConfig,
    TaskMatchConfig,
)


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
