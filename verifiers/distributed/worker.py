"""The rollout worker: one process of the cluster holding one loaded environment.

:class:`RolloutWorker` is a plain class; :func:`worker_actor_class` makes it a Ray actor
(imported only when a distributed run starts). A worker loads its environment and builds its
client once, then runs whole example groups (a group never splits across workers), so the
sandboxes of a group run on the worker's own node. It answers with JSON-safe records (an
evaluation) or picklable states (a trainer), plus its node id for the driver's bookkeeping.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.distributed.spec import ClientFactory, EnvSpec
from verifiers.types import State

__all__ = ["RolloutWorker", "picklable_state", "worker_actor_class"]


class RolloutWorker:
    """Holds one environment and one client; runs groups of rollouts of one example."""

    def __init__(self, env_spec: EnvSpec, client_factory: ClientFactory) -> None:
        self.env = env_spec.load()
        self.client = client_factory()
        self.node_id = _node_id()
        self.groups = 0

    def info(self) -> dict[str, Any]:
        """Where this worker runs (node id, host, pid) and how many groups it ran."""
        return {
            "node_id": self.node_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "groups": self.groups,
        }

    async def run_job(
        self,
        row: Mapping[str, Any],
        indices: Sequence[int],
        model: str,
        sampling_args: Mapping[str, Any],
        state_columns: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The rollouts ``indices`` of ``row``: scored together when the rubric scores
        groups, else each on its own. Returns ``{"records": [...], "node_id": ...}``."""
        from verifiers.results import state_to_record

        states = await self._run(row, indices, model, sampling_args)
        self.groups += 1
        return {
            "records": [state_to_record(s, state_columns) for s in states],
            "node_id": self.node_id,
        }

    async def run_group(
        self, row: Mapping[str, Any], n: int, model: str, sampling_args: Mapping[str, Any]
    ) -> list[State]:
        """``n`` rollouts of ``row`` scored together, as picklable states (for trainers)."""
        states = await self.env.run_group(row, self._client(), model, n, dict(sampling_args))
        self.groups += 1
        return [picklable_state(s) for s in states]

    async def close(self) -> None:
        await self.env.close()
        close = getattr(self.client, "close", None)
        if close is not None:
            await close()

    async def _run(
        self,
        row: Mapping[str, Any],
        indices: Sequence[int],
        model: str,
        sampling_args: Mapping[str, Any],
    ) -> list[Any]:
        env, client, sampling = self.env, self._client(), dict(sampling_args)
        if env.has_group_rewards:
            states = await env.run_group(row, client, model, len(indices), sampling)
            for state, index in zip(states, indices, strict=True):
                state["rollout_index"] = index
            return list(states)
        return list(
            await asyncio.gather(
                *(env.run_rollout(row, client, model, sampling, rollout_index=i) for i in indices)
            )
        )

    def _client(self) -> Any:
        from verifiers.clients.base import as_client

        if hasattr(self.client, "for_group"):
            return as_client(self.client.for_group())
        return self.client


def picklable_state(state: Mapping[str, Any]) -> State:
    """The entries of ``state`` that survive pickling (clients, sandboxes and locks do not)."""
    out = State()
    for key, value in state.items():
        try:
            pickle.dumps(value)
        except Exception:
            continue
        out[key] = value
    return out


def _node_id() -> str | None:
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # not inside a Ray worker
        return None


def worker_actor_class() -> Any:
    """:class:`RolloutWorker` as a Ray actor class (imports Ray)."""
    import ray

    return ray.remote(RolloutWorker)
