"""Rollouts on a Ray cluster (the ``ray`` extra: ``pip install 'verifiers[ray]'``).

Nothing here imports Ray until a run starts. :class:`RayExecutor` runs an evaluation's groups
on workers across the cluster (``vf.evaluate_async(..., executor=RayExecutor(...))``, or
``vf-eval ... --ray ADDRESS``); :class:`RayGroupRunner` gives a trainer's
:class:`~verifiers.train.rollout_source.RolloutSource` the same workers. Each
:class:`RolloutWorker` loads the environment named by an :class:`EnvSpec` once and runs whole
groups; the resources it declares come from :class:`RayConfig`.
"""

from __future__ import annotations

from typing import Any

from verifiers.distributed.spec import ClientFactory, EnvSpec, RayConfig, oracle_client

__all__ = [
    "ClientFactory",
    "EnvSpec",
    "RayConfig",
    "RayExecutor",
    "RayGroupRunner",
    "RolloutWorker",
    "WorkerPool",
    "oracle_client",
]

_LAZY = {
    "RayExecutor": "verifiers.distributed.executor",
    "RayGroupRunner": "verifiers.distributed.group_runner",
    "RolloutWorker": "verifiers.distributed.worker",
    "WorkerPool": "verifiers.distributed.pool",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'verifiers.distributed' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
