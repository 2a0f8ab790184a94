"""Sequence packing for prime-rl-style trainers.

Samples are packed first-fit-decreasing into rows of exactly ``seq_len`` tokens; each row is one
micro-batch. Inside a row every sample restarts its ``position_ids`` at 0, which is how packed
sequences are told apart (flash-attention varlen kernels, and Hugging Face models when no
attention mask is passed, build a block-diagonal causal mask from the position resets). The
tail of a row is padding: its own position run, ``loss_mask`` False and ``sequence_ids`` -1, so
it carries no loss.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verifiers.train.samples import Sample

if TYPE_CHECKING:
    import torch

__all__ = ["PackResult", "PackedMicroBatch", "pack_samples"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class PackedMicroBatch:
    """One packed row of ``seq_len`` tokens (lists; :meth:`tensors` for torch).

    ``old_logprobs`` is NaN on the tokens of samples whose sampling logprobs are unknown: the
    trainer substitutes its own (detached) logprobs there, i.e. treats them as on-policy.
    """

    input_ids: list[int]
    position_ids: list[int]
    loss_mask: list[bool]
    old_logprobs: list[float]
    advantages: list[float]
    sequence_ids: list[int]
    samples: list[Sample] = field(repr=False)

    @property
    def num_loss_tokens(self) -> int:
        """Tokens that carry loss (sampled by the policy)."""
        return sum(self.loss_mask)

    @property
    def num_tokens(self) -> int:
        """Real (non-padding) tokens in the row."""
        return sum(1 for s in self.sequence_ids if s >= 0)

    def tensors(self, device: Any = "cpu") -> dict[str, torch.Tensor]:
        """``[1, seq_len]`` tensors: input_ids, position_ids, loss_mask, old_logprobs,
        advantages, sequence_ids."""
        import numpy as np
        import torch

        def t(values: Sequence[Any], dtype: Any) -> torch.Tensor:
            # via numpy: several times faster than torch.tensor on Python lists
            return torch.from_numpy(np.asarray(values, dtype=dtype)).unsqueeze(0).to(device)

        return {
            "input_ids": t(self.input_ids, np.int64),
            "position_ids": t(self.position_ids, np.int64),
            "loss_mask": t(self.loss_mask, np.bool_),
            "old_logprobs": t(self.old_logprobs, np.float32),
            "advantages": t(self.advantages, np.float32),
            "sequence_ids": t(self.sequence_ids, np.int64),
        }


@dataclass(slots=True)
class PackResult:
    """The packed rows and how many samples were longer than ``seq_len`` (dropped)."""

    micro_batches: list[PackedMicroBatch]
    dropped_overlong: int


def pack_samples(samples: Sequence[Sample], seq_len: int, pad_token_id: int = 0) -> PackResult:
    """Pack ``samples`` into rows of ``seq_len`` tokens, first-fit decreasing by length.

    Samples longer than ``seq_len`` are dropped and counted (training on a cut sequence with the
    whole sequence's reward would bias the update).
    """
    if seq_len <= 0:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    fitting = [s for s in samples if 0 < len(s) <= seq_len]
    dropped = sum(1 for s in samples if len(s) > seq_len)
    if dropped:
        logger.warning("dropped %d samples longer than seq_len=%d", dropped, seq_len)
    order = sorted(fitting, key=len, reverse=True)
    bins: list[list[Sample]] = []
    free: list[int] = []
    for sample in order:
        n = len(sample)
        for i, room in enumerate(free):
            if n <= room:
                bins[i].append(sample)
                free[i] -= n
                break
        else:
            bins.append([sample])
            free.append(seq_len - n)
    return PackResult([_row(b, seq_len, pad_token_id) for b in bins], dropped)


def _row(samples: list[Sample], seq_len: int, pad_token_id: int) -> PackedMicroBatch:
    row = PackedMicroBatch([], [], [], [], [], [], samples)
    for idx, s in enumerate(samples):
        n = len(s)
        row.input_ids.extend(s.token_ids)
        row.position_ids.extend(range(n))
        row.loss_mask.extend(s.mask)
        row.old_logprobs.extend(s.logprobs if s.logprobs is not None else [math.nan] * n)
        row.advantages.extend([s.advantage] * n)
        row.sequence_ids.extend([idx] * n)
    pad = seq_len - len(row.input_ids)
    if pad:
        row.input_ids.extend([pad_token_id] * pad)
        row.position_ids.extend(range(pad))
        row.loss_mask.extend([False] * pad)
        row.old_logprobs.extend([0.0] * pad)
        row.advantages.extend([0.0] * pad)
        row.sequence_ids.extend([-1] * pad)
    return row
