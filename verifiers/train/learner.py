"""The optimisation half of the reference loop: one model, its optimizer, one step per batch.

Precision: the parameters (the master weights) and AdamW's state are kept in ``param_dtype``
(fp32 by default) and the forward and backward run in ``compute_dtype`` (bf16 by default on
GPUs) through autocast, or through FSDP2's mixed-precision policy when sharded. Pure bf16
(``param_dtype = bfloat16``) loses small updates: an AdamW step of about ``lr`` is below half
a bf16 ulp for most weights once ``lr`` is much smaller than ``2**-8`` times their size.

A step packs the samples into ``seq_len`` rows, spreads the rows over the ranks (padded with
empty rows so that every rank runs as many forward passes), accumulates gradients normalised
by the step's loss tokens over all ranks, clips the gradient norm, sets the scheduled learning
rate and applies AdamW.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from typing import Any

import torch

from verifiers.train.distributed import DistInfo, all_reduce_sum
from verifiers.train.loss import chunked_token_logprobs, masked_importance_sampling_loss
from verifiers.train.packing import PackedMicroBatch, pack_samples
from verifiers.train.samples import Sample

__all__ = ["Learner", "lr_at"]


def lr_at(
    step: int,
    *,
    lr: float,
    warmup_steps: int,
    schedule: str,
    total_steps: int,
    min_lr_ratio: float = 0.0,
) -> float:
    """The learning rate of optimizer step ``step`` (0-based): linear warmup over
    ``warmup_steps``, then ``constant``, ``linear`` or ``cosine`` decay to
    ``min_lr_ratio * lr`` at ``total_steps``."""
    if warmup_steps > 0 and step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    if schedule == "constant":
        return lr
    span = max(total_steps - warmup_steps, 1)
    progress = min(max(step - warmup_steps, 0) / span, 1.0)
    if schedule == "linear":
        factor = 1.0 - progress
    elif schedule == "cosine":
        factor = 0.5 * (1.0 + math.cos(math.pi * progress))
    else:
        raise ValueError(f"unknown lr schedule {schedule!r} (constant, linear or cosine)")
    return lr * (min_lr_ratio + (1.0 - min_lr_ratio) * factor)


class Learner:
    """Trains ``model`` (already on ``device``, in its parameter dtype, sharded when
    ``dist.enabled``) with AdamW."""

    def __init__(
        self,
        model: Any,
        *,
        device: torch.device,
        compute_dtype: torch.dtype,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        weight_decay: float = 0.0,
        max_grad_norm: float = 1.0,
        warmup_steps: int = 0,
        lr_schedule: str = "constant",
        min_lr_ratio: float = 0.0,
        total_steps: int = 1,
        ratio_low: float = 0.5,
        ratio_high: float = 5.0,
        drop_below: float = 1e-5,
        logprob_chunk: int = 1024,
        dist: DistInfo | None = None,
    ) -> None:
        self.model = model
        self.device = device
        self.compute_dtype = compute_dtype
        self.dist = dist or DistInfo()
        self.lr = lr
        self.max_grad_norm = max_grad_norm
        self.schedule = {
            "lr": lr,
            "warmup_steps": warmup_steps,
            "schedule": lr_schedule,
            "total_steps": total_steps,
            "min_lr_ratio": min_lr_ratio,
        }
        self.bounds = (ratio_low, ratio_high, drop_below)
        self.logprob_chunk = logprob_chunk
        self.optimizer = torch.optim.AdamW(
            model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay
        )

    @property
    def param_dtype(self) -> torch.dtype:
        """The parameters' (master weights') dtype."""
        dtype: torch.dtype = next(self.model.parameters()).dtype
        return dtype

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        """bf16/fp16 compute over higher-precision parameters (FSDP2 casts by itself)."""
        if self.dist.enabled or self.compute_dtype == self.param_dtype:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.compute_dtype)

    def set_lr(self, step: int) -> float:
        """Set and return the scheduled learning rate of optimizer step ``step``."""
        lr = lr_at(step, **self.schedule)  # type: ignore[arg-type]
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    def my_rows(self, rows: Sequence[PackedMicroBatch]) -> list[PackedMicroBatch | None]:
        """This rank's rows; ``None`` stands for an empty row that keeps the ranks' forward
        passes in step (FSDP gathers parameters in each one)."""
        world = self.dist.world_size
        padded: list[PackedMicroBatch | None] = list(rows)
        padded += [None] * (-len(padded) % world)
        return padded[self.dist.rank :: world]

    def step(
        self,
        samples: Sequence[Sample],
        *,
        step: int,
        seq_len: int,
        temperature: float,
        pad_token_id: int = 0,
    ) -> dict[str, Any]:
        """One optimizer step on ``samples`` (the same list on every rank)."""
        t0 = time.perf_counter()
        packed = pack_samples(samples, seq_len, pad_token_id=pad_token_id)
        pack_seconds = time.perf_counter() - t0
        rows = packed.micro_batches
        total_loss_tokens = sum(mb.num_loss_tokens for mb in rows)
        lr = self.set_lr(step)
        self.model.train()
        sums = dict.fromkeys(
            ("loss", "masked", "dropped", "ratio", "entropy", "mismatch_kl", "mismatch_abs"), 0.0
        )
        for mb in self.my_rows(rows):
            self._accumulate(mb, seq_len, pad_token_id, temperature, total_loss_tokens, sums)
        keys = list(sums)
        reduced = dict(zip(keys, all_reduce_sum([sums[k] for k in keys], self.dist), strict=True))
        grad_norm = 0.0
        if rows:
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
            full = getattr(norm, "full_tensor", None)  # a DTensor under FSDP
            grad_norm = float(full() if full is not None else norm)
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        n = total_loss_tokens
        return {
            "loss": reduced["loss"],
            "lr": lr,
            "masked_fraction": reduced["masked"] / n if n else 0.0,
            "dropped_sequences": int(reduced["dropped"]),
            "mean_ratio": reduced["ratio"] / n if n else 1.0,
            "entropy": reduced["entropy"] / n if n else 0.0,
            "mismatch_kl": reduced["mismatch_kl"] / n if n else 0.0,
            "logprob_diff_mean": reduced["mismatch_abs"] / n if n else 0.0,
            "grad_norm": grad_norm,
            "num_tokens": sum(mb.num_tokens for mb in rows),
            "num_loss_tokens": n,
            "micro_batches": len(rows),
            "dropped_overlong": packed.dropped_overlong,
            "pack_seconds": pack_seconds,
        }

    def _accumulate(
        self,
        mb: PackedMicroBatch | None,
        seq_len: int,
        pad_token_id: int,
        temperature: float,
        total_loss_tokens: int,
        sums: dict[str, float],
    ) -> None:
        if mb is None:  # an empty row: same forward, no loss tokens
            mb = PackedMicroBatch(
                [pad_token_id] * seq_len,
                list(range(seq_len)),
                [False] * seq_len,
                [0.0] * seq_len,
                [0.0] * seq_len,
                [-1] * seq_len,
                [],
            )
        t = mb.tensors(self.device)
        with self._autocast():
            # no attention mask and no cache: the model builds a block-diagonal causal mask
            # from the position restarts, so packed samples do not attend to each other
            logits = self.model(
                input_ids=t["input_ids"], position_ids=t["position_ids"], use_cache=False
            ).logits
        lp, entropy = chunked_token_logprobs(
            logits, t["input_ids"], temperature, chunk_size=self.logprob_chunk
        )
        old = t["old_logprobs"]
        old = torch.where(torch.isnan(old), lp.detach(), old)
        low, high, drop_below = self.bounds
        out = masked_importance_sampling_loss(
            lp,
            old,
            t["advantages"],
            t["loss_mask"],
            sequence_ids=t["sequence_ids"],
            low=low,
            high=high,
            drop_below=drop_below,
            normalizer=total_loss_tokens,
        )
        # gradients are averaged over the ranks: scale so the step equals one process's
        (out.loss * self.dist.world_size).backward()  # type: ignore[no-untyped-call]
        mask = t["loss_mask"]
        with torch.no_grad():
            diff = (old - lp.detach())[mask]  # sampler minus trainer
            sums["loss"] += float(out.loss.detach())
            sums["masked"] += out.num_masked_tokens
            sums["dropped"] += out.num_dropped_sequences
            sums["ratio"] += out.mean_ratio * out.num_loss_tokens
            sums["entropy"] += float(entropy[mask].sum())
            # k3 estimate of KL(sampler || trainer) per token: exp(d) - d - 1 with d = -diff
            sums["mismatch_kl"] += float((torch.exp(-diff) + diff - 1.0).sum())
            sums["mismatch_abs"] += float(diff.abs().sum())

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """Model-independent state to checkpoint (the optimizer's, gathered under FSDP)."""
        from verifiers.train.distributed import full_optimizer_state

        return {"optimizer": full_optimizer_state(self.model, self.optimizer, self.dist)}

    def load_state_dict(self, state: dict[str, Any], *, lr_overrides: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; ``lr_overrides`` (e.g. betas) replace
        the checkpoint's optimizer hyper-parameters."""
        from verifiers.train.distributed import load_optimizer_state

        load_optimizer_state(self.model, self.optimizer, state.get("optimizer", {}), self.dist)
        for group in self.optimizer.param_groups:  # the config's values, not the checkpoint's
            group.update(lr_overrides)
