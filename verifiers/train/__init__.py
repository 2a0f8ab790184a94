"""The trainer adapter: token-exact samples, an async off-policy rollout source, the masked
importance-sampling loss, packers, a TRL ``GRPOTrainer`` adapter and a reference loop.

Names load lazily: ``verifiers.train`` itself imports neither torch nor transformers, and the
torch-free parts (:class:`Sample`, :class:`RolloutSource`, the packer) work without them.
Install the rest with ``pip install 'verifiers[train]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._lazy import lazy_exports

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
    "pinned_sampling_args": "verifiers.train.rollout_settings",
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

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from verifiers.train.config import TrainConfig as TrainConfig
    from verifiers.train.config import load_train_config as load_train_config
    from verifiers.train.learner import Learner as Learner
    from verifiers.train.local_client import LocalModelClient as LocalModelClient
    from verifiers.train.loss import LossOutput as LossOutput
    from verifiers.train.loss import chunked_token_logprobs as chunked_token_logprobs
    from verifiers.train.loss import (
        masked_importance_sampling_loss as masked_importance_sampling_loss,
    )
    from verifiers.train.loss import token_logprobs as token_logprobs
    from verifiers.train.packing import PackedMicroBatch as PackedMicroBatch
    from verifiers.train.packing import PackResult as PackResult
    from verifiers.train.packing import pack_samples as pack_samples
    from verifiers.train.rollout_settings import pinned_sampling_args as pinned_sampling_args
    from verifiers.train.rollout_source import Batch as Batch
    from verifiers.train.rollout_source import DifficultyConfig as DifficultyConfig
    from verifiers.train.rollout_source import RolloutSource as RolloutSource
    from verifiers.train.rollout_source import RolloutSourceConfig as RolloutSourceConfig
    from verifiers.train.rollout_source import group_mean_advantages as group_mean_advantages
    from verifiers.train.samples import Sample as Sample
    from verifiers.train.samples import SampleBuild as SampleBuild
    from verifiers.train.samples import build_samples as build_samples
    from verifiers.train.tiny import build_char_tokenizer as build_char_tokenizer
    from verifiers.train.tiny import build_tiny_model as build_tiny_model
    from verifiers.train.tiny import letter_environment as letter_environment
    from verifiers.train.tiny_qwen import write_tiny_qwen as write_tiny_qwen
    from verifiers.train.trainer import Trainer as Trainer
    from verifiers.train.trl_adapter import TRLAdapter as TRLAdapter
    from verifiers.train.vllm_launch import VLLMServer as VLLMServer
    from verifiers.train.weight_sync import make_weight_sync as make_weight_sync
