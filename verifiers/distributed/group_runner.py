"""Ray workers for a trainer: a :class:`~verifiers.train.rollout_source.RolloutSource`
runs its groups on the cluster by taking a :class:`RayGroupRunner` as its environment::

    runner = RayGroupRunner(EnvSpec.of("code"), RayConfig(address="auto"), make_client)
    source = RolloutSource(runner, clients=[placeholder], config=...)
    ...
    await source.close(); await runner.close()

The workers are the evaluation's (:class:`~verifiers.distributed.worker.RolloutWorker`), each
holding the environment loaded once and the client ``client_factory`` builds on it (an
endpoint pool there does its own replica round-robin; the client the source passes is not
sent). A group runs whole on one worker; when its worker dies it runs again on another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from verifiers.distributed.pool import Connection, WorkerPool, connect
from verifiers.distributed.spec import ClientFactory, EnvSpec, RayConfig, oracle_client
from verifiers.types import SamplingArgs, State

__all__ = ["RayGroupRunner"]


class RayGroupRunner:
    """``run_group`` on Ray workers (the :class:`GroupRunner` a ``RolloutSource`` needs)."""

    def __init__(
        self,
        env: EnvSpec | str,
        config: RayConfig | None = None,
        client_factory: ClientFactory = oracle_client,
    ) -> None:
        self.env_spec = env if isinstance(env, EnvSpec) else EnvSpec.of(env)
        self.config = config or RayConfig()
        self.client_factory = client_factory
        self.pool: WorkerPool | None = None
        self._connection: Connection | None = None
        self._lock = asyncio.Lock()
        self._rows: list[Mapping[str, Any]] | None = None

    def get_rows(self, split: str = "train") -> list[Mapping[str, Any]]:
        """The environment's rows, from a copy loaded in the driver (once)."""
        if self._rows is None:
            from verifiers.train.rollout_source import env_rows

            env = self.env_spec.load()
            self._rows = list(env.get_rows(split)) if split != "train" else env_rows(env)
        return self._rows

    async def start(self) -> WorkerPool:
        """Connect and start the workers (done by the first ``run_group`` otherwise)."""
        async with self._lock:
            if self.pool is None:
                self._connection = connect(self.config.address)
                pool = WorkerPool(self.config, self.env_spec, self.client_factory)
                await pool.start()
                self.pool = pool
            return self.pool

    async def run_group(
        self,
        input: Mapping[str, Any],
        client: Any,
        model: str,
        n: int,
        sampling_args: SamplingArgs | None = None,
    ) -> list[State]:
        """``n`` rollouts of ``input`` scored together on one worker, as states."""
        pool = self.pool or await self.start()
        states: list[State] = await pool.call(
            "run_group", dict(input), n, model, dict(sampling_args or {})
        )
        return states

    def summary(self) -> dict[str, Any]:
        """Workers, replacements, re-runs and groups per node so far."""
        return self.pool.stats.as_dict() if self.pool is not None else {}

    async def close(self) -> None:
        """End the workers and disconnect (a local cluster is shut down)."""
        if self.pool is not None:
            await self.pool.close()
            self.pool = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
