"""The client class names of the classic (0.3.x) top level.

``OpenAIChatCompletionsClient`` and ``OpenAICompletionsClient`` wrap an ``openai`` client as
:class:`~verifiers.OpenAIClient` does (the second always calls the completions API).
``AnthropicMessagesClient`` (:mod:`verifiers.classic.anthropic_client`) calls Anthropic's
Messages API. ``OpenAIResponsesClient`` and ``RendererClient`` talk to a vendor's API or a
tokenizer renderer that verifiers does not implement: they resolve, and constructing one
raises a :class:`~verifiers.ConfigError` naming what to use instead.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias, TypeVar

from verifiers.clients.openai_client import OpenAIClient
from verifiers.errors import (
    ConfigError,
    EmptyModelResponseError,
    InvalidModelResponseError,
    OverlongPromptError,
)
from verifiers.messages import as_tool_call
from verifiers.types import Messages, MessageType, ModelResponse, SamplingArgs

T = TypeVar("T")

# 0.3.x's names for the chat/completions API's shapes (dicts and objects of the openai package)
OpenAIChatMessage: TypeAlias = dict[str, Any]
OpenAIChatMessages: TypeAlias = list[OpenAIChatMessage]
OpenAIChatResponse: TypeAlias = Any  # openai.types.chat.ChatCompletion
OpenAITool: TypeAlias = dict[str, Any]
OpenAITextMessages: TypeAlias = str
OpenAITextResponse: TypeAlias = Any  # openai.types.Completion

__all__ = [
    "DEFAULT_REASONING_FIELDS",
    "AnthropicMessagesClient",
    "OpenAIChatCompletionsClient",
    "OpenAICompletionsClient",
    "OpenAIResponsesClient",
    "RendererClient",
    "content_to_text",
    "get_usage_field",
    "handle_openai_overlong_prompt",
    "parse_reasoning_content",
    "parse_refusal_content",
    "resolve_client",
]


def _openai_client(client_or_config: Any) -> Any:
    """An ``openai`` client from what 0.3.x's constructors take: a client, or a
    ``ClientConfig`` (base URL and the name of the variable holding the key)."""
    from verifiers.classic.models import ClientConfig

    if isinstance(client_or_config, ClientConfig):
        import os

        import openai

        return openai.AsyncOpenAI(
            base_url=client_or_config.api_base_url,
            api_key=os.environ.get(client_or_config.api_key_var, "EMPTY"),
            timeout=client_or_config.timeout,
            default_headers=client_or_config.extra_headers or None,
        )
    return client_or_config


DEFAULT_REASONING_FIELDS = ["reasoning", "reasoning_content", "reasoning_details"]

_CONTEXT_LENGTH_PHRASES = (
    "this model's maximum context length is",
    "is longer than the model's context length",
    "is longer than the maximum model length",
    "exceeds the model's context length",
    "exceed the configured limit",
    "exceeds the configured limit",
    "exceeded model",
    "prompt_too_long",
    "context length",
    "maximum model length",
)


def content_to_text(content: Any) -> str:
    """The text of message content: a string, or the text parts of a part list joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, Mapping):
            text = part.get("text") if part.get("type") == "text" else None
        else:
            text = getattr(part, "text", None)
        if isinstance(text, str):
            texts.append(text)
    return " ".join(texts).strip()


def get_usage_field(usage: Any, key: str) -> Any:
    """``usage[key]`` of a mapping, ``usage.key`` of an object (``None`` when absent)."""
    return usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)


def _fields(message: Any) -> Mapping[str, Any]:
    if isinstance(message, Mapping):
        return message
    dump = getattr(message, "model_dump", None)
    dumped = dump() if callable(dump) else vars(message)
    return dumped if isinstance(dumped, Mapping) else {}


def parse_refusal_content(message: Any) -> str | None:
    """The model's refusal text, when it refused."""
    refusal = _fields(message).get("refusal")
    return refusal if isinstance(refusal, str) and refusal else None


def parse_reasoning_content(message: Any) -> str | None:
    """The reasoning text a server sent with the message (under ``reasoning``,
    ``reasoning_content`` or ``reasoning_details``); ``""`` for structured reasoning details
    without plain text; ``None`` when there is none."""
    fields = _fields(message)
    for key in DEFAULT_REASONING_FIELDS:
        value = fields.get(key)
        if isinstance(value, str) and value:
            return value
    details = fields.get("reasoning_details")
    if isinstance(details, list) and any(
        isinstance(d, Mapping)
        and any(d.get(k) for k in ("text", "summary", "data", "signature", "encrypted_content"))
        for d in details
    ):
        return ""
    return None


def _reasoning_tokens(usage: Any) -> int:
    details = get_usage_field(usage, "completion_tokens_details") if usage is not None else None
    value = get_usage_field(details, "reasoning_tokens") if details is not None else None
    return value if isinstance(value, int) else 0


def handle_openai_overlong_prompt(func: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """Decorate an async call to an OpenAI-compatible API: a 400 whose text says the prompt
    is longer than the model's context becomes :class:`~verifiers.OverlongPromptError`;
    authentication errors and other errors pass through."""

    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> T:
        import openai

        try:
            return await func(*args, **kwargs)
        except openai.BadRequestError as e:
            text = (e.response.text if e.response is not None else str(e)).lower()
            if any(phrase in text for phrase in _CONTEXT_LENGTH_PHRASES):
                raise OverlongPromptError(str(e)) from e
            raise

    return wrapper


def _part(part: Any) -> Any:
    if isinstance(part, Mapping):
        return dict(part)
    dump = getattr(part, "model_dump", None)
    if callable(dump):
        return dump()
    raise ConfigError(f"a message content part must be a mapping, not {type(part).__name__}")


def _content(content: Any) -> Any:
    return [_part(p) for p in content] if isinstance(content, list) else content


def _to_openai_message(message: Any) -> dict[str, Any]:
    fields = _fields(message)
    role = fields.get("role")
    if role == "text":
        return {"role": "user", "content": fields.get("content")}
    out: dict[str, Any] = {"role": role, "content": _content(fields.get("content"))}
    if role == "assistant":
        calls = fields.get("tool_calls")
        if calls:
            out["tool_calls"] = [
                {
                    "type": "function",
                    "id": c.get("id"),
                    "function": {"name": c.get("name"), "arguments": c.get("arguments")},
                }
                for c in (as_tool_call(c) for c in calls)
            ]
        if fields.get("reasoning_content") is not None:
            out["reasoning_content"] = fields["reasoning_content"]
    elif role == "tool":
        out["tool_call_id"] = fields.get("tool_call_id")
    elif role not in ("system", "user"):
        raise ConfigError(f"a chat message needs a known role, got {role!r}")
    return out


class OpenAIChatCompletionsClient(OpenAIClient):
    """An ``openai.AsyncOpenAI`` (or a ``ClientConfig``) calling chat completions.

    It also has 0.3.x's conversion steps (:meth:`to_native_prompt`, :meth:`to_native_tool`,
    :meth:`raise_from_native_response`, :meth:`from_native_response`). Given an object that is
    not an ``openai`` client but has its shape (``.chat.completions.create``), it calls that the
    way 0.3.x does (no retry policy; an overlong prompt raises ``OverlongPromptError``,
    authentication errors pass through, other failures become a ``ModelError``).
    """

    def __init__(self, client_or_config: Any, **kwargs: Any) -> None:
        client = _openai_client(client_or_config)
        if hasattr(client, "with_options"):
            # a client made here from a ClientConfig is this one's to close
            kwargs.setdefault("owns_client", client is not client_or_config)
            super().__init__(client, **kwargs)
        else:  # an object of the openai client's shape (``.chat.completions.create``)
            self.client = client
            self._raw = None  # type: ignore[assignment]

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        if self._raw is None:  # type: ignore[comparison-overlap]
            return await _call_stand_in(self, prompt, model, sampling_args, tools, "chat")
        return await super().get_response(
            prompt, model, sampling_args=sampling_args, tools=tools, message_type=message_type
        )

    async def to_native_prompt(
        self, messages: Messages
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Messages in the chat-completions shape (typed content parts as dicts, tool-call
        arguments as JSON text), and no extra keyword arguments."""
        return [_to_openai_message(m) for m in messages], {}

    async def to_native_tool(self, tool: Any) -> dict[str, Any]:
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
        if getattr(tool, "strict", None) is not None:
            function["strict"] = tool.strict
        return {"type": "function", "function": function}

    async def raise_from_native_response(self, response: Any) -> None:
        """Raise :class:`~verifiers.EmptyModelResponseError` for a response with no choice or
        with neither content, refusal, tool calls nor reasoning, and
        :class:`~verifiers.InvalidModelResponseError` for more than one choice."""
        choices = getattr(response, "choices", None) if response is not None else None
        if not choices:
            raise EmptyModelResponseError("the model returned no response choices")
        if len(choices) != 1:
            raise InvalidModelResponseError(f"the model returned {len(choices)} choices, not 1")
        message = choices[0].message
        if not (
            content_to_text(getattr(message, "content", None))
            or parse_refusal_content(message)
            or getattr(message, "tool_calls", None)
            or parse_reasoning_content(message) is not None
            or _reasoning_tokens(getattr(response, "usage", None)) > 0
        ):
            raise EmptyModelResponseError("the model returned no content and called no tools")

    async def from_native_response(self, response: Any) -> Any:
        """The classic ``vf.Response`` of a chat-completions response."""
        from verifiers.classic.models import Response, ResponseMessage

        choice = response.choices[0]
        message = choice.message
        content = message.content if content_to_text(message.content) else None
        calls: list[dict[str, Any]] = []
        for call in getattr(message, "tool_calls", None) or []:
            parsed = as_tool_call(call)
            if isinstance(parsed, dict) and isinstance(parsed.get("arguments"), str):
                calls.append(parsed)  # a vf.ToolCall
        usage = getattr(response, "usage", None)
        usage_out = None
        if usage is not None:
            prompt = get_usage_field(usage, "prompt_tokens")
            completion = get_usage_field(usage, "completion_tokens")
            if isinstance(prompt, int) and isinstance(completion, int):
                total = get_usage_field(usage, "total_tokens")
                usage_out = {
                    "prompt_tokens": prompt,
                    "reasoning_tokens": _reasoning_tokens(usage),
                    "completion_tokens": completion,
                    "total_tokens": total if isinstance(total, int) else prompt + completion,
                }
        finish = getattr(choice, "finish_reason", None)
        return Response(
            id=response.id,
            created=response.created,
            model=response.model,
            usage=usage_out,
            message=ResponseMessage(
                content=content if content is not None else parse_refusal_content(message),
                reasoning_content=parse_reasoning_content(message),
                tool_calls=calls or None,
                finish_reason=finish if finish in ("stop", "length", "tool_calls") else None,
                is_truncated=finish == "length",
            ),
        )


class OpenAICompletionsClient(OpenAIClient):
    """An ``openai.AsyncOpenAI`` (or a ``ClientConfig``) calling the completions API: prompts
    are text (``message_type="completion"`` whatever the caller asks)."""

    def __init__(self, client_or_config: Any, **kwargs: Any) -> None:
        client = _openai_client(client_or_config)
        if hasattr(client, "with_options"):
            # a client made here from a ClientConfig is this one's to close
            kwargs.setdefault("owns_client", client is not client_or_config)
            super().__init__(client, **kwargs)
        else:  # an object of the openai client's shape (``.completions.create``)
            self.client = client
            self._raw = None  # type: ignore[assignment]

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "completion",
    ) -> ModelResponse:
        if self._raw is None:
            return await _call_stand_in(self, prompt, model, sampling_args, tools, "completion")
        return await super().get_response(
            prompt, model, sampling_args=sampling_args, tools=tools, message_type="completion"
        )


async def _call_stand_in(
    owner: Any,
    prompt: Messages | str,
    model: str,
    sampling_args: SamplingArgs | None,
    tools: list[dict[str, Any]] | None,
    kind: MessageType,
) -> ModelResponse:
    """One call through an object of the openai client's shape, as 0.3.x's clients make it."""
    from verifiers.classic.client import auth_errors, to_model_response
    from verifiers.errors import Error, ModelError

    args = dict(sampling_args or {})
    try:
        if kind == "chat":
            messages, _ = await owner.to_native_prompt(prompt)
            if tools:
                args["tools"] = tools
            create = owner.client.chat.completions.create
            native = await handle_openai_overlong_prompt(create)(
                model=model, messages=messages, **args
            )
            await owner.raise_from_native_response(native)
            return to_model_response(await owner.from_native_response(native))
        if isinstance(prompt, str):
            text = prompt
        else:
            text = "\n".join(content_to_text(_fields(m).get("content")) for m in prompt)
        create = owner.client.completions.create
        native = await handle_openai_overlong_prompt(create)(model=model, prompt=text, **args)
        choices = getattr(native, "choices", None)
        if not choices:
            raise EmptyModelResponseError("the model returned no response choices")
        finish = getattr(choices[0], "finish_reason", None)
        return ModelResponse(
            message={"role": "assistant", "content": getattr(choices[0], "text", "")},
            finish_reason=finish,
            model=getattr(native, "model", None),
            id=getattr(native, "id", None),
        )
    except Error:
        raise
    except Exception as e:
        if isinstance(e, auth_errors()):
            raise
        raise ModelError(f"{type(e).__name__}: {e}") from e


class _Unsupported:
    """A classic client verifiers does not implement: constructing it explains what to use."""

    needs = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(
            f"{type(self).__name__} is not available in this verifiers: {self.needs} Use an "
            "OpenAI-compatible endpoint instead (pass an openai.AsyncOpenAI or a base URL as "
            "the client, or vf.OpenAIChatCompletionsClient)."
        )


class OpenAIResponsesClient(_Unsupported):
    needs = "it calls OpenAI's Responses API (api.openai.com/v1/responses), which verifiers' "
    needs += "clients do not speak."


class RendererClient(_Unsupported):
    needs = "it renders prompts with the `renderers` package against a token-in/token-out "
    needs += "inference server."


# client_type of a classic ClientConfig -> the class here that serves it
_CLIENT_TYPES = {
    "openai_chat_completions": "OpenAIChatCompletionsClient",
    "openai_completions": "OpenAICompletionsClient",
    "openai_responses": "OpenAIResponsesClient",
    "anthropic_messages": "AnthropicMessagesClient",
    "renderer": "RendererClient",
}


def resolve_client(client_or_config: Any) -> Any:
    """0.3.x's ``verifiers.clients.resolve_client``: a client is returned as is; a
    ``vf.ClientConfig`` becomes the client its ``client_type`` names (the types this verifiers
    cannot serve raise a ``ConfigError`` saying so)."""
    from verifiers.classic.models import ClientConfig
    from verifiers.clients.base import Client

    if isinstance(client_or_config, Client):
        return client_or_config
    if not isinstance(client_or_config, ClientConfig):
        raise ConfigError(
            f"resolve_client takes a client or a vf.ClientConfig, not "
            f"{type(client_or_config).__name__}"
        )
    name = _CLIENT_TYPES.get(client_or_config.client_type)
    if name is None:
        raise ConfigError(
            f"client_type {client_or_config.client_type!r} is not available here; use one of "
            f"{sorted(_CLIENT_TYPES)}"
        )
    return globals()[name](client_or_config)


# Anthropic's Messages API: a classic client of its own (the anthropic package is optional)
from verifiers.classic.anthropic_client import AnthropicMessagesClient  # noqa: E402

# names 0.3.x's version of this module imports, served on first use (verifiers.classic.forward)
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
