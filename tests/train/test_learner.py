"""The learner: precision, learning-rate schedule, chunked logprobs and their metrics."""

from __future__ import annotations

import logging
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from tests.train.fsdp_worker import fixed_samples
from verifiers.train.learner import Learner, lr_at
from verifiers.train.loss import chunked_token_logprobs, token_logprobs
from verifiers.train.tiny import build_tiny_model


def _changed_share(before: dict[str, torch.Tensor], model: Any) -> float:
    changed = total = 0
    for name, p in model.state_dict().items():
        changed += int((p.float() != before[name].float()).sum())
        total += p.numel()
    return changed / total


@pytest.mark.parametrize(
    ("param_dtype", "compute_dtype"),
    [
        (torch.bfloat16, torch.bfloat16),  # pure bf16: weights and AdamW state
        (torch.float32, torch.bfloat16),  # the GPU default: fp32 master weights, bf16 compute
        (torch.float32, torch.float32),
    ],
)
def test_small_lr_updates_land_in_fp32_master_weights(
    char_tokenizer: Any, param_dtype: torch.dtype, compute_dtype: torch.dtype, caplog: Any
) -> None:
    model = build_tiny_model(len(char_tokenizer), seed=0).to(param_dtype)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    learner = Learner(
        model, device=torch.device("cpu"), compute_dtype=compute_dtype, lr=1e-5, max_grad_norm=1e9
    )
    samples = fixed_samples(len(char_tokenizer))
    for step in range(10):
        learner.step(samples, step=step, seq_len=64, temperature=1.0)
    share = _changed_share(before, model)
    print(f"params {param_dtype}, compute {compute_dtype}: {share:.1%} of weights changed")
    if param_dtype == torch.bfloat16:
        # most updates of about lr = 1e-5 are below half a bf16 ulp of the weight: lost
        assert share < 0.5
    else:
        assert share > 0.95
    first = next(iter(model.parameters()))
    assert all(v.dtype == param_dtype for v in learner.optimizer.state[first].values() if v.dim())


def test_bf16_compute_runs_under_autocast_over_fp32_parameters(char_tokenizer: Any) -> None:
    model = build_tiny_model(len(char_tokenizer), seed=0)
    seen: list[torch.dtype] = []
    model.lm_head.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    learner = Learner(model, device=torch.device("cpu"), compute_dtype=torch.bfloat16, lr=1e-3)
    out = learner.step(fixed_samples(len(char_tokenizer)), step=0, seq_len=64, temperature=1.0)
    assert seen and all(d == torch.bfloat16 for d in seen)
    assert next(model.parameters()).dtype == torch.float32
    assert out["grad_norm"] > 0 and out["entropy"] > 0


def test_lr_warmup_and_schedules() -> None:
    kw: dict[str, Any] = {"lr": 1.0, "warmup_steps": 4, "total_steps": 14}
    assert [lr_at(s, schedule="constant", **kw) for s in range(5)] == [0.25, 0.5, 0.75, 1.0, 1.0]
    assert lr_at(4, schedule="linear", **kw) == 1.0
    assert lr_at(9, schedule="linear", **kw) == pytest.approx(0.5)
    assert lr_at(14, schedule="linear", **kw) == 0.0
    assert lr_at(9, schedule="cosine", **kw) == pytest.approx(0.5)
    assert lr_at(14, schedule="cosine", min_lr_ratio=0.1, **kw) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="unknown lr schedule"):
        lr_at(5, schedule="step", **kw)


def test_the_learner_sets_the_scheduled_lr_and_clips(char_tokenizer: Any) -> None:
    model = build_tiny_model(len(char_tokenizer), seed=0)
    learner = Learner(
        model, device=torch.device("cpu"), compute_dtype=torch.float32, lr=1e-2,
        warmup_steps=2, max_grad_norm=1e-3,
    )  # fmt: skip
    out = learner.step(fixed_samples(len(char_tokenizer)), step=0, seq_len=64, temperature=1.0)
    assert out["lr"] == pytest.approx(5e-3)
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(5e-3)
    assert out["grad_norm"] > 1e-3  # reported before clipping
    assert all(p.grad is None for p in model.parameters())  # cleared after the step


@pytest.mark.parametrize("chunk", [1, 5, 1024])
def test_chunked_logprobs_equal_the_full_computation(chunk: int) -> None:
    torch.manual_seed(0)
    logits = torch.randn(2, 13, 50, requires_grad=True)
    ids = torch.randint(0, 50, (2, 13))
    full = token_logprobs(logits, ids, 0.7)
    lp, entropy = chunked_token_logprobs(logits, ids, 0.7, chunk_size=chunk)
    torch.testing.assert_close(lp, full)
    probs = torch.softmax(logits[:, :-1].float() / 0.7, -1)
    torch.testing.assert_close(entropy[:, 1:], -(probs * probs.log()).sum(-1))
    (g_full,) = torch.autograd.grad(full.sum(), logits)
    (g_chunk,) = torch.autograd.grad(lp.sum(), logits)
    torch.testing.assert_close(g_chunk, g_full)


def test_mismatch_metrics_are_zero_on_policy_and_grow_with_another_distribution(
    char_tokenizer: Any, caplog: Any
) -> None:
    caplog.set_level(logging.WARNING)
    model = build_tiny_model(len(char_tokenizer), seed=0)
    learner = Learner(model, device=torch.device("cpu"), compute_dtype=torch.float32, lr=1e-9)
    samples = fixed_samples(len(char_tokenizer))
    for s in samples:  # the sampler's own logprobs: recomputed here
        s.logprobs = None
    same = learner.step(samples, step=0, seq_len=64, temperature=1.0)
    assert same["mismatch_kl"] == 0.0 and same["logprob_diff_mean"] == 0.0
    other = learner.step(fixed_samples(len(char_tokenizer)), step=1, seq_len=64, temperature=1.0)
    assert other["mismatch_kl"] > 0.1 and other["logprob_diff_mean"] > 0.1
