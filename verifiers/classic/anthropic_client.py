"""``vf.AnthropicMessagesClient``: the classic (0.3.x) client of Anthropic's Messages API.

A :class:`verifiers.clients.client.Client` (the five conversion steps), built on an
``anthropic.AsyncAnthropic`` (or an object of its shape) or on a :class:`~verifiers.ClientConfig`
(:func:`verifiers.utils.client_utils.setup_anthropic_client`). The ``anthropic`` package is
optional: a client made from a config needs it and says how to install it when it is missing.

Conversions: system messages become the request's ``system`` text; tool results (consecutive
tool messages) go back as one user message of ``tool_result`` blocks; assistant tool calls
become ``tool_use`` blocks, with the ``thinking`` / ``redacted_thinking`` blocks of the turn
that made them (``message["thinking_blocks"]``) sent back first, as the API requires while
thinking is on; base64 ``data:`` images become image blocks. ``max_tokens``, which the API
requires, defaults to 4096 (with a warning); ``stop`` becomes ``stop_sequences``;
``reasoning_effort`` becomes ``output_config.effort`` (and adaptive thinking on the models that
have it). An error of the API that says the prompt is too long raises
:class:`~verifiers.OverlongPromptError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from verifiers.classic.client import Client
from verifiers.errors import ConfigError, EmptyModelResponseError, OverlongPromptError
from verifiers.types import Messages, SamplingArgs

if TYPE_CHECKING:
    from verifiers.classic.models import ClientConfig, Response, Tool
    from verifiers.classic.types import FinishReason

__all__ = ["ADAPTIVE_THINKING_MODELS", "AnthropicMessagesClient"]

#: models whose thinking is switched on (``{"type": "adaptive"}``) by ``reasoning_effort``
ADAPTIVE_THINKING_MODELS = ("claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6")

DEFAULT_MAX_TOKENS = 4096

# phrases of the API's 400 errors for a prompt longer than the model's context
_OVERLONG = (
    "prompt is too long",
    "exceed context limit",
    "exceeds context limit",
    "too many total text bytes",
    "context length",
    "input is too long",
)


def _anthropic() -> Any:
    try:
        import anthropic
    except ImportError as e:
        raise ConfigError(
            "AnthropicMessagesClient needs the `anthropic` package: pip install "
            "'verifiers[anthropic]' (or pass an object of anthropic.AsyncAnthropic's shape as "
            "the client)"
        ) from e
    return anthropic


def _fields(message: Any) -> Mapping[str, Any]:
    if isinstance(message, Mapping):
        return message
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        dumped: Mapping[str, Any] = dump()
        return dumped
    raise ConfigError(f"a chat message must be a dict or a message object, not {message!r:.80}")


def _blocks(content: Any) -> str | list[dict[str, Any]]:
    """Message content as the API takes it: text, or content blocks (text; base64 images;
    other parts as text placeholders)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content)
    blocks: list[dict[str, Any]] = []
    for raw in content:
        part = dict(_fields(raw))
        kind = part.get("type")
        if kind == "text":
            if isinstance(part.get("text"), str):
                blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            source = part.get("image_url")
            url = source.get("url") if isinstance(source, Mapping) else None
            header, _, data = url.partition(",") if isinstance(url, str) else ("", "", "")
            if header.startswith("data:") and header.endswith(";base64") and data:
                media = header[len("data:") : -len(";base64")] or "image/png"
                blocks.append(
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": media, "data": data},
                    }
                )
            else:
                blocks.append({"type": "text", "text": "[image]"})
        elif kind == "input_audio":
            blocks.append({"type": "text", "text": "[audio]"})
        else:
            blocks.append({"type": "text", "text": str(part)})
    return blocks


def _text(content: Any) -> str:
    blocks = _blocks(content)
    if isinstance(blocks, str):
        return blocks
    return " ".join(b["text"] if b["type"] == "text" else "[image]" for b in blocks)


def _call_fields(call: Any) -> tuple[str, str, dict[str, Any]]:
    """(id, name, arguments) of a tool call in the OpenAI wire shape or 0.3.x's flat one."""
    fields = _fields(call)
    fn = fields.get("function")
    source = fn if isinstance(fn, Mapping) else fields
    raw = source.get("arguments")
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            parsed = {}
    else:
        parsed = raw
    args = dict(parsed) if isinstance(parsed, Mapping) else {}
    return str(fields.get("id") or ""), str(source.get("name") or ""), args


def _thinking_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for raw in message.get("thinking_blocks") or []:
        block = _fields(raw)
        if block.get("type") == "thinking" and block.get("thinking") and block.get("signature"):
            out.append(
                {"type": "thinking", "thinking": block["thinking"], "signature": block["signature"]}
            )
        elif block.get("type") == "redacted_thinking" and block.get("data"):
            out.append({"type": "redacted_thinking", "data": block["data"]})
    return out


def _assistant(message: Mapping[str, Any]) -> dict[str, Any]:
    thinking = _thinking_blocks(message)
    calls = message.get("tool_calls") or []
    if not thinking and not calls:
        return {"role": "assistant", "content": _text(message.get("content"))}
    blocks: list[dict[str, Any]] = list(thinking)
    text = _text(message.get("content"))
    if text:
        blocks.append({"type": "text", "text": text})
    for call in calls:
        call_id, name, args = _call_fields(call)
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
    return {"role": "assistant", "content": blocks}


def _tool_result(message: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": message.get("tool_call_id") or "",
        "content": _blocks(message.get("content")),
    }


class AnthropicMessagesClient(Client[Any, list[dict[str, Any]], Any, dict[str, Any]]):
    """Anthropic's Messages API as a classic verifiers client (see the module docstring)."""

    def setup_client(self, config: ClientConfig) -> Any:
        from verifiers.utils.client_utils import setup_anthropic_client

        return setup_anthropic_client(config)

    async def close(self) -> None:
        close = getattr(self.client, "close", None)
        if callable(close):
            await close()

    async def to_native_prompt(
        self, messages: Messages
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The API's ``messages`` and the ``system`` text (as an extra keyword argument)."""
        if isinstance(messages, str):
            return [{"role": "user", "content": messages}], {"system": ""}
        system: list[str] = []
        prompt: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for raw in messages:
            message = _fields(raw)
            role = message.get("role")
            if role == "tool":
                results.append(_tool_result(message))
                continue
            if results:  # the tool results of one turn go back in one user message
                prompt.append({"role": "user", "content": results})
                results = []
            if role == "system":
                system.append(_text(message.get("content")))
            elif role in ("user", "text"):
                prompt.append({"role": "user", "content": _blocks(message.get("content"))})
            elif role == "assistant":
                prompt.append(_assistant(message))
            else:
                raise ConfigError(f"a chat message needs a known role, got {role!r}")
        if results:
            prompt.append({"role": "user", "content": results})
        return prompt, {"system": "\n\n".join(system)}

    async def to_native_tool(self, tool: Tool) -> dict[str, Any]:
        return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}

    def _request_args(self, model: str, sampling_args: SamplingArgs) -> dict[str, Any]:
        args = dict(sampling_args)
        effort = args.pop("reasoning_effort", None)
        if effort is not None:
            args["output_config"] = {**(args.get("output_config") or {}), "effort": effort}
            model_id = model.lower().split("/")[-1].replace(".", "-").replace("_", "-")
            adaptive = any(
                model_id == m or model_id.startswith(m + "-") for m in ADAPTIVE_THINKING_MODELS
            )
            if adaptive and "thinking" not in args:
                args["thinking"] = {"type": "adaptive"}
        args.pop("n", None)
        stop = args.pop("stop", None)
        if stop is not None and "stop_sequences" not in args:
            args["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        if args.get("max_tokens") is None:
            self.logger.warning(
                "max_tokens is not set and Anthropic's Messages API requires it: using %d",
                DEFAULT_MAX_TOKENS,
            )
            args["max_tokens"] = DEFAULT_MAX_TOKENS
        return {k: v for k, v in args.items() if v is not None}

    async def get_native_response(
        self,
        prompt: list[dict[str, Any]],
        model: str,
        sampling_args: SamplingArgs,
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        kwargs.pop("state", None)  # verifiers' keyword, not the API's
        if not kwargs.get("system"):
            kwargs.pop("system", None)
        if tools:
            kwargs["tools"] = tools
        try:
            return await self.client.messages.create(
                model=model, messages=prompt, **self._request_args(model, sampling_args), **kwargs
            )
        except Exception as e:
            anthropic = _anthropic()
            if isinstance(e, anthropic.BadRequestError) and not isinstance(
                e, anthropic.AuthenticationError | anthropic.PermissionDeniedError
            ):
                text = str(getattr(e, "message", e)).lower()
                if any(phrase in text for phrase in _OVERLONG):
                    raise OverlongPromptError(f"the prompt is too long for {model}: {e}") from e
            raise

    async def raise_from_native_response(self, response: Any) -> None:
        """:class:`~verifiers.EmptyModelResponseError` for no response, or one with no text,
        no tool call and no thinking."""
        if response is None:
            raise EmptyModelResponseError("the model returned no response")
        for block in getattr(response, "content", None) or []:
            kind = getattr(block, "type", None)
            if (
                (kind == "text" and getattr(block, "text", None))
                or kind == "tool_use"
                or (kind == "thinking" and getattr(block, "thinking", None))
                or (kind == "redacted_thinking" and getattr(block, "data", None))
            ):
                return
        raise EmptyModelResponseError("the model returned no content and called no tools")

    async def from_native_response(self, response: Any) -> Response:
        """The classic ``vf.Response``: text, thinking (``reasoning_content``, and the
        blocks in ``message.thinking_blocks``), tool calls, finish reason, usage."""
        from verifiers.classic.models import Response, ResponseMessage
        from verifiers.messages import ToolCall
        from verifiers.types import Usage

        text: list[str] = []
        reasoning: list[str] = []
        thinking: list[dict[str, Any]] = []
        calls: list[Any] = []
        for block in response.content:
            kind = getattr(block, "type", None)
            if kind == "text":
                text.append(str(getattr(block, "text", "") or ""))
            elif kind == "thinking":
                value = getattr(block, "thinking", None)
                if isinstance(value, str):
                    reasoning.append(value)
                    signature = getattr(block, "signature", None)
                    if isinstance(signature, str):
                        thinking.append(
                            {"type": "thinking", "thinking": value, "signature": signature}
                        )
            elif kind == "redacted_thinking":
                data = getattr(block, "data", None)
                if isinstance(data, str):
                    thinking.append({"type": "redacted_thinking", "data": data})
            elif kind == "tool_use":
                call_id, name = getattr(block, "id", None), getattr(block, "name", None)
                if isinstance(call_id, str) and isinstance(name, str):
                    arguments = json.dumps(getattr(block, "input", None) or {})
                    calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
            else:
                raise EmptyModelResponseError(
                    f"the model answered with a content block of type {kind!r}, which "
                    "AnthropicMessagesClient does not read"
                )
        stop = getattr(response, "stop_reason", None)
        finishes: dict[str, FinishReason] = {
            "end_turn": "stop",
            "max_tokens": "length",
            "tool_use": "tool_calls",
        }
        finish = finishes.get(str(stop))
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "input_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "output_tokens", 0) or 0)
        return Response(
            id=str(getattr(response, "id", "")),
            model=str(getattr(response, "model", "")),
            created=int(time.time()),
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
            message=ResponseMessage(
                content="".join(text),
                reasoning_content="".join(reasoning) or None,
                thinking_blocks=thinking or None,
                tool_calls=calls or None,
                finish_reason=finish,
                is_truncated=stop == "max_tokens",
            ),
        )
