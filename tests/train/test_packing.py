from __future__ import annotations

import math

import pytest

from verifiers.train.packing import pack_samples
from verifiers.train.samples import Sample


def _sample(n: int, k: int, adv: float = 1.0, logprobs: bool = True) -> Sample:
    """n tokens, the last k trainable."""
    return Sample(
        token_ids=list(range(10, 10 + n)),
        mask=[False] * (n - k) + [True] * k,
        logprobs=[0.0] * (n - k) + [-0.5] * k if logprobs else None,
        reward=1.0,
        advantage=adv,
    )


def test_first_fit_decreasing_fills_rows_of_fixed_length() -> None:
    lengths = [7, 5, 4, 3, 3, 2]  # 24 tokens, FFD into 10: [7,3], [5,4], [3,2]
    result = pack_samples([_sample(n, 1) for n in lengths], seq_len=10)
    assert [[len(s) for s in mb.samples] for mb in result.micro_batches] == [[7, 3], [5, 4], [3, 2]]
    for mb in result.micro_batches:
        assert len(mb.input_ids) == len(mb.position_ids) == len(mb.loss_mask) == 10
        assert len(mb.old_logprobs) == len(mb.advantages) == len(mb.sequence_ids) == 10
    assert sum(mb.num_tokens for mb in result.micro_batches) == sum(lengths)


def test_positions_restart_per_sample_and_padding_carries_no_loss() -> None:
    result = pack_samples(
        [_sample(4, 2, adv=0.5), _sample(3, 3, adv=-1.0)], seq_len=9, pad_token_id=0
    )
    (mb,) = result.micro_batches
    assert mb.position_ids == [0, 1, 2, 3, 0, 1, 2, 0, 1]
    assert mb.sequence_ids == [0, 0, 0, 0, 1, 1, 1, -1, -1]
    assert mb.loss_mask == [False, False, True, True, True, True, True, False, False]
    assert mb.advantages[:7] == [0.5] * 4 + [-1.0] * 3
    assert mb.input_ids[7:] == [0, 0] and mb.old_logprobs[7:] == [0.0, 0.0]
    assert mb.num_loss_tokens == 5


def test_overlong_samples_are_dropped_and_counted() -> None:
    result = pack_samples([_sample(12, 2), _sample(5, 2)], seq_len=10)
    assert result.dropped_overlong == 1
    assert [len(s) for mb in result.micro_batches for s in mb.samples] == [5]


def test_unknown_logprobs_are_nan_and_tensors_have_row_shape() -> None:
    pytest.importorskip("torch")
    (mb,) = pack_samples([_sample(3, 2, logprobs=False)], seq_len=4).micro_batches
    assert all(math.isnan(x) for x in mb.old_logprobs[:3])
    t = mb.tensors()
    assert t["input_ids"].shape == (1, 4)
    assert t["loss_mask"].dtype.is_floating_point is False
    assert t["sequence_ids"].tolist() == [[0, 0, 0, -1]]


def test_seq_len_must_be_positive() -> None:
    with pytest.raises(ValueError, match="seq_len"):
        pack_samples([], seq_len=0)
