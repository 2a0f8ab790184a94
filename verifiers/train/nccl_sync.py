"""Weight push over NCCL through vLLM's weight-transfer engine (GPUs; ``weight_sync = "nccl"``).

Start every server with ``--weight-transfer-config '{"backend": "nccl"}'`` (and
``VLLM_SERVER_DEV_MODE=1``). The trainer's rank 0 and every vLLM worker form one NCCL group:
the trainer is rank 0, server ``i``'s workers follow at ``rank_offset`` 1 + the workers of the
servers before it. vLLM's trainer-side engine (``NCCLTrainerWeightTransferEngine``, in
``vllm.distributed.weight_transfer.nccl_engine``) drives the protocol through a client; here
that client fans each call out to all servers at once:

1. once: ``POST /init_weight_transfer_engine {"init_info": {"master_address", "master_port",
   "rank_offset", "world_size", "packed", ...}}`` while the trainer opens rank 0;
2. each push: ``POST /start_weight_update``, then ``POST /update_weights {"update_info":
   {"names", "dtype_names", "shapes"}}`` while the trainer broadcasts the tensors (packed
   buffers), then ``POST /finish_weight_update {"weight_version": "N"}``. The push is
   confirmed when every server has answered all three.

Every trainer rank calls :meth:`NCCLSync.push` (under FSDP each parameter is gathered with
``full_tensor()``, a collective); only rank 0 talks to the servers. The tensors travel in
``dtype`` (bf16 by default, what the servers hold) rather than the fp32 master weights. The
trainer's environment needs vLLM with CUDA. Written against vLLM 0.32's weight-transfer API;
it runs only with GPUs (``WEIGHT_SYNC=nccl bash scripts/gpu_check.sh``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from verifiers.errors import ConfigError, InfraError
from verifiers.train.sync_protocol import NamedTensors, server_root

__all__ = ["FanOutClient", "NCCLSync"]

HINT = (
    'Start every vLLM server with --weight-transfer-config \'{"backend": "nccl"}\' and '
    "VLLM_SERVER_DEV_MODE=1, reachable over NCCL from the trainer's GPU (inference.nccl_host "
    "must be an address of the trainer's node the servers can reach); or use weight_sync = "
    "'reload'."
)


class FanOutClient:
    """vLLM's weight-sync client protocol over HTTP, to several servers at once."""

    def __init__(self, servers: list[str], workers_per_server: int, timeout: float) -> None:
        self.servers = servers
        self.workers_per_server = workers_per_server
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=max(len(servers), 1))

    def _post(self, server: str, path: str, body: dict[str, Any] | None) -> None:
        import httpx

        try:
            r = httpx.post(f"{server}/{path}", json=body, timeout=self.timeout)
        except httpx.HTTPError as e:
            raise InfraError(f"NCCL weight transfer with {server} failed: {e}. {HINT}") from None
        if r.status_code >= 300:
            raise InfraError(
                f"{server} refused POST /{path} (HTTP {r.status_code} {r.text[:300]!r}). {HINT}"
            )

    def _all(self, path: str, bodies: list[dict[str, Any] | None]) -> None:
        futures = [
            self._pool.submit(self._post, s, path, b)
            for s, b in zip(self.servers, bodies, strict=True)
        ]
        for f in futures:
            f.result()

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        bodies: list[dict[str, Any] | None] = [
            {"init_info": {**init_info, "rank_offset": 1 + i * self.workers_per_server}}
            for i in range(len(self.servers))
        ]
        self._all("init_weight_transfer_engine", bodies)

    def shutdown_weight_transfer_engine(self) -> None:
        self._all("shutdown_weight_transfer_engine", [None] * len(self.servers))

    def start_weight_update(self) -> None:
        self._all("start_weight_update", [None] * len(self.servers))

    def update_weights(self, update_info: Any) -> None:
        self._all("update_weights", [{"update_info": update_info}] * len(self.servers))

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        body = {"weight_version": weight_version} if weight_version is not None else None
        self._all("finish_weight_update", [body] * len(self.servers))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _cast_source(model: Any, dtype: Any) -> Any:
    """A vLLM ``WeightSource`` over ``model``'s parameters, gathered and cast to ``dtype``."""
    from vllm.distributed.weight_transfer.base import ModuleSource, ParamMeta

    class CastSource(ModuleSource):  # type: ignore[misc]
        def metadata(self) -> list[Any]:
            return [ParamMeta(m.name, dtype, m.shape) for m in super().metadata()]

        def __iter__(self) -> Iterator[tuple[str, Any]]:
            for name, tensor in super().__iter__():
                yield name, tensor.to(dtype).contiguous()

    return CastSource(model)


class NCCLSync:
    """Pushes the model's weights from the trainer's GPU(s) to the vLLM workers' GPUs."""

    needs_directory = False
    all_ranks = True  # every trainer rank calls push (FSDP gathers are collective)

    def __init__(
        self,
        base_urls: list[str],
        *,
        model: Any,
        rank: int = 0,
        host: str = "127.0.0.1",
        port: int = 29551,
        workers_per_server: int = 1,
        dtype: str = "bfloat16",
        timeout: float = 600.0,
    ) -> None:
        self.client = FanOutClient([server_root(u) for u in base_urls], workers_per_server, timeout)
        self.model = model
        self.rank = rank
        self.host = host
        self.port = port
        self.world_size = 1 + workers_per_server * len(base_urls)
        self.dtype = dtype
        self.engine: Any = None

    def setup(self) -> None:
        """Form the NCCL group with every server's workers (once; every rank calls it)."""
        if self.engine is not None:
            return
        import torch

        try:
            from vllm.distributed.weight_transfer.nccl_engine import (
                NCCLTrainerInitInfo,
                NCCLTrainerWeightTransferEngine,
            )
        except ImportError as e:
            raise ConfigError(
                f"weight_sync = 'nccl' needs vLLM (with CUDA) in the trainer's environment ({e})"
            ) from None
        info = NCCLTrainerInitInfo(
            master_address=self.host,
            master_port=self.port,
            world_size=self.world_size,
            packed=True,
            rank=self.rank,
        )
        self.engine = NCCLTrainerWeightTransferEngine.trainer_init(
            info, client=self.client, source=_cast_source(self.model, getattr(torch, self.dtype))
        )

    def push(self, step: int, directory: Path | None, tensors: NamedTensors | None) -> float:
        started = time.perf_counter()
        self.setup()
        # start_weight_update, update_weights beside the broadcast, finish_weight_update
        self.engine.send_weights()
        return time.perf_counter() - started

    def close(self) -> None:
        if self.engine is not None:
            self.engine.shutdown()
            self.engine = None
        self.client.close()
