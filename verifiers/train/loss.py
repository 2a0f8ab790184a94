"""The reference policy loss: masked importance sampling, as pure torch functions.

Rollouts are sampled by an inference engine whose weights may lag the trainer's by a few steps
and whose numerics differ from the trainer's. Each trainable token is weighted by the
importance ratio ``exp(logp_trainer - logp_sampler)``; tokens whose ratio falls outside
``[low, high]`` carry no loss (their gradient is exactly zero), and a sequence with any ratio
below ``drop_below`` is dropped entirely (it was sampled by a policy too different from the one
being trained). The sum is normalised by the number of loss tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = [
    "LossOutput",
    "chunked_token_logprobs",
    "masked_importance_sampling_loss",
    "token_logprobs",
]


@dataclass(slots=True)
class LossOutput:
    """The loss and what it masked. Counts are Python numbers (no graph)."""

    loss: torch.Tensor
    num_loss_tokens: int
    num_masked_tokens: int
    num_dropped_sequences: int
    mean_ratio: float

    @property
    def masked_fraction(self) -> float:
        """Share of the loss tokens that the ratio bounds or a dropped sequence masked."""
        return self.num_masked_tokens / self.num_loss_tokens if self.num_loss_tokens else 0.0


def token_logprobs(
    logits: torch.Tensor, token_ids: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """Logprob of each token given the tokens before it, aligned to ``token_ids``.

    ``logits`` is ``[..., T, V]`` from a causal LM over ``token_ids`` ``[..., T]``; the result is
    ``[..., T]`` with position 0 (no prefix) set to 0. ``temperature`` divides the logits, as the
    sampler did: the logprobs of a temperature-``t`` sampler are those of ``logits / t``.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    shifted = logits[..., :-1, :].float() / temperature
    targets = token_ids[..., 1:].unsqueeze(-1)
    picked = torch.gather(shifted, -1, targets).squeeze(-1)
    lp = picked - torch.logsumexp(shifted, dim=-1)
    return torch.nn.functional.pad(lp, (1, 0), value=0.0)


def _chunk_logprobs_entropy(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 logprobs of ``targets`` and (detached) entropies for one chunk of positions."""
    scaled = logits.float() / temperature
    lse = torch.logsumexp(scaled, dim=-1, keepdim=True)
    picked = torch.gather(scaled, -1, targets.unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        logp = scaled.detach() - lse.detach()
        entropy = -(logp.exp() * logp).sum(-1)
    return picked - lse.squeeze(-1), entropy


def chunked_token_logprobs(
    logits: torch.Tensor,
    token_ids: torch.Tensor,
    temperature: float = 1.0,
    *,
    chunk_size: int = 1024,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`token_logprobs` without a full-vocabulary fp32 copy, plus per-token entropy.

    The positions are processed ``chunk_size`` at a time and each chunk's fp32 work is
    recomputed in the backward pass (activation checkpointing), so the extra memory is one
    chunk's ``chunk_size x V`` fp32 block instead of ``T x V`` (for T = 8192 and V = 151,936:
    about 0.62 GB instead of 5.0 GB for the copy and as much again for what autograd keeps).
    Returns ``(logprobs, entropy)``, both ``[..., T]`` fp32 and aligned to ``token_ids``
    (position 0 is 0); the entropy is of the temperature-scaled distribution, detached.
    """
    from torch.utils.checkpoint import checkpoint

    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    shifted = logits[..., :-1, :]
    targets = token_ids[..., 1:]
    lps: list[torch.Tensor] = []
    ents: list[torch.Tensor] = []
    for start in range(0, shifted.shape[-2], chunk_size):
        part = shifted[..., start : start + chunk_size, :]
        tgt = targets[..., start : start + chunk_size]
        if part.requires_grad:
            lp, ent = checkpoint(
                _chunk_logprobs_entropy, part, tgt, temperature, use_reentrant=False
            )
        else:
            lp, ent = _chunk_logprobs_entropy(part, tgt, temperature)
        lps.append(lp)
        ents.append(ent)
    pad = torch.nn.functional.pad
    if not lps:
        empty = torch.zeros(token_ids.shape, dtype=torch.float32, device=logits.device)
        return empty, empty.clone()
    return (
        pad(torch.cat(lps, dim=-1), (1, 0), value=0.0),
        pad(torch.cat(ents, dim=-1), (1, 0), value=0.0),
    )


def masked_importance_sampling_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    *,
    sequence_ids: torch.Tensor | None = None,
    low: float = 0.5,
    high: float = 5.0,
    drop_below: float = 1e-5,
    normalizer: int | None = None,
) -> LossOutput:
    """Masked importance-sampling policy-gradient loss.

    All tensors are ``[B, T]`` (``advantages`` may be ``[B]``). ``loss_mask`` is True on tokens
    the policy sampled. ``sequence_ids`` (``[B, T]`` ints, -1 for padding) names the sequence of
    each token when several are packed in one row; without it each row is one sequence.
    ``normalizer`` is the number of loss tokens to divide by (default: ``loss_mask.sum()``);
    pass the step's total when accumulating gradients over micro-batches.
    """
    if not (low <= 1.0 <= high):
        raise ValueError(f"need low <= 1 <= high, got [{low}, {high}]")
    mask = loss_mask.bool()
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1).expand_as(logprobs)
    log_ratio = torch.where(mask, logprobs - old_logprobs.to(logprobs.dtype), 0.0)
    with torch.no_grad():
        ratio = log_ratio.detach().exp()
        in_bounds = (ratio >= low) & (ratio <= high)
        too_low = mask & (ratio < drop_below)
        if sequence_ids is None:
            seq_dropped = too_low.any(dim=-1, keepdim=True).expand_as(mask)
            num_dropped = int(too_low.any(dim=-1).sum())
        else:
            seq_dropped, num_dropped = _dropped_by_sequence(too_low, sequence_ids)
        keep = mask & in_bounds & ~seq_dropped
        n_loss = int(mask.sum())
        mean_ratio = float(ratio[mask].mean()) if n_loss else 1.0
    # Zero the log-ratio before exp on every token that carries no loss, so that an overflowing
    # ratio cannot leak a NaN into the gradient (0 * inf) and masked tokens get exactly zero.
    safe_log_ratio = torch.where(keep, log_ratio, 0.0)
    per_token = -torch.exp(safe_log_ratio) * advantages.to(logprobs.dtype)
    total = torch.where(keep, per_token, 0.0).sum()
    denom = n_loss if normalizer is None else normalizer
    loss = total / max(denom, 1)
    return LossOutput(
        loss=loss,
        num_loss_tokens=n_loss,
        num_masked_tokens=n_loss - int(keep.sum()),
        num_dropped_sequences=num_dropped,
        mean_ratio=mean_ratio,
    )


def _dropped_by_sequence(
    too_low: torch.Tensor, sequence_ids: torch.Tensor
) -> tuple[torch.Tensor, int]:
    """Per-token "belongs to a dropped sequence" for packed rows."""
    ids = sequence_ids.long()
    valid = ids >= 0
    n_seq = int(ids.max()) + 1 if bool(valid.any()) else 0
    if n_seq == 0:
        return torch.zeros_like(too_low), 0
    # flatten (row, sequence) pairs into one index space
    flat = (torch.arange(ids.shape[0], device=ids.device).unsqueeze(-1) * n_seq + ids).where(
        valid, 0
    )
    bad = torch.zeros(ids.shape[0] * n_seq, dtype=torch.bool, device=ids.device)
    bad[flat[too_low & valid]] = True
    return bad[flat] & valid, int(bad.sum())
