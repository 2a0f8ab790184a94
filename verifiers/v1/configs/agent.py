"""One agent seat's config: who plays it (harness, model, endpoint, sampling) and its caps."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    field_serializer,
    model_validator,
)

from verifiers.v1.configs import Config
from verifiers.v1.configs.client import ClientConfig
from verifiers.v1.configs.harness import HarnessConfig, WireHarnessConfig
from verifiers.v1.configs.retries import RetryConfig
from verifiers.v1.runtimes import RuntimeConfig
from verifiers.v1.types import SamplingConfig

__all__ = [
    "AgentConfig",
    "AgentTimeoutConfig",
    "TimeoutConfig",
    "WireAgentConfig",
    "agent_config_fields",
    "merge_agent_defaults",
    "resolve_agent",
]


class TimeoutConfig(Config):
    """Seconds per stage of one agent run; a stage left unset takes the task's own limit for
    it (``TaskData.timeout``), else has none."""

    setup: float | None = Field(default=None, gt=0)
    rollout: float | None = Field(default=None, gt=0)
    finalize: float | None = Field(default=None, gt=0)
    scoring: float | None = Field(default=None, gt=0)


AgentTimeoutConfig = TimeoutConfig
"""Our former name of :class:`TimeoutConfig`."""


class AgentConfig(Config):
    harness: SerializeAsAny[HarnessConfig] | None = None
    """The seat's program (None = the taskset's bundled harness, else the default one)."""
    runtime: RuntimeConfig | None = None
    """Where the seat's programs and its task's hooks run: a runtime config chosen by its
    ``type`` (``bwrap``, ``docker``; ``subprocess`` isolates nothing and must be named;
    ``--env.<seat>.runtime.type bwrap`` on a command line). None: the default, ``bwrap`` (the
    in-process ``null`` harness runs no program)."""
    model: str | None = None
    """Model id (None = the run's model)."""
    client: ClientConfig | None = None
    """Endpoint override (None = the run's)."""
    sampling: SamplingConfig | None = None
    """Sampling values merged over the run's."""
    max_turns: int | None = Field(default=None, ge=1)
    max_input_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    max_total_tokens: int | None = Field(default=None, ge=1)
    timeout: TimeoutConfig = Field(default_factory=TimeoutConfig)
    retries: RetryConfig = Field(default_factory=RetryConfig)
    network_notice: bool = True

    @field_serializer("sampling")
    def _dump_sampling(self, sampling: SamplingConfig | None) -> dict[str, Any] | None:
        """The values the seat set, an explicit None included (it clears the run's value),
        so a record read back resolves as the live config did."""
        return None if sampling is None else sampling.model_dump(exclude_unset=True)

    @model_validator(mode="before")
    @classmethod
    def _narrow_harness(cls, data: Any) -> Any:
        """A ``harness`` given as an id or a dict becomes its harness's own config type; an
        empty ``runtime`` table (older records) is no runtime."""
        if isinstance(data, dict) and data.get("runtime") == {}:
            data = {**data, "runtime": None}
        if isinstance(data, dict) and data.get("harness") is not None:
            from verifiers.v1.utils.loaders import narrow_plugin_field

            data = dict(data)
            narrow_plugin_field(data, "harness", "harness")
        return data


class WireAgentConfig(AgentConfig):
    """An agent config read back from a record: no harness is resolved, unknown keys kept."""

    model_config = ConfigDict(extra="allow")
    harness: SerializeAsAny[WireHarnessConfig] | None = None
    runtime: dict[str, Any] | None = None  # type: ignore[assignment]  # any runtime a record names

    @model_validator(mode="before")
    @classmethod
    def _narrow_harness(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("harness"), str):
            data = {**data, "harness": {"id": data["harness"]}}
        return data


def agent_config_fields(config: BaseModel) -> dict[str, AgentConfig]:
    """The seats a config declares (its ``AgentConfig`` fields), in declaration order."""
    return {name: value for name, value in config if isinstance(value, AgentConfig)}


def merge_agent_defaults(config: type[BaseModel], data: Any) -> Any:
    """Deep-merge partial seat overrides (dicts) onto each seat's declared default."""
    if not isinstance(data, dict):
        return data
    from verifiers.v1.utils.generic import merge_defaults

    out = dict(data)
    for name, field in config.model_fields.items():
        default, given = field.default, out.get(name)
        if isinstance(default, AgentConfig) and isinstance(given, dict):
            out[name] = merge_defaults(default, given)
    return out


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base``: nested tables merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_agent(
    spec: AgentConfig,
    *,
    model: str | None = None,
    client: ClientConfig | None = None,
    sampling: SamplingConfig | None = None,
    harness: HarnessConfig | None = None,
) -> AgentConfig:
    """``spec`` with what it leaves unset taken from the run: model, endpoint, harness; its
    own sampling values win over the run's (an explicit None clears the run's value). Every
    sampling field of the result is set, so a trace records the effective values."""
    base = (sampling or SamplingConfig()).model_dump()
    own = spec.sampling.model_dump(exclude_unset=True) if spec.sampling is not None else {}
    return spec.model_copy(
        update={
            "harness": spec.harness if spec.harness is not None else harness,
            "model": spec.model if spec.model is not None else model,
            "client": spec.client if spec.client is not None else client,
            "sampling": SamplingConfig.model_validate({**base, **own}),
        }
    )
