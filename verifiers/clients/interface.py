"""The model client interface: one method to implement (:meth:`Client.get_response`).

The implementations (:mod:`verifiers.clients.native`, :mod:`verifiers.clients.openai_client`,
:mod:`verifiers.clients.oracle`) subclass it; :func:`verifiers.clients.base.as_client` turns
what a user passes as ``client`` into one of them.
"""

from __future__ import annotations

import abc
from typing import Any

from verifiers.model_types import Messages, MessageType, ModelResponse, SamplingArgs

__all__ = ["Client"]


class Client(abc.ABC):
    """Talks to a model. Subclasses implement :meth:`get_response`.

    Implementations: :class:`verifiers.OpenAIClient` (wraps a user's ``openai.AsyncOpenAI``),
    :class:`verifiers.NativeClient` (lean aiohttp client for the same wire format, used by
    ``vf-eval`` and trainers), :class:`verifiers.OracleClient` (answers with the gold answer),
    :class:`verifiers.testing.ScriptedClient` (test double).
    """

    @abc.abstractmethod
    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        """Call the model once.

        ``prompt`` is a list of chat messages (``message_type="chat"``) or a string
        (``"completion"``). ``tools`` are OpenAI function-tool schemas. Raises
        :class:`verifiers.ModelError` subclasses for unusable answers and
        :class:`verifiers.EndpointError` when the endpoint fails after retries.
        """

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections. Safe to call more than once."""
