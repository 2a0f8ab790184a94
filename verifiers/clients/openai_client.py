"""A :class:`Client` around a user's ``openai.AsyncOpenAI`` object (the classic call shape)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from verifiers.clients._wire import build_request, decode_response
from verifiers.clients.interface import Client
from verifiers.clients.retry import RetryPolicy, TransientError, error_for_status
from verifiers.model_types import Messages, MessageType, ModelResponse, SamplingArgs

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIClient"]


class OpenAIClient(Client):
    """Calls chat completions (default) or completions through the official ``openai`` client.

    The user's object is not changed: requests go through ``client.with_options(max_retries=0)``
    so that :class:`RetryPolicy` is the only retry loop. A sync ``openai.OpenAI`` is accepted
    too; its settings (base URL, key, headers, timeout) are reused for an async client.
    :meth:`close` closes the ``AsyncOpenAI`` only when verifiers made it (``owns_client=True``,
    or a sync client was given).

    Responses are read as raw JSON (``with_raw_response``) with the same parser as
    :class:`verifiers.NativeClient`, so vLLM's extra fields (``prompt_token_ids``,
    ``choices[0].token_ids``) and ``reasoning_content`` are kept.
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI | openai.OpenAI,
        *,
        retry: RetryPolicy | None = None,
        owns_client: bool = False,
    ) -> None:
        import openai

        self._owns_client = owns_client
        if isinstance(client, openai.OpenAI):
            self._owns_client = True
            client = openai.AsyncOpenAI(
                api_key=client.api_key,
                organization=client.organization,
                project=client.project,
                base_url=client.base_url,
                timeout=client.timeout,
                default_headers=dict(client._custom_headers),
                default_query=dict(client._custom_query),
            )
        self.client = client
        self.retry = retry if retry is not None else RetryPolicy()
        self.stats: Counter[str] = Counter()
        self._raw = client.with_options(max_retries=0)

    def __repr__(self) -> str:
        return f"OpenAIClient(base_url={str(self.client.base_url)!r})"

    async def _call(
        self,
        message_type: MessageType,
        body: dict[str, Any],
        headers: dict[str, str] | None,
        request_timeout: float | None,
        where: str,
    ) -> ModelResponse:
        import openai

        rest = dict(body)
        create: Any
        kwargs: dict[str, Any] = {"model": rest.pop("model")}
        if message_type == "chat":
            kwargs["messages"] = rest.pop("messages")
            create = self._raw.chat.completions.with_raw_response.create
        else:
            kwargs["prompt"] = rest.pop("prompt")
            create = self._raw.completions.with_raw_response.create
        # every other field goes through extra_body, so any server extension passes untouched
        kwargs["extra_body"] = rest
        if headers:
            kwargs["extra_headers"] = headers
        if request_timeout is not None:
            kwargs["timeout"] = request_timeout
        try:
            raw = await create(**kwargs)
            content = await raw.http_response.aread()
        except openai.APITimeoutError:
            raise TransientError("timeout", f"{where}: no answer within the timeout") from None
        except openai.APIConnectionError as e:
            raise TransientError("connection", f"{where}: {e}") from None
        except openai.APIStatusError as e:
            response = e.response
            raise error_for_status(
                response.status_code, response.content, response.headers.get("retry-after"), where
            ) from None
        return decode_response(content, where, message_type)

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        path, body, options = build_request(prompt, model, sampling_args, tools, message_type)
        where = str(self.client.base_url).rstrip("/") + path
        return await self.retry.run(
            lambda: self._call(message_type, body, options.headers, options.timeout, where),
            where=where,
            stats=self.stats,
        )

    async def close(self) -> None:
        """Close the wrapped ``AsyncOpenAI`` if verifiers created it; a caller's stays open."""
        if self._owns_client:
            await self.client.close()
