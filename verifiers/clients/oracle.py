"""The built-in ``oracle`` model: answers with the gold answer, no endpoint needed."""

from __future__ import annotations

from typing import Any

from verifiers.clients.interface import Client
from verifiers.errors import ConfigError
from verifiers.model_types import Message, Messages, MessageType, ModelResponse, SamplingArgs, Usage

__all__ = ["OracleClient"]


class OracleClient(Client):
    """A model that sends what the environment's ``oracle_response(state)`` says a perfect
    model would send (by default the gold answer formatted by the parser).

    Used by ``vf-eval ENV -m oracle`` so an author can check that correct answers get full
    reward. The environment recognises this client and asks its own hook; calling
    :meth:`get_response` directly is an error because the oracle needs the rollout's state.
    """

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        raise ConfigError(
            "the oracle model only works inside an environment rollout (it answers from the "
            "example's gold answer)"
        )

    def respond(
        self,
        message: Message,
        prompt: Messages | str,
        *,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        """Wrap the oracle's message as a model response, with token ids and logprobs.

        The ids, logprobs and usage are those the OpenAI-compatible test server
        (:mod:`verifiers.testing.replies`: byte-level toy tokenizer and chat template) returns
        for this prompt, ``tools`` and reply when asked for ``return_token_ids`` and
        ``logprobs``, so an oracle rollout's trajectory is token-exact like a served model's:
        each step's prompt ids extend the previous step's prompt and completion ids.
        """
        from verifiers.clients._wire import _int_list, _logprobs
        from verifiers.testing.replies import build_chat_completion, build_completion

        msg = dict(message)
        msg.setdefault("role", "assistant")
        msg.setdefault("content", None)
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        reply = {k: msg[k] for k in _REPLY_KEYS if msg.get(k) is not None}
        reply["finish_reason"] = finish
        request: dict[str, Any] = {"model": "oracle", "return_token_ids": True}
        if message_type == "completion":
            request.update(prompt=prompt if isinstance(prompt, str) else "", logprobs=0)
            body = build_completion(request, reply)
            choice = body["choices"][0]
            prompt_ids = choice["prompt_token_ids"]
        else:
            request.update(messages=prompt if isinstance(prompt, list) else [], logprobs=True)
            if tools:
                request["tools"] = tools
            body = build_chat_completion(request, reply)
            choice = body["choices"][0]
            prompt_ids = body["prompt_token_ids"]
        usage = body["usage"]
        return ModelResponse(
            message=msg,
            finish_reason=finish,
            usage=Usage(
                prompt_tokens=int(usage["prompt_tokens"]),
                completion_tokens=int(usage["completion_tokens"]),
            ),
            prompt_token_ids=_int_list(prompt_ids, "prompt_token_ids"),
            completion_token_ids=_int_list(choice["token_ids"], "choices[0].token_ids"),
            completion_logprobs=_logprobs(choice["logprobs"], message_type),
            model="oracle",
        )


# what of the oracle's message the test server's reply builder renders into tokens
_REPLY_KEYS = ("role", "content", "tool_calls", "reasoning_content")
