"""An in-process inference backend: sample from a Hugging Face causal LM directly.

:class:`LocalModelClient` is a :class:`verifiers.Client` that generates with the trainer's own
model object, so the sampling weights are always the current ones (no weight sync). Concurrent
requests (the rollouts of a group, several groups) are batched into one left-padded generation
with a KV cache. Responses carry prompt and completion token ids and the sampling logprobs,
which are the logprobs of ``logits / temperature``: a trainer recomputing them with the same
temperature gets the same numbers.

Supported sampling arguments: ``temperature`` (0 = greedy), ``max_tokens`` /
``max_completion_tokens``; others are ignored.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from verifiers.clients.base import Client
from verifiers.errors import OverlongPromptError
from verifiers.types import Messages, MessageType, ModelResponse, SamplingArgs, Usage

__all__ = ["LocalModelClient"]


@dataclass(slots=True)
class _Request:
    prompt_ids: list[int]
    max_tokens: int
    temperature: float
    future: asyncio.Future[tuple[list[int], list[float], bool]]


class LocalModelClient(Client):
    """Generate with ``model`` (a Hugging Face causal LM) and ``tokenizer`` in this process."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_batch_size: int = 64,
        default_max_tokens: int = 256,
        seed: int = 0,
    ) -> None:
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        self.default_max_tokens = default_max_tokens
        self.generator = torch.Generator(device=_device(model)).manual_seed(seed)
        self._pending: list[_Request] = []
        self._worker: asyncio.Task[None] | None = None
        self.tokens_generated = 0

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        """Sample one completion with the in-process model (batched with concurrent calls):
        token ids, the sampled tokens' logprobs at ``temperature`` and the finish reason."""
        args = dict(sampling_args or {})
        max_tokens = int(
            args.get("max_tokens") or args.get("max_completion_tokens") or self.default_max_tokens
        )
        temperature = float(args.get("temperature", 1.0))
        prompt_ids = self._encode_prompt(prompt, tools, message_type)
        limit = int(getattr(self.model.config, "max_position_embeddings", 1 << 30))
        if len(prompt_ids) >= limit:
            raise OverlongPromptError(
                f"prompt has {len(prompt_ids)} tokens; the model's context is {limit}"
            )
        max_tokens = min(max_tokens, limit - len(prompt_ids))
        loop = asyncio.get_running_loop()
        request = _Request(prompt_ids, max_tokens, temperature, loop.create_future())
        self._pending.append(request)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        completion_ids, logprobs, stopped = await request.future
        text_ids = completion_ids[:-1] if stopped else completion_ids
        text = self.tokenizer.decode(text_ids, skip_special_tokens=True)
        message = {"role": "assistant", "content": text}
        return ModelResponse(
            message=message,
            finish_reason="stop" if stopped else "length",
            usage=Usage(prompt_tokens=len(prompt_ids), completion_tokens=len(completion_ids)),
            prompt_token_ids=prompt_ids,
            completion_token_ids=completion_ids,
            completion_logprobs=logprobs,
            model=model,
        )

    def _encode_prompt(
        self, prompt: Messages | str, tools: list[dict[str, Any]] | None, message_type: MessageType
    ) -> list[int]:
        if message_type == "completion" or isinstance(prompt, str):
            ids = self.tokenizer.encode(str(prompt), add_special_tokens=False)
        else:
            ids = self.tokenizer.apply_chat_template(
                list(prompt), tools=tools, add_generation_prompt=True, tokenize=True
            )
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return [int(x) for x in ids]

    async def _drain(self) -> None:
        # let the other rollouts started in this tick enqueue their requests first
        await asyncio.sleep(0)
        while self._pending:
            batch = self._pending[: self.max_batch_size]
            del self._pending[: len(batch)]
            live = [r for r in batch if not r.future.done()]
            if not live:
                continue
            try:
                results = self.generate(
                    [r.prompt_ids for r in live],
                    [r.max_tokens for r in live],
                    [r.temperature for r in live],
                )
            except Exception as e:  # surface to every waiting rollout
                for r in live:
                    if not r.future.done():
                        r.future.set_exception(e)
                continue
            for r, res in zip(live, results, strict=True):
                if not r.future.done():
                    r.future.set_result(res)
            await asyncio.sleep(0)

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], temperatures: list[float]
    ) -> list[tuple[list[int], list[float], bool]]:
        """Sample completions for a batch of prompts: ``(ids, logprobs, stopped_on_eos)`` each."""
        import torch

        model = self.model
        device = _device(model)
        eos = int(self.tokenizer.eos_token_id)
        pad = int(self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos)
        n = len(prompts)
        width = max(len(p) for p in prompts)
        ids = torch.full((n, width), pad, dtype=torch.long, device=device)
        attn = torch.zeros((n, width), dtype=torch.long, device=device)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            attn[i, width - len(p) :] = 1
        positions = (attn.cumsum(-1) - 1).clamp(min=0)
        temps = torch.tensor(temperatures, dtype=torch.float32, device=device).unsqueeze(-1)
        greedy = temps.squeeze(-1) <= 0
        temps = torch.where(temps > 0, temps, torch.ones_like(temps))
        limits = torch.tensor(max_tokens, device=device)
        out_ids: list[list[int]] = [[] for _ in range(n)]
        out_lps: list[list[float]] = [[] for _ in range(n)]
        stopped = [False] * n
        active = torch.tensor([m > 0 for m in max_tokens], device=device)
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                out = model(
                    input_ids=ids, attention_mask=attn, position_ids=positions, use_cache=True
                )
                cache_arg = _cache_argument(model)
                step = 0
                while bool(active.any()):
                    logits = out.logits[:, -1, :].float() / temps
                    logp = torch.log_softmax(logits, dim=-1)
                    sampled = torch.multinomial(logp.exp(), 1, generator=self.generator).squeeze(-1)
                    token = torch.where(greedy, logits.argmax(-1), sampled)
                    token_lp = logp.gather(-1, token.unsqueeze(-1)).squeeze(-1)
                    tok_list, lp_list, act_list = token.tolist(), token_lp.tolist(), active.tolist()
                    for i in range(n):
                        if act_list[i]:
                            out_ids[i].append(tok_list[i])
                            out_lps[i].append(lp_list[i])
                            if tok_list[i] == eos:
                                stopped[i] = True
                    step += 1
                    active = active & (token != eos) & (limits > step)
                    if not bool(active.any()):
                        break
                    attn = torch.cat(
                        [attn, torch.ones((n, 1), dtype=attn.dtype, device=device)], -1
                    )
                    positions = positions[:, -1:] + 1
                    out = model(
                        input_ids=token.unsqueeze(-1),
                        attention_mask=attn,
                        position_ids=positions,
                        use_cache=True,
                        **{cache_arg: _cache_of(out)},
                    )
        finally:
            model.train(was_training)
        self.tokens_generated += sum(len(x) for x in out_ids)
        return [(out_ids[i], out_lps[i], stopped[i]) for i in range(n)]


def _cache_argument(model: Any) -> str:
    """The name ``model.forward`` takes the KV cache under: ``cache`` from transformers 5.24
    (which deprecates ``past_key_values``), ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(out: Any) -> Any:
    """The KV cache a forward pass returned, under either name (see ``_cache_argument``)."""
    cache = out.get("cache")
    return cache if cache is not None else out.get("past_key_values")


def _device(model: Any) -> Any:
    return next(model.parameters()).device
