"""An env's config, the run's ``[env]`` block: the seed taskset, each seat as an
``AgentConfig`` field with a default instance, and the env-level knobs."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import Field, SerializeAsAny, model_validator

from verifiers.v1.configs import Config, SharedTasksetConfig, TasksetConfig
from verifiers.v1.configs.agent import AgentConfig, agent_config_fields, merge_agent_defaults
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.configs.retries import RetryConfig

__all__ = [
    "EnvConfig",
    "EnvTimeoutConfig",
    "SharedEnvConfig",
    "TimeoutConfig",
    "default_agent_harness",
]


class TimeoutConfig(Config):
    """Seconds for the env's own ``run()`` and ``finalize()`` (None = no limit)."""

    episode: float | None = Field(default=None, gt=0)
    finalize: float | None = Field(default=None, gt=0)


EnvTimeoutConfig = TimeoutConfig
"""Our former name of :class:`TimeoutConfig`."""


class SharedEnvConfig(Config):
    """The knobs every env has."""

    taskset: SharedTasksetConfig = Field(default_factory=SharedTasksetConfig)
    timeout: TimeoutConfig = Field(default_factory=TimeoutConfig)
    retries: RetryConfig = Field(default_factory=RetryConfig)
    """Whole-episode retries (a retried episode reruns from the start)."""
    max_concurrent_agents: int | None = Field(default=1, ge=1)
    """How many of one episode's agent runs may be active at once (None = no limit)."""
    interception: dict[str, Any] = Field(default_factory=dict)
    """How program harnesses reach the model (read by those harnesses)."""


def _mentions_agent_config(annotation: Any) -> bool:
    if isinstance(annotation, type):
        return issubclass(annotation, AgentConfig)
    return any(_mentions_agent_config(arg) for arg in typing.get_args(annotation))


class EnvConfig(SharedEnvConfig):
    """One subclass per ``Env`` class (``Env[MyConfig]``); a seat is a field holding an
    ``AgentConfig`` default instance, named after the seat."""

    id: str = ""
    """Which Env runs: empty = the taskset module's own, else ``SingleAgentEnv``."""
    taskset: SerializeAsAny[TasksetConfig] = Field(default_factory=TasksetConfig)

    @property
    def env_id(self) -> str:
        """The taskset id, prefixed by a paired env id (``best-of-n+gsm8k``)."""
        if self.taskset.id and self.id:
            return f"{self.id}+{self.taskset.id}"
        return self.taskset.id or self.id

    def agent_harnesses(self) -> dict[str, HarnessConfig]:
        """Each seat's harness: its own pin, else the taskset's default."""
        from verifiers.v1.utils.loaders import default_harness_config

        default = default_harness_config(self.taskset.id)
        return {
            name: cfg.harness if cfg.harness is not None else default
            for name, cfg in agent_config_fields(self).items()
        }

    @model_validator(mode="before")
    @classmethod
    def _prepare(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "harness" in data and "harness" not in cls.model_fields:
            raise ValueError(
                "a harness belongs to a seat: --env.agent.harness.* on the single-agent env, "
                "--env.<seat>.harness.* on a multi-agent one (TOML: [env.agent.harness])"
            )
        data = merge_agent_defaults(cls, data)
        if data.get("taskset") is not None:
            from verifiers.v1.utils.loaders import narrow_plugin_field

            data = dict(data)
            narrow_plugin_field(data, "taskset", "taskset")
        return data

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for name, info in cls.model_fields.items():
            is_seat = isinstance(info.default, AgentConfig)
            if not is_seat and not _mentions_agent_config(info.annotation):
                continue
            if is_seat and name in EnvConfig.model_fields:
                raise TypeError(
                    f"{cls.__name__}.{name}: a seat cannot reuse the EnvConfig field name "
                    f"{name!r}; pick another seat name"
                )
            if not is_seat:
                raise TypeError(
                    f"{cls.__name__}.{name}: declare the seat with a default instance "
                    f"(`{name}: vf.AgentConfig = vf.AgentConfig()`); the instance is the "
                    "seat's default and its field name the seat's name"
                )


def default_agent_harness(taskset_id: str) -> HarnessConfig:
    """What an unpinned seat runs on ``taskset_id``: the taskset's bundled harness when it
    ships one, else this package's default (``null``)."""
    from verifiers.v1.utils.loaders import default_harness_config

    return default_harness_config(taskset_id)
