"""An in-process model for tests: replies from a script or a function, no network."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from verifiers.clients._wire import build_request, parse_response
from verifiers.clients.base import Client
from verifiers.testing.server import Reply, build_chat_completion, build_completion
from verifiers.types import Messages, MessageType, ModelResponse, SamplingArgs

__all__ = ["ScriptedCall", "ScriptedClient"]

ScriptItem = Reply | BaseException | type[BaseException]
ScriptResponder = Callable[..., ScriptItem | Awaitable[ScriptItem]]

_RESPONDER_KEYWORDS = ("model", "sampling_args", "tools", "message_type")


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One recorded :meth:`ScriptedClient.get_response` call (``prompt`` is a snapshot)."""

    prompt: Messages | str
    model: str
    sampling_args: SamplingArgs | None
    tools: list[dict[str, Any]] | None
    message_type: MessageType


class ScriptedClient(Client):
    """A :class:`~verifiers.Client` that answers from a script, for tests.

    Args:
        replies: consumed in order, one per call. Each is what the test server's responders
            return (a string, ``None`` for an empty message, or a dict with ``content``,
            ``tool_calls`` ``[{"name", "arguments"}]``, ``reasoning_content``,
            ``finish_reason``), or an exception (instance or class) to raise from that call.
        responder: instead of ``replies``, ``responder(prompt, **kw)`` returns the reply (sync
            or async). It receives those of ``model``, ``sampling_args``, ``tools`` and
            ``message_type`` that its signature names (all of them with ``**kw``).

    The answer goes through the same response builder as :class:`OpenAITestServer` and the
    same parser as the HTTP clients, so token ids (with ``sampling_args={"extra_body":
    {"return_token_ids": True}}``), logprobs, ``max_tokens`` truncation and the
    empty-response error behave exactly as over HTTP. Every call is recorded in
    :attr:`calls`; running out of replies raises ``AssertionError`` naming the call.
    """

    def __init__(
        self,
        replies: Iterable[ScriptItem] | None = None,
        *,
        responder: ScriptResponder | None = None,
    ) -> None:
        if (replies is None) == (responder is None):
            raise TypeError("ScriptedClient needs exactly one of replies or responder")
        self._replies = list(replies) if replies is not None else None
        self._responder = responder
        self._keywords: tuple[str, ...] = ()
        if responder is not None:
            params = inspect.signature(responder).parameters.values()
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
                self._keywords = _RESPONDER_KEYWORDS
            else:
                names = {p.name for p in params}
                self._keywords = tuple(k for k in _RESPONDER_KEYWORDS if k in names)
        self.calls: list[ScriptedCall] = []

    @property
    def remaining(self) -> int:
        """Replies not yet used (0 for a responder)."""
        return len(self._replies) if self._replies is not None else 0

    async def _next(self, call: ScriptedCall) -> ScriptItem:
        if self._replies is not None:
            if not self._replies:
                raise AssertionError(
                    f"ScriptedClient ran out of replies at call {len(self.calls)} "
                    f"({len(self.calls) - 1} scripted); add more replies to the script"
                )
            return self._replies.pop(0)
        assert self._responder is not None
        kwargs = {k: getattr(call, k) for k in self._keywords}
        item = self._responder(call.prompt, **kwargs)
        if inspect.isawaitable(item):
            item = await item
        return item

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        _, body, _ = build_request(prompt, model, sampling_args, tools, message_type)
        snapshot: Messages | str = list(prompt) if isinstance(prompt, list) else prompt
        call = ScriptedCall(snapshot, model, sampling_args, tools, message_type)
        self.calls.append(call)
        item = await self._next(call)
        if isinstance(item, BaseException) or (
            isinstance(item, type) and issubclass(item, BaseException)
        ):
            raise item
        index = len(self.calls) - 1
        if message_type == "chat":
            payload = build_chat_completion(body, item, index)
        else:
            payload = build_completion(body, item, index)
        return parse_response(payload, message_type)
