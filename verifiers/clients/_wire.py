"""The OpenAI wire format, shared by every client: request bodies in, :class:`ModelResponse` out.

Kept free of any HTTP library so that the ``openai``-based client, the native aiohttp client and
the in-process test double build and read exactly the same JSON.
"""

from __future__ import annotations

from typing import Any

from verifiers.errors import ConfigError, EmptyModelResponseError, InvalidModelResponseError
from verifiers.model_types import Messages, MessageType, ModelResponse, SamplingArgs, Usage

__all__ = ["RequestOptions", "build_request", "json_default", "parse_response"]

# sampling_args keys that configure the HTTP request rather than the JSON body
_REQUEST_KEYS = frozenset({"extra_body", "extra_headers", "timeout"})


class RequestOptions:
    """The non-body parts of a request taken from ``sampling_args``."""

    __slots__ = ("headers", "timeout")

    def __init__(self, headers: dict[str, str] | None, timeout: float | None) -> None:
        self.headers = headers
        self.timeout = timeout


_NO_OPTIONS = RequestOptions(None, None)


def build_request(
    prompt: Messages | str,
    model: str,
    sampling_args: SamplingArgs | None,
    tools: list[dict[str, Any]] | None,
    message_type: MessageType,
) -> tuple[str, dict[str, Any], RequestOptions]:
    """``(path, body, options)`` for one call: path is ``"/chat/completions"`` or
    ``"/completions"``.

    ``sampling_args`` go into the body as given (``None`` values are dropped, as the ``openai``
    client does for omitted arguments); ``extra_body`` is merged into the body, ``extra_headers``
    and ``timeout`` configure the request.
    """
    body: dict[str, Any] = {"model": model}
    if message_type == "chat":
        if not isinstance(prompt, list):
            raise ConfigError(
                f"a chat request needs a list of messages, got {type(prompt).__name__}; "
                "pass message_type='completion' for a plain-text prompt"
            )
        body["messages"] = prompt
        path = "/chat/completions"
    elif message_type == "completion":
        if not isinstance(prompt, str):
            raise ConfigError(
                f"a completion request needs a string prompt, got {type(prompt).__name__}; "
                "pass message_type='chat' for a list of messages"
            )
        body["prompt"] = prompt
        path = "/completions"
    else:
        raise ConfigError(f"message_type must be 'chat' or 'completion', not {message_type!r}")
    if tools:
        if message_type != "chat":
            raise ConfigError("tools need message_type='chat'")
        body["tools"] = tools
    options = _NO_OPTIONS
    if sampling_args:
        headers: dict[str, str] | None = None
        timeout: float | None = None
        for key, value in sampling_args.items():
            if value is None:
                continue
            if key in _REQUEST_KEYS:
                if key == "extra_body":
                    if not isinstance(value, dict):
                        raise ConfigError("sampling_args['extra_body'] must be a dict")
                    body.update(value)
                elif key == "extra_headers":
                    headers = {str(k): str(v) for k, v in value.items()}
                else:
                    timeout = float(value)
            else:
                body[key] = value
        if headers is not None or timeout is not None:
            options = RequestOptions(headers, timeout)
    if body.get("stream"):
        raise ConfigError("streaming is not supported by verifiers clients; drop 'stream'")
    if message_type == "completion" and isinstance(body.get("logprobs"), bool):
        # the completions API takes a count of top logprobs; 0 = only the sampled token
        if body["logprobs"]:
            body["logprobs"] = 0
        else:
            del body["logprobs"]
    return path, body, options


def json_default(obj: Any) -> Any:
    """For ``orjson.dumps(default=...)``: pydantic models (``openai`` message and tool-call
    objects that classic environments sometimes put in the history) become dicts."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _int_list(value: Any, what: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidModelResponseError(f"{what} must be a list of integers")
    return value


def _logprobs(value: Any, message_type: MessageType) -> list[float] | None:
    if not isinstance(value, dict):
        return None
    content = value.get("content")
    if isinstance(content, list):  # chat: [{"token", "logprob", ...}, ...]
        try:
            return [float(item["logprob"]) for item in content]
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidModelResponseError(f"malformed logprobs.content: {e!r}") from None
    token_logprobs = value.get("token_logprobs")  # completions
    if isinstance(token_logprobs, list):
        return [float(x) if x is not None else 0.0 for x in token_logprobs]
    return None


def _tool_calls(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise InvalidModelResponseError("message.tool_calls must be a list")
    out: list[dict[str, Any]] = []
    for i, call in enumerate(raw):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise InvalidModelResponseError(
                f"tool call {i} has no function name: expected "
                '{"id", "type": "function", "function": {"name", "arguments"}}'
            )
        args = fn.get("arguments")
        if args is None:
            args = "{}"
        elif not isinstance(args, str):
            import json

            args = json.dumps(args)
        out.append(
            {
                "id": call.get("id") or f"call_{i}",
                "type": "function",
                "function": {"name": fn["name"], "arguments": args},
            }
        )
    return out


def parse_response(data: Any, message_type: MessageType = "chat") -> ModelResponse:
    """Turn a decoded chat or completions response body into a :class:`ModelResponse`.

    Raises :class:`EmptyModelResponseError` when there is no choice or the message has neither
    content nor tool calls (a generation cut off by the length limit while still reasoning is
    returned, not raised), and :class:`InvalidModelResponseError` for any other wrong shape.
    """
    if not isinstance(data, dict):
        raise InvalidModelResponseError(
            f"expected a JSON object from the endpoint, got {type(data).__name__}"
        )
    choices = data.get("choices")
    if not choices:
        err = data.get("error")
        if err:
            raise InvalidModelResponseError(f"the endpoint answered with an error: {err}")
        raise EmptyModelResponseError("the endpoint returned no choices")
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise InvalidModelResponseError("'choices' must be a list of objects")
    choice = choices[0]
    finish_reason = choice.get("finish_reason")
    reasoning: Any = None
    tool_calls: list[dict[str, Any]] = []
    if message_type == "chat":
        raw_msg = choice.get("message")
        if not isinstance(raw_msg, dict):
            raise InvalidModelResponseError("choices[0].message is missing or not an object")
        content = raw_msg.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(
                p.get("text", "") for p in content if isinstance(p, dict) and p.get("text")
            )
        elif content is not None and not isinstance(content, str):
            raise InvalidModelResponseError("choices[0].message.content must be a string")
        raw_calls = raw_msg.get("tool_calls")
        if raw_calls:
            tool_calls = _tool_calls(raw_calls)
        reasoning = raw_msg.get("reasoning_content")
        if reasoning is None:
            reasoning = raw_msg.get("reasoning")
    else:
        content = choice.get("text")
        if content is not None and not isinstance(content, str):
            raise InvalidModelResponseError("choices[0].text must be a string")
    if not content and not tool_calls and not (reasoning and finish_reason == "length"):
        raise EmptyModelResponseError(
            f"the model returned neither content nor tool calls (finish_reason={finish_reason!r})"
        )
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning:
        message["reasoning_content"] = reasoning
    usage = Usage()
    raw_usage = data.get("usage")
    if isinstance(raw_usage, dict):
        usage.prompt_tokens = int(raw_usage.get("prompt_tokens") or 0)
        usage.completion_tokens = int(raw_usage.get("completion_tokens") or 0)
    prompt_ids = data.get("prompt_token_ids")
    if prompt_ids is None:
        prompt_ids = choice.get("prompt_token_ids")
    return ModelResponse(
        message=message,
        finish_reason=finish_reason,
        usage=usage,
        prompt_token_ids=_int_list(prompt_ids, "prompt_token_ids"),
        completion_token_ids=_int_list(choice.get("token_ids"), "choices[0].token_ids"),
        completion_logprobs=_logprobs(choice.get("logprobs"), message_type),
        model=data.get("model"),
        id=data.get("id"),
        stop_sequence=stop if isinstance(stop := choice.get("stop_reason"), str) else None,
    )


def decode_response(raw: bytes, where: str, message_type: MessageType = "chat") -> ModelResponse:
    """Parse a 200 body; a body that is not JSON is a transient ``malformed_json`` failure."""
    import orjson

    from verifiers.clients.retry import TransientError

    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise TransientError(
            "malformed_json", f"{where}: the response body is not valid JSON: {raw[:200]!r}"
        ) from None
    return parse_response(payload, message_type)
