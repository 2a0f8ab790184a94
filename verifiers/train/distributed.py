"""Multi-process training with torch FSDP2 (``fully_shard``) under ``torchrun``.

``torchrun --nproc-per-node N -m cli.main train CONFIG.toml`` (or ``vf train CONFIG.toml
--nproc N``, which runs that command) starts N processes; each one calls
:func:`init_distributed`, which reads torchrun's environment (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``) and joins the process group (NCCL on GPUs, gloo on the CPU). The model's
decoder layers and then the whole model are sharded with ``fully_shard``; parameters and
optimizer state stay fp32 shards, and with a bf16 compute dtype FSDP2 gathers bf16 copies for
the forward and backward and reduces gradients in fp32. Rank 0 alone runs the rollouts and
sends each batch to the others; every rank trains on its share of the packed rows.
Checkpoints and pushed weights are gathered to full tensors and written by rank 0 in Hugging
Face format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "DistInfo",
    "broadcast_object",
    "full_model_state",
    "full_optimizer_state",
    "init_distributed",
    "load_optimizer_state",
    "shard_model",
]


@dataclass(frozen=True, slots=True)
class DistInfo:
    """This process's place in the job (one process: rank 0 of 1)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device_type: str) -> DistInfo:
    """Join torchrun's process group when ``WORLD_SIZE`` > 1 (idempotent)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if not dist.is_initialized():
        backend = "nccl" if device_type == "cuda" else "gloo"
        if device_type == "cuda":
            torch.cuda.set_device(local)
        dist.init_process_group(backend=backend)
    return DistInfo(rank=rank, world_size=world, local_rank=local)


def shard_model(model: Any, compute_dtype: torch.dtype) -> Any:
    """Shard each decoder layer, then the rest, with ``fully_shard`` (in place)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = MixedPrecisionPolicy(
        param_dtype=None if compute_dtype == torch.float32 else compute_dtype,
        reduce_dtype=torch.float32,
    )
    layers = getattr(getattr(model, "model", None), "layers", None)
    for layer in layers or []:
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def broadcast_object(obj: Any, info: DistInfo) -> Any:
    """``obj`` from rank 0 on every rank (pickled; what rank 0 passes is returned there)."""
    if not info.enabled:
        return obj
    import torch.distributed as dist

    box = [obj if info.is_main else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_reduce_sum(values: list[float], info: DistInfo) -> list[float]:
    """Element-wise sums over the ranks."""
    if not info.enabled:
        return values
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t)
    return [float(x) for x in t.tolist()]


def full_model_state(model: Any, info: DistInfo) -> dict[str, Any]:
    """The whole model's state dict on the CPU (on rank 0; other ranks get ``{}``).

    A collective under FSDP: every rank must call it."""
    if not info.enabled:
        return {k: v.detach().cpu() for k, v in model.state_dict().items()}
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    state: dict[str, Any] = get_model_state_dict(model, options=opts)
    return state if info.is_main else {}


def full_optimizer_state(model: Any, optimizer: Any, info: DistInfo) -> dict[str, Any]:
    """The optimizer's state with whole (unsharded) tensors on the CPU, keyed by parameter
    name whatever the number of processes, so that a checkpoint resumes with any (rank 0;
    other ranks get ``{}``). A collective under FSDP."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_optimizer_state_dict,
    )

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    full: dict[str, Any] = get_optimizer_state_dict(model, optimizer, options=opts)
    return full if info.is_main else {}


def load_optimizer_state(model: Any, optimizer: Any, state: dict[str, Any], info: DistInfo) -> None:
    """Load what :func:`full_optimizer_state` returned (read on rank 0 under FSDP: the
    other ranks receive their shards by broadcast). A state keyed by parameter index (an
    ``optimizer.state_dict()``) loads as such in one process."""
    saved = state.get("state") or {}
    if not info.enabled and saved and all(isinstance(k, int) for k in saved):
        optimizer.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_optimizer_state_dict,
    )

    opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=info.enabled)
    set_optimizer_state_dict(model, optimizer, state, options=opts)
