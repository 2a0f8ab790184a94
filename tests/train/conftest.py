"""Shared fixtures for the trainer-adapter tests: CPU only, one thread, tiny models.

Only the tests that need torch and transformers skip without them (through these fixtures or
their own module-level ``importorskip``); the torch-free parts (samples, packing, the rollout
source) are tested everywhere."""

from __future__ import annotations

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
