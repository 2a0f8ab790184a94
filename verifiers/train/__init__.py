"""The trainer adapter: token-exact samples, an async off-policy rollout source, the masked
importance-sampling loss, packers, a TRL ``GRPOTrainer`` adapter and a reference loop.

Names load lazily: ``verifiers.train`` itself imports neither torch nor transformers, and the
torch-free parts (:class:`Sample`, :class:`RolloutSource`, the packer) work without them.
Install the rest with ``pip install 'verifiers[train]'``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Sample": "verifiers.train.samples",
    "SampleBuild": "verifiers.train.samples",
    "build_samples": "verifiers.train.samples",
    "RolloutSource": "verifiers.train.rollout_source",
    "RolloutSourceConfig": "verifiers.train.rollout_source",
    "DifficultyConfig": "verifiers.train.rollout_source",
    "Batch": "verifiers.train.rollout_source",
    "group_mean_advantages": "verifiers.train.rollout_source",
    "pack_samples": "verifiers.train.packing",
    "PackedMicroBatch": "verifiers.train.packing",
    "PackResult": "verifiers.train.packing",
    "masked_importance_sampling_loss": "verifiers.train.loss",
    "LossOutput": "verifiers.train.loss",
    "token_logprobs": "verifiers.train.loss",
    "chunked_token_logprobs": "verifiers.train.loss",
    "Learner": "verifiers.train.learner",
    "make_weight_sync": "verifiers.train.weight_sync",
    "pinned_sampling_args": "verifiers.train.trainer",
    "VLLMServer": "verifiers.train.vllm_launch",
    "write_tiny_qwen": "verifiers.train.tiny_qwen",
    "LocalModelClient": "verifiers.train.local_client",
    "build_char_tokenizer": "verifiers.train.tiny",
    "build_tiny_model": "verifiers.train.tiny",
    "letter_environment": "verifiers.train.tiny",
    "TRLAdapter": "verifiers.train.trl_adapter",
    "TrainConfig": "verifiers.train.config",
    "load_train_config": "verifiers.train.config",
    "Trainer": "verifiers.train.trainer",
}

__all__ = [
    "Batch",
    "DifficultyConfig",
    "Learner",
    "LocalModelClient",
    "LossOutput",
    "PackResult",
    "PackedMicroBatch",
    "RolloutSource",
    "RolloutSourceConfig",
    "Sample",
    "SampleBuild",
    "TRLAdapter",
    "TrainConfig",
    "Trainer",
    "VLLMServer",
    "build_char_tokenizer",
    "build_samples",
    "build_tiny_model",
    "chunked_token_logprobs",
    "group_mean_advantages",
    "letter_environment",
    "load_train_config",
    "make_weight_sync",
    "masked_importance_sampling_loss",
    "pack_samples",
    "pinned_sampling_args",
    "token_logprobs",
    "write_tiny_qwen",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'verifiers.train' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from verifiers.train.config import TrainConfig, load_train_config
    from verifiers.train.learner import Learner
    from verifiers.train.local_client import LocalModelClient
    from verifiers.train.loss import (
        LossOutput,
        chunked_token_logprobs,
        masked_importance_sampling_loss,
        token_logprobs,
    )
    from verifiers.train.packing import PackedMicroBatch, PackResult, pack_samples
    from verifiers.train.rollout_source import (
        Batch,
        DifficultyConfig,
        RolloutSource,
        RolloutSourceConfig,
        group_mean_advantages,
    )
    from verifiers.train.samples import Sample, SampleBuild, build_samples
    from verifiers.train.tiny import build_char_tokenizer, build_tiny_model, letter_environment
    from verifiers.train.tiny_qwen import write_tiny_qwen
    from verifiers.train.trainer import Trainer, pinned_sampling_args
    from verifiers.train.trl_adapter import TRLAdapter
    from verifiers.train.vllm_launch import VLLMServer
    from verifiers.train.weight_sync import make_weight_sync
