"""What a distributed run needs to know, in plain picklable data (no Ray import here).

- :class:`EnvSpec`: how a worker loads its environment (an environment id or a package
  directory, and the arguments for ``load_environment``), once per worker;
- :class:`RayConfig`: where the cluster is and what each worker declares (CPUs, memory, the
  custom ``sandbox`` resource), how many workers, how many replacements a run may start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifiers.errors import ConfigError

if TYPE_CHECKING:
    from verifiers.clients.base import Client
    from verifiers.envs.environment import Environment

__all__ = ["ClientFactory", "EnvSpec", "RayConfig", "oracle_client"]

#: A picklable callable that builds, on the worker, the client (or replica pool) it talks to.
ClientFactory = Callable[[], Any]


def oracle_client() -> Client:
    """The built-in oracle (the default client factory for ``model="oracle"``)."""
    from verifiers.clients.oracle import OracleClient

    return OracleClient()


@dataclass(frozen=True, slots=True)
class EnvSpec:
    """An environment a worker can load by itself: an installed id (``NAME``,
    ``OWNER/NAME@VERSION``) or a package directory (absolute path, so that every node of the
    cluster that shares the file system finds it), and the ``load_environment`` arguments."""

    source: str
    args: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, source: str | Path, args: Mapping[str, Any] | None = None) -> EnvSpec:
        """A spec for ``source``; a directory becomes its absolute path."""
        text = str(source)
        if Path(text).is_dir():
            text = str(Path(text).resolve())
        return cls(text, dict(args or {}))

    def load(self) -> Environment:
        """Load the environment (on the worker)."""
        from verifiers.loading import load_environment, load_environment_from_directory

        if Path(self.source).is_dir():
            return load_environment_from_directory(self.source, **dict(self.args))
        return load_environment(self.source, **dict(self.args))


@dataclass(frozen=True, slots=True)
class RayConfig:
    """Where the cluster is and how its workers are placed.

    ``address``: ``"local"`` starts a throwaway single-machine cluster with this machine's
    CPUs (shut down when the run ends); ``"auto"`` or ``"HOST:PORT"`` connects to a running
    cluster (``ray start --head``), which is left running. ``num_workers``: rollout workers
    (default: the cluster's CPUs divided by ``num_cpus``). Each worker declares ``num_cpus``,
    ``memory`` (bytes, ``None``: not declared) and ``sandbox`` units of the custom ``sandbox``
    resource (``0``: not declared; give nodes ``--resources '{"sandbox": N}'`` to cap the
    sandbox workers per node). ``max_replacements``: workers started in place of dead ones
    before the run fails (default: twice ``num_workers``). ``env_vars``: set in each worker's
    process (e.g. the API key variable the client reads). ``spread``: place the workers
    on as many nodes as possible. ``start_timeout_s``: how long the run waits for every
    worker to load its environment before going on with those that have, and how long it
    waits for a replacement when no worker is left (every node gone) before it fails.
    """

    address: str = "local"
    num_workers: int | None = None
    num_cpus: float = 1.0
    memory: int | None = None
    sandbox: float = 0.0
    max_replacements: int | None = None
    env_vars: Mapping[str, str] = field(default_factory=dict)
    spread: bool = True
    start_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not self.address:
            raise ConfigError("the Ray address is empty: use 'local', 'auto' or HOST:PORT")
        if self.num_workers is not None and self.num_workers < 1:
            raise ConfigError(f"num_workers must be >= 1, got {self.num_workers}")
        if self.num_cpus < 0 or self.sandbox < 0 or (self.memory is not None and self.memory < 1):
            raise ConfigError("num_cpus and sandbox must be >= 0 and memory >= 1 byte")

    def actor_options(self) -> dict[str, Any]:
        """The resources each worker declares, as ``ActorClass.options(...)`` arguments."""
        options: dict[str, Any] = {"num_cpus": self.num_cpus, "max_restarts": 0}
        if self.memory is not None:
            options["memory"] = self.memory
        if self.sandbox > 0:
            options["resources"] = {"sandbox": self.sandbox}
        if self.spread:
            options["scheduling_strategy"] = "SPREAD"
        if self.env_vars:
            options["runtime_env"] = {"env_vars": dict(self.env_vars)}
        return options
