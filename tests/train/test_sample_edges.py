"""Samples at the edges: overlong rollouts, logprob/token length mismatches, and the tokens a
Qwen-style chat template adds after the model's end of turn."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.train.test_samples import _state, _step
from verifiers.train.rollout_source import apply_overlong
from verifiers.train.samples import Sample, build_samples
from verifiers.types import ModelResponse, TrajectoryStep


def _sample(n: int, prompt: int = 2) -> Sample:
    return Sample(list(range(n)), [False] * prompt + [True] * (n - prompt), [-0.5] * n, reward=1.0)


@pytest.mark.parametrize("mode", ["truncate", "mask", "zero", "drop"])
def test_overlong_rollouts_are_handled_before_advantages(mode: str) -> None:
    counts: Counter[str] = Counter()
    built = [[_sample(6)], [_sample(12)], [_sample(8)]]
    rewards, kept = apply_overlong([1.0, 1.0, 0.0], built, 8, mode, counts)
    assert counts["overlong"] == 1  # 8 tokens fit; 12 do not
    if mode == "drop":
        assert rewards == [1.0, 0.0] and [len(k[0]) for k in kept] == [6, 8]
        return
    long = built[1][0]
    assert len(long) == 8 and long.is_truncated and len(long.logprobs or []) == 8
    if mode == "truncate":
        assert rewards == [1.0, 1.0, 0.0] and any(long.mask)
        assert kept[1] == [long]
    elif mode == "mask":
        # still counts in its group's advantages, but trains nothing
        assert rewards == [1.0, 1.0, 0.0] and not any(long.mask) and kept[1] == []
    else:
        assert rewards == [1.0, 0.0, 0.0] and long.reward == 0.0 and any(long.mask)
    assert not built[0][0].is_truncated and len(built[2][0]) == 8


def test_no_limit_leaves_rollouts_alone() -> None:
    built = [[_sample(50)]]
    assert apply_overlong([1.0], built, None, "drop", Counter()) == ([1.0], built)


def test_logprob_length_mismatch_is_counted_and_trained_on_policy() -> None:
    steps = [_step([1, 2, 3], [10, 11, 12], [-0.1, -0.2])]  # 3 tokens, 2 logprobs
    out = build_samples(_state(steps))
    (s,) = out.samples
    assert out.counts["logprob_length_mismatch"] == 1
    assert s.logprobs is None and s.mask == [False] * 3 + [True] * 3


@pytest.fixture(scope="module")
def qwen_tokenizer() -> Any:
    pytest.importorskip("transformers")
    from verifiers.train.tiny_qwen import build_bpe_tokenizer

    return build_bpe_tokenizer()


def _text_step(prompt_len: int, content: str) -> TrajectoryStep:
    message = {"role": "assistant", "content": content}
    return {
        "prompt_len": prompt_len,
        "completion": [message],
        "response": ModelResponse(message=message),
        "tokens": None,
        "is_truncated": False,
        "extras": {},
    }


def test_template_tokens_after_end_of_turn_are_not_trained(qwen_tokenizer: Any) -> None:
    tok = qwen_tokenizer
    prompt = [{"role": "user", "content": "What is 1 + 2?"}]
    completion = [
        {"role": "assistant", "content": "It is 3."},
        {"role": "user", "content": "Sure?"},
        {"role": "assistant", "content": "Yes."},
    ]
    state = _state(
        [_text_step(1, "It is 3."), _text_step(3, "Yes.")], prompt=prompt, completion=completion
    )
    out = build_samples(state, tokenizer=tok)
    (s,) = out.samples
    assert out.counts["retokenized"] == 2 and "split" not in out.counts
    full = tok.apply_chat_template(prompt + completion, tokenize=True)
    full = list(full["input_ids"] if hasattr(full, "keys") else full)
    assert s.token_ids == full
    trained = [t for t, m in zip(s.token_ids, s.mask, strict=True) if m]
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    # each turn: the content and <|im_end|>, never the template's newline after it
    assert tok.decode(trained) == "It is 3.<|im_end|>Yes.<|im_end|>"
    for i, t in enumerate(s.token_ids[:-1]):
        if t == im_end:
            assert not s.mask[i + 1]  # what follows the end of a turn is the template's
    assert tok.decode(s.token_ids[-1:]) == "\n" and not s.mask[-1]
