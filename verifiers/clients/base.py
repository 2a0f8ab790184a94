"""The model client interface: one method to implement."""

from __future__ import annotations

import abc
from typing import Any

from verifiers.types import Messages, MessageType, ModelResponse, SamplingArgs

__all__ = ["Client", "as_client"]


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


def as_client(obj: Any) -> Client:
    """Turn what a user passes as ``client`` into a :class:`Client`.

    Accepts a :class:`Client`, an ``openai.AsyncOpenAI`` (or sync ``OpenAI``: its settings are
    reused for an async client), or a base URL string (a :class:`NativeClient`).
    """
    if isinstance(obj, Client):
        return obj
    if isinstance(obj, str):
        from verifiers.clients.native import NativeClient

        return NativeClient(base_url=obj)
    try:
        import openai
    except ImportError:  # pragma: no cover
        openai = None  # type: ignore[assignment]
    if openai is not None and isinstance(obj, openai.AsyncOpenAI | openai.OpenAI):
        from verifiers.clients.openai_client import OpenAIClient

        return OpenAIClient(obj)
    from verifiers.errors import ConfigError

    raise ConfigError(
        f"client must be a verifiers.Client, an openai.AsyncOpenAI or a base URL, "
        f"not {type(obj).__name__}"
    )
