"""Pushing the trainer's new weights to the inference servers.

``inference.weight_sync`` picks how (every endpoint in ``inference.base_urls`` gets the same):

* ``"reload"`` (default): the weights are saved in Hugging Face format under
  ``OUTPUT_DIR/weights/step_N`` and a stock vLLM server reloads them in place through its
  development endpoint ``POST /collective_rpc {"method": "reload_weights", "kwargs":
  {"weights_path": DIR}}`` (start vLLM with ``VLLM_SERVER_DEV_MODE=1``; the directory must be
  readable by the server, i.e. one node or a shared file system). Then ``POST
  /reset_prefix_cache`` drops KV blocks computed with the old weights.
* ``"prime-rl"``: the same directory, announced with ``POST /update_weights {"weight_dir":
  DIR}`` as prime-rl's inference server expects.
* ``"nccl"``: vLLM's weight-transfer engine (GPUs): the tensors go from the trainer's GPU to
  the servers' GPUs over NCCL without touching the disk (:mod:`verifiers.train.nccl_sync`).
* ``"none"``: no push (the servers keep their weights; the off-policy lag grows).

A push counts only when every server has confirmed it (an HTTP 2xx answer to the request that
loads the weights): the trainer advances the policy version after :meth:`WeightSync.push`
returns, and a failure raises :class:`verifiers.InfraError` naming the server and what to do.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from verifiers.errors import InfraError
from verifiers.train.sync_protocol import NamedTensors, WeightSync, server_root

__all__ = [
    "NamedTensors",
    "PrimeRLSync",
    "ReloadSync",
    "WeightSync",
    "make_weight_sync",
    "server_root",
]

logger = logging.getLogger(__name__)


class _HTTPSync:
    """Shared by the methods that send one request per server."""

    needs_directory = True
    method = ""

    def __init__(self, base_urls: list[str], timeout: float = 600.0) -> None:
        self.servers = [server_root(u) for u in base_urls]
        self.timeout = timeout

    def setup(self) -> None:
        return None

    def close(self) -> None:
        return None

    def _post(self, server: str, path: str, body: dict[str, Any], hint: str) -> Any:
        import httpx

        try:
            r = httpx.post(server + path, json=body, timeout=self.timeout)
        except httpx.HTTPError as e:
            raise InfraError(f"could not update the weights of {server}: {e}. {hint}") from None
        if r.status_code >= 300:
            raise InfraError(
                f"{server} refused the weight update (POST {path}: HTTP {r.status_code} "
                f"{r.text[:300]!r}). {hint}"
            )
        try:
            return r.json()
        except ValueError:
            return None

    def push(self, step: int, directory: Path | None, tensors: NamedTensors | None) -> float:
        if directory is None:
            raise ValueError(f"weight_sync {self.method!r} needs the weights saved to a directory")
        started = time.perf_counter()
        for server in self.servers:
            self._push_one(server, directory.resolve())
        return time.perf_counter() - started

    def _push_one(self, server: str, directory: Path) -> None:
        raise NotImplementedError


class ReloadSync(_HTTPSync):
    """vLLM's dev-mode ``collective_rpc`` calling each worker's ``reload_weights``."""

    method = "reload"
    HINT = (
        "Start vLLM with VLLM_SERVER_DEV_MODE=1 so that POST /collective_rpc exists, and make "
        "the weights directory readable by the server (same node or a shared file system); "
        "or choose another inference.weight_sync ('prime-rl', 'nccl', 'none')."
    )

    def _push_one(self, server: str, directory: Path) -> None:
        body = {"method": "reload_weights", "kwargs": {"weights_path": str(directory)}}
        self._post(server, "/collective_rpc", body, self.HINT)
        # KV blocks cached for shared prompt prefixes were computed with the old weights
        import httpx

        try:
            httpx.post(server + "/reset_prefix_cache", timeout=self.timeout)
        except httpx.HTTPError as e:  # the weights are loaded; only the cache may be stale
            logger.warning("could not reset the prefix cache of %s: %s", server, e)


class PrimeRLSync(_HTTPSync):
    """prime-rl's inference server: ``POST /update_weights {"weight_dir": DIR}``."""

    method = "prime-rl"
    HINT = "The server must be prime-rl's inference server (it accepts weight_dir)."

    def _push_one(self, server: str, directory: Path) -> None:
        self._post(server, "/update_weights", {"weight_dir": str(directory)}, self.HINT)


class NoSync:
    """Leaves the servers' weights alone."""

    needs_directory = False

    def setup(self) -> None:
        return None

    def push(self, step: int, directory: Path | None, tensors: NamedTensors | None) -> float:
        return 0.0

    def close(self) -> None:
        return None


def make_weight_sync(method: str, base_urls: list[str], **options: Any) -> WeightSync:
    """The :class:`WeightSync` for ``inference.weight_sync``."""
    if method == "reload":
        return ReloadSync(base_urls, **options)
    if method == "prime-rl":
        return PrimeRLSync(base_urls, **options)
    if method == "none":
        return NoSync()
    if method == "nccl":
        from verifiers.train.nccl_sync import NCCLSync

        return NCCLSync(base_urls, **options)
    raise ValueError(f"unknown weight_sync {method!r} (reload, nccl, prime-rl or none)")
