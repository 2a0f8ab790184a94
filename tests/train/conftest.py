"""Shared fixtures for the trainer-adapter tests: CPU only, one thread, tiny models."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def char_tokenizer() -> Any:
    from verifiers.train.tiny import build_char_tokenizer

    return build_char_tokenizer()


@pytest.fixture()
def tiny_model(char_tokenizer: Any) -> Any:
    from verifiers.train.tiny import build_tiny_model

    return build_tiny_model(len(char_tokenizer), seed=0)
