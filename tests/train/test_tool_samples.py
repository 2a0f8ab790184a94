"""Samples from a real multi-turn tool environment: the trainable mask is exactly the model's
tokens, whether the token ids come from the server or from re-tokenizing the transcript."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import verifiers as vf
from verifiers.clients.base import Client
from verifiers.train.samples import build_samples
from verifiers.types import Messages, MessageType, ModelResponse, SamplingArgs


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


class TemplateServer(Client):
    """Behaves like vLLM's chat endpoint over the char tokenizer: renders the prompt with the
    chat template and returns the token ids the scripted assistant message renders to."""

    def __init__(self, tokenizer: Any, return_tokens: bool) -> None:
        self.tok = tokenizer
        self.return_tokens = return_tokens

    def _ids(self, messages: Messages, gen: bool) -> list[int]:
        return list(self.tok.apply_chat_template(messages, add_generation_prompt=gen)["input_ids"])

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        assert isinstance(prompt, list) and tools and tools[0]["function"]["name"] == "add"
        if prompt[-1]["role"] == "user":
            args = json.dumps({"a": 1, "b": 2})
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": args},
            }
            message: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": f"it is {prompt[-1]['content']}"}
        prompt_ids = self._ids(prompt, True)
        completion_ids = self._ids([*prompt, message], False)[len(prompt_ids) :]
        return ModelResponse(
            message=message,
            finish_reason="stop",
            prompt_token_ids=prompt_ids if self.return_tokens else None,
            completion_token_ids=completion_ids if self.return_tokens else None,
            completion_logprobs=[-0.25] * len(completion_ids) if self.return_tokens else None,
        )


async def _states(tokenizer: Any, return_tokens: bool) -> list[vf.State]:
    env = vf.ToolEnv(
        tools=[add], dataset=[{"question": "what is 1 + 2?", "answer": "3"}], max_turns=4
    )
    row = env.get_rows("train")[0]
    return await env.run_group(row, TemplateServer(tokenizer, return_tokens), "m", 2)


@pytest.mark.parametrize("server_tokens", [True, False])
async def test_mask_covers_exactly_the_model_tokens(
    char_tokenizer: Any, server_tokens: bool
) -> None:
    tok = char_tokenizer
    states = await _states(tok, server_tokens)
    for state in states:
        assert state["error"] is None
        assert len(state["trajectory"]) == 2  # tool call, then the answer
        out = build_samples(state, tokenizer=tok)
        (sample,) = out.samples
        assert out.counts["split"] == 0
        conversation = [*state["prompt"], *state["completion"]]
        assert [m["role"] for m in conversation] == ["user", "assistant", "tool", "assistant"]
        # expected: the whole conversation's tokens; trainable = each assistant message's span
        expected_mask: list[bool] = []
        for i, msg in enumerate(conversation):
            before = (
                tok.apply_chat_template(
                    conversation[:i], add_generation_prompt=msg["role"] == "assistant"
                )["input_ids"]
                if i
                else []
            )
            upto = tok.apply_chat_template(conversation[: i + 1])["input_ids"]
            if msg["role"] == "assistant":
                expected_mask += [False] * (len(before) - len(expected_mask)) + [True] * (
                    len(upto) - len(before)
                )
            else:
                expected_mask += [False] * (len(upto) - len(expected_mask))
        assert sample.token_ids == tok.apply_chat_template(conversation)["input_ids"]
        assert sample.mask == expected_mask
        model_text = tok.decode(
            [t for t, m in zip(sample.token_ids, sample.mask, strict=True) if m]
        )
        assert model_text.endswith("</tool_call><|end|>it is 3<|end|>")
        assert "<|tool|>3" not in model_text and "1 + 2" not in model_text
        if server_tokens:
            assert sample.logprobs is not None
            assert {lp for lp, m in zip(sample.logprobs, sample.mask, strict=True) if m} == {-0.25}
        else:
            assert sample.logprobs is None and out.counts["retokenized"] == 2


async def test_trl_rollout_func_masks_tool_tokens_with_env_mask(char_tokenizer: Any) -> None:
    from types import SimpleNamespace

    from verifiers.train.trl_adapter import TRLAdapter

    tok = char_tokenizer
    env = vf.ToolEnv(
        tools=[add], dataset=[{"question": "what is 1 + 2?", "answer": "3"}], max_turns=4
    )
    adapter = TRLAdapter(env, client=TemplateServer(tok, return_tokens=True))
    prompts = [row["prompt"] for row in adapter.train_dataset()] * 3  # one group of 3
    trainer = SimpleNamespace(
        processing_class=tok, args=SimpleNamespace(max_completion_length=16, temperature=1.0)
    )
    out = await asyncio.to_thread(adapter.rollout_func, prompts, trainer)
    adapter.close()
    assert set(out) == {"prompt_ids", "completion_ids", "logprobs", "env_mask", "vf_reward"}
    assert len(out["completion_ids"]) == 3
    for p_ids, c_ids, lps, env_mask in zip(
        out["prompt_ids"], out["completion_ids"], out["logprobs"], out["env_mask"], strict=True
    ):
        assert tok.decode(p_ids) == tok.apply_chat_template(
            prompts[0], add_generation_prompt=True, tokenize=False
        )
        assert len(c_ids) == len(lps) == len(env_mask)
        model_text = tok.decode([t for t, m in zip(c_ids, env_mask, strict=True) if m])
        env_text = tok.decode([t for t, m in zip(c_ids, env_mask, strict=True) if not m])
        assert model_text.endswith("</tool_call><|end|>it is 3<|end|>")
        assert env_text == "<|tool|>3<|end|><|assistant|>"
        assert {lp for lp, m in zip(lps, env_mask, strict=True) if m} == {-0.25}
    with pytest.raises(vf.ConfigError, match="train_dataset"):
        adapter.rollout_func([[{"role": "user", "content": "unknown"}]], trainer)
