"""The classic (0.3.x) client base class: ``verifiers.clients.client.Client``.

This module is that path here too (:mod:`verifiers.classic.aliases` serves it), so the core
(:mod:`verifiers.clients`) does not contain it.

A classic client converts between verifiers' types and one vendor's native types in five
steps, and :meth:`Client.get_response` runs them in order::

    to_native_prompt -> to_native_tools -> get_native_response
        -> raise_from_native_response -> from_native_response

It is also a :class:`verifiers.Client`: environments here accept it wherever they accept a
client, and read the classic :class:`~verifiers.types.Response` it returns through
:func:`~verifiers.model_types.to_model_response`. Errors: a verifiers error passes through, as do authentication and
permission errors of the ``openai`` (and, where installed, ``anthropic``) packages, so a bad
key stops a run instead of being counted as a model failure; anything else is raised as a
:class:`~verifiers.ModelError` whose ``__cause__`` is the original error.
"""

from __future__ import annotations

import abc
import logging
import time
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from verifiers.clients.interface import Client as _BaseClient
from verifiers.errors import Error, ModelError
from verifiers.model_types import (
    Messages,
    ModelResponse,
    SamplingArgs,
    Usage,
    to_model_response,
)

if TYPE_CHECKING:
    from verifiers.classic.models import ClientConfig, Response, Tool
    from verifiers.classic.types import FinishReason

# and AUTH_ERRORS, on first use
__all__ = ["Client", "auth_errors", "to_classic_response", "to_model_response"]

ClientT = TypeVar("ClientT")
MessagesT = TypeVar("MessagesT")
ResponseT = TypeVar("ResponseT")
ToolT = TypeVar("ToolT")


def auth_errors() -> tuple[type[Exception], ...]:
    """The vendor packages' authentication and permission errors (of those installed)."""
    found: list[type[Exception]] = []
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a dependency
        pass
    else:
        found += [openai.AuthenticationError, openai.PermissionDeniedError]
    try:
        import anthropic
    except ImportError:
        pass
    else:
        found += [anthropic.AuthenticationError, anthropic.PermissionDeniedError]
    return tuple(found)


def _auth_errors_attr(name: str) -> Any:
    # ``AUTH_ERRORS`` imports the vendor packages: only when asked for
    if name == "AUTH_ERRORS":
        return auth_errors()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _as_tool(tool: Any) -> Tool:
    """A ``vf.Tool`` from a ``vf.Tool`` or an OpenAI function-tool schema."""
    from verifiers.classic.models import Tool

    if isinstance(tool, Tool):
        return tool
    fn = tool.get("function", tool) if isinstance(tool, dict) else tool
    return Tool(
        name=fn["name"],
        description=fn.get("description", ""),
        parameters=fn.get("parameters", {}),
        **({"strict": fn["strict"]} if fn.get("strict") is not None else {}),
    )


class Client(_BaseClient, Generic[ClientT, MessagesT, ResponseT, ToolT]):
    """Base of classic clients. Subclasses implement the conversion steps (and
    :meth:`setup_client` to build the native client from a ``ClientConfig``)."""

    def __init__(self, client_or_config: Any) -> None:
        from verifiers.classic.models import ClientConfig

        self.logger = logging.getLogger(f"{__name__}.{type(self).__name__}")
        self._config: ClientConfig | None
        if isinstance(client_or_config, ClientConfig):
            self._config = client_or_config
            self._client = self.setup_client(client_or_config)
        else:
            self._config = None
            self._client = client_or_config

    @property
    def client(self) -> ClientT:
        return self._client  # type: ignore[no-any-return]

    @property
    def config(self) -> ClientConfig | None:
        return self._config

    @abc.abstractmethod
    def setup_client(self, config: ClientConfig) -> ClientT:
        """The native client for ``config``."""

    @abc.abstractmethod
    async def to_native_tool(self, tool: Tool) -> ToolT:
        """One ``vf.Tool`` in the vendor's tool format."""

    @abc.abstractmethod
    async def to_native_prompt(self, messages: Messages) -> tuple[MessagesT, dict[str, Any]]:
        """The vendor's prompt for ``messages``, and extra keyword arguments for
        :meth:`get_native_response`."""

    @abc.abstractmethod
    async def get_native_response(
        self,
        prompt: MessagesT,
        model: str,
        sampling_args: SamplingArgs,
        tools: list[ToolT] | None = None,
        **kwargs: Any,
    ) -> ResponseT:
        """Call the vendor's API."""

    @abc.abstractmethod
    async def raise_from_native_response(self, response: ResponseT) -> None:
        """Raise a :class:`~verifiers.ModelError` when ``response`` cannot be used."""

    @abc.abstractmethod
    async def from_native_response(self, response: ResponseT) -> Response:
        """The classic ``vf.Response`` of a native response."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the native client, where that applies."""

    async def to_native_tools(self, tools: list[Any] | None) -> list[ToolT] | None:
        if tools is None:
            return None
        return [await self.to_native_tool(_as_tool(t)) for t in tools]

    def _headers_from_state(self, state: Any) -> dict[str, str]:
        mapping = getattr(self._config, "extra_headers_from_state", None) if self._config else None
        if not mapping or not state:
            return {}
        headers = {}
        for header, key in mapping.items():
            value = state.get(key)
            if value is not None:
                headers[header] = str(value)
        return headers

    async def get_response(  # type: ignore[override]
        self,
        prompt: Messages,
        model: str,
        sampling_args: SamplingArgs | None = None,
        tools: list[Any] | None = None,
        **kwargs: Any,
    ) -> Response:
        """Run the five steps for one model call (see the module docstring for errors)."""
        kwargs.pop("message_type", None)  # verifiers' Client keyword; the prompt's type decides
        try:
            headers = self._headers_from_state(kwargs.get("state"))
            if headers:
                kwargs["extra_headers"] = headers
            native_prompt, extra = await self.to_native_prompt(prompt)
            native_tools = await self.to_native_tools(tools)
            native = await self.get_native_response(
                native_prompt, model, dict(sampling_args or {}), native_tools, **extra, **kwargs
            )
            await self.raise_from_native_response(native)
            return await self.from_native_response(native)
        except Error:
            raise
        except Exception as e:
            if isinstance(e, auth_errors()):
                raise
            raise ModelError(f"{type(e).__name__}: {e}") from e


_FINISH_REASONS = frozenset({"stop", "length", "tool_calls"})


def to_classic_response(response: Any) -> Response:
    """The classic ``vf.Response`` of a :class:`~verifiers.types.ModelResponse` (what this
    SDK's clients return); a classic response is returned unchanged. Token ids, when the
    server returned them, are kept in ``message.tokens``."""
    from verifiers.classic.models import Response, ResponseMessage, ResponseTokens

    if not isinstance(response, ModelResponse):
        return response  # type: ignore[no-any-return]
    message = response.message
    finish = cast(
        "FinishReason",
        response.finish_reason if response.finish_reason in _FINISH_REASONS else None,
    )
    tokens = None
    prompt_ids, completion_ids = response.prompt_token_ids, response.completion_token_ids
    if prompt_ids is not None and completion_ids is not None:
        logprobs = response.completion_logprobs
        tokens = ResponseTokens(
            prompt_ids=list(prompt_ids),
            prompt_mask=[0] * len(prompt_ids),
            completion_ids=list(completion_ids),
            completion_mask=[1] * len(completion_ids),
            completion_logprobs=list(logprobs) if logprobs is not None else [],
        )
    usage = response.usage
    return Response(
        id=response.id or "",
        created=int(time.time()),
        model=response.model or "",
        usage=Usage(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            total_tokens=usage.total_tokens,
        ),
        message=ResponseMessage(
            content=message.get("content"),
            reasoning_content=message.get("reasoning_content"),
            tool_calls=list(message.get("tool_calls") or []) or None,
            finish_reason=finish,
            is_truncated=response.finish_reason == "length",
            tokens=tokens,
        ),
    )


# the names 0.3.x's version of this module imports, on first use
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__, _auth_errors_attr)
