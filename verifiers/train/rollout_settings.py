"""What the trainer asks of its rollouts, from its :class:`~verifiers.train.config.TrainConfig`:
the sampling arguments sent to the inference servers (pinned so that the servers' logprobs are
those the loss assumes) and the :class:`~verifiers.train.rollout_source.RolloutSourceConfig`
of its rollout source.
"""

from __future__ import annotations

import logging
from typing import Any

from verifiers.train.config import TrainConfig
from verifiers.train.rollout_source import DifficultyConfig, RolloutSourceConfig

__all__ = ["pinned_sampling_args", "rollout_source_config", "trainer_sampling_args"]

# the trainer's logger: these lines are part of what a training run says
logger = logging.getLogger("verifiers.train.trainer")


def pinned_sampling_args(temperature: float, max_tokens: int) -> dict[str, Any]:
    """Sampling arguments for a vLLM server whose logprobs the loss compares with the
    trainer's full-vocabulary softmax at ``temperature``: no truncation (top_p 1, top_k -1,
    min_p 0), no penalties, token ids and the sampled tokens' logprobs in the answer."""
    return {
        "temperature": temperature,
        "max_tokens": max_tokens,
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "logprobs": True,
        "extra_body": {
            "return_token_ids": True,
            "top_k": -1,
            "min_p": 0.0,
            "repetition_penalty": 1.0,
        },
    }


def trainer_sampling_args(config: TrainConfig) -> dict[str, Any]:
    """The sampling arguments of every rollout: the configured temperature and length for the
    in-process sampler; for servers the pinned arguments, with ``rollouts.sampling_args``
    applied over them (a warning names them: the logprobs may then disagree)."""
    r = config.rollouts
    if config.inference.backend == "local":
        return {"temperature": r.temperature, "max_tokens": r.max_tokens}
    args = pinned_sampling_args(r.temperature, r.max_tokens)
    extra = dict(r.sampling_args)
    if extra:
        logger.warning(
            "rollouts.sampling_args %s change the pinned sampling arguments: the server's "
            "logprobs may no longer match the trainer's (see the mismatch_kl metric)",
            sorted(extra),
        )
        body = {**args["extra_body"], **extra.pop("extra_body", {})}
        args.update(extra)
        for key in list(body):
            if key in extra:  # a top-level override wins over the pinned extra_body key
                body.pop(key)
        args["extra_body"] = body
    return args


def rollout_source_config(config: TrainConfig) -> RolloutSourceConfig:
    """The rollout source's settings: ``[rollouts]`` with the model name, the sampling
    arguments, the seed and the sequence length the trainer trains on."""
    r = config.rollouts
    difficulty = DifficultyConfig(**r.difficulty.model_dump()) if r.difficulty else None
    return RolloutSourceConfig(
        model=config.inference.model or config.model.name,
        rollouts_per_example=r.rollouts_per_example,
        groups_per_batch=r.groups_per_batch,
        max_in_flight=r.max_in_flight or 2 * r.groups_per_batch,
        max_off_policy_steps=r.max_off_policy_steps,
        sampling_args=trainer_sampling_args(config),
        filter_zero_variance=r.filter_zero_variance,
        difficulty=difficulty,
        on_mismatch=r.on_mismatch,
        seed=config.model.seed,
        max_seq_len=config.train.seq_len,
        overlong=r.overlong,
        sample_rollouts=config.train.sample_rollouts,
    )
