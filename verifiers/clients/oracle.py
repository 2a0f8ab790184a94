"""The built-in ``oracle`` model: answers with the gold answer, no endpoint needed."""

from __future__ import annotations

from typing import Any

from verifiers.clients.base import Client
from verifiers.errors import ConfigError
from verifiers.types import Message, Messages, MessageType, ModelResponse, SamplingArgs, Usage

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

    def respond(self, message: Message, prompt: Messages | str) -> ModelResponse:
        """Wrap the oracle's message as a model response."""
        msg = dict(message)
        msg.setdefault("role", "assistant")
        msg.setdefault("content", None)
        content = msg.get("content") or ""
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        return ModelResponse(
            message=msg,
            finish_reason=finish,
            usage=Usage(prompt_tokens=0, completion_tokens=len(str(content).split())),
            model="oracle",
        )
