from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from verifiers.train.loss import masked_importance_sampling_loss, token_logprobs


def _inputs(log_ratios: list[list[float]], mask: list[list[bool]]) -> tuple[torch.Tensor, ...]:
    old = torch.full((len(log_ratios), len(log_ratios[0])), -1.0)
    new = (old + torch.tensor(log_ratios)).requires_grad_(True)
    return new, old, torch.tensor(mask)


def test_on_policy_loss_is_minus_mean_advantage_over_loss_tokens() -> None:
    new, old, mask = _inputs(
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [[False, True, True], [False, False, True]]
    )
    adv = torch.tensor([1.0, -2.0])
    out = masked_importance_sampling_loss(new, old, adv, mask)
    # ratio 1 everywhere: -(1 + 1 - 2) / 3 loss tokens
    assert out.loss.item() == pytest.approx(0.0)
    assert out.num_loss_tokens == 3
    out.loss.backward()
    expected = torch.tensor([[0.0, -1 / 3, -1 / 3], [0.0, 0.0, 2 / 3]])
    assert torch.allclose(new.grad, expected)


def test_tokens_outside_bounds_are_masked_with_exactly_zero_gradient() -> None:
    lr = [[0.0, math.log(6.0), math.log(0.4), math.log(2.0), 80.0]]
    new, old, mask = _inputs(lr, [[True, True, True, True, False]])
    out = masked_importance_sampling_loss(new, old, torch.tensor([1.0]), mask, low=0.5, high=5.0)
    out.loss.backward()
    grad = new.grad[0]
    assert grad[1].item() == 0.0 and grad[2].item() == 0.0  # ratio 6 and 0.4: outside [0.5, 5]
    assert grad[4].item() == 0.0  # not a loss token (and its huge ratio leaks no NaN)
    assert grad[0].item() == pytest.approx(-1 / 4)  # d(-r*A)/dlogp = -r*A, normalised by 4
    assert grad[3].item() == pytest.approx(-2 / 4)
    assert out.num_masked_tokens == 2
    assert out.masked_fraction == pytest.approx(0.5)
    assert torch.isfinite(out.loss)


def test_bounds_are_arguments() -> None:
    new, old, mask = _inputs([[math.log(6.0)]], [[True]])
    wide = masked_importance_sampling_loss(new, old, torch.tensor([1.0]), mask, high=10.0)
    assert wide.num_masked_tokens == 0
    assert wide.loss.item() == pytest.approx(-6.0)


def test_sequence_with_a_tiny_ratio_is_dropped_entirely() -> None:
    new, old, mask = _inputs(
        [[0.0, math.log(1e-6), 0.0], [0.0, 0.0, 0.0]], [[True] * 3, [True] * 3]
    )
    out = masked_importance_sampling_loss(new, old, torch.tensor([1.0, 1.0]), mask)
    out.loss.backward()
    assert out.num_dropped_sequences == 1
    assert torch.all(new.grad[0] == 0.0)
    assert torch.all(new.grad[1] != 0.0)
    # still normalised by all 6 loss tokens
    assert out.loss.item() == pytest.approx(-3 / 6)
    # a looser threshold keeps the sequence (the 1e-6 token alone is masked by the lower bound)
    kept = masked_importance_sampling_loss(
        new.detach(), old, torch.tensor([1.0, 1.0]), mask, drop_below=1e-7
    )
    assert kept.num_dropped_sequences == 0
    assert kept.num_masked_tokens == 1


def test_packed_rows_drop_only_the_offending_sequence() -> None:
    # one row holding sequences 0 and 1 and padding (-1)
    new, old, mask = _inputs(
        [[0.0, math.log(1e-8), 0.0, 0.0, 0.0]], [[True, True, True, True, False]]
    )
    seq = torch.tensor([[0, 0, 1, 1, -1]])
    out = masked_importance_sampling_loss(
        new, old, torch.tensor([[1.0] * 5]), mask, sequence_ids=seq
    )
    out.loss.backward()
    assert out.num_dropped_sequences == 1
    assert new.grad[0, :2].abs().sum().item() == 0.0
    assert torch.all(new.grad[0, 2:4] != 0.0)
    assert new.grad[0, 4].item() == 0.0


def test_normalizer_argument_scales_for_gradient_accumulation() -> None:
    new, old, mask = _inputs([[0.0, 0.0]], [[True, True]])
    out = masked_importance_sampling_loss(new, old, torch.tensor([1.0]), mask, normalizer=8)
    assert out.loss.item() == pytest.approx(-2 / 8)


def test_invalid_bounds_are_rejected() -> None:
    new, old, mask = _inputs([[0.0]], [[True]])
    with pytest.raises(ValueError, match="low <= 1 <= high"):
        masked_importance_sampling_loss(new, old, torch.tensor([1.0]), mask, low=2.0)


def test_token_logprobs_are_shifted_and_tempered() -> None:
    torch.manual_seed(0)
    logits = torch.randn(1, 4, 7)
    ids = torch.tensor([[3, 1, 6, 2]])
    lp = token_logprobs(logits, ids, temperature=0.5)
    assert lp[0, 0].item() == 0.0
    for t in range(1, 4):
        want = torch.log_softmax(logits[0, t - 1] / 0.5, -1)[ids[0, t]]
        assert lp[0, t].item() == pytest.approx(want.item(), abs=1e-6)
