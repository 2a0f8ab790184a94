from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from verifiers.errors import OverlongPromptError
from verifiers.train.local_client import LocalModelClient
from verifiers.train.tiny import build_tiny_model

PROMPT = [{"role": "user", "content": "Say A"}]


async def test_responses_carry_token_ids_logprobs_and_finish_reason(
    tiny_model: Any, char_tokenizer: Any
) -> None:
    client = LocalModelClient(tiny_model, char_tokenizer, seed=0)
    r = await client.get_response(
        PROMPT, "tiny", sampling_args={"max_tokens": 5, "temperature": 1.0}
    )
    assert (
        r.prompt_token_ids
        == char_tokenizer.apply_chat_template(PROMPT, add_generation_prompt=True)["input_ids"]
    )
    assert r.completion_token_ids is not None and r.completion_logprobs is not None
    assert len(r.completion_logprobs) == len(r.completion_token_ids) <= 5
    assert all(lp <= 0.0 for lp in r.completion_logprobs)
    eos = char_tokenizer.eos_token_id
    stopped = r.completion_token_ids[-1] == eos
    assert r.finish_reason == ("stop" if stopped else "length")
    text_ids = r.completion_token_ids[:-1] if stopped else r.completion_token_ids
    assert r.content == char_tokenizer.decode(text_ids, skip_special_tokens=True)
    assert r.usage.completion_tokens == len(r.completion_token_ids)


async def test_concurrent_requests_are_batched_and_greedy_is_deterministic(
    tiny_model: Any, char_tokenizer: Any
) -> None:
    client = LocalModelClient(tiny_model, char_tokenizer)
    calls = 0
    generate = client.generate

    def counting(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return generate(*args)

    client.generate = counting  # type: ignore[method-assign]
    prompts = [[{"role": "user", "content": "x" * (i + 1)}] for i in range(6)]
    greedy = {"temperature": 0, "max_tokens": 6}
    batched = await asyncio.gather(
        *(client.get_response(p, "m", sampling_args=greedy) for p in prompts)
    )
    assert calls == 1  # six concurrent rollouts, one batched generation
    for p, r in zip(prompts, batched, strict=True):
        alone = await client.get_response(p, "m", sampling_args=greedy)
        assert alone.completion_token_ids == r.completion_token_ids  # left padding changes nothing
        assert alone.completion_logprobs == pytest.approx(r.completion_logprobs, abs=1e-5)


async def test_overlong_prompt_raises_the_model_error(char_tokenizer: Any) -> None:
    model = build_tiny_model(len(char_tokenizer), max_positions=32)
    client = LocalModelClient(model, char_tokenizer)
    with pytest.raises(OverlongPromptError, match="context is 32"):
        await client.get_response([{"role": "user", "content": "y" * 40}], "m")
    # a prompt that fits gets at most the remaining context
    r = await client.get_response(
        [{"role": "user", "content": "y" * 20}], "m", sampling_args={"max_tokens": 50}
    )
    assert len(r.prompt_token_ids or []) + len(r.completion_token_ids or []) <= 32
