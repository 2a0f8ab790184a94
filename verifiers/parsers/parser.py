"""The base parser: how the answer is read out of a model's completion.

A parser turns the model's text into the value rewards compare with the gold answer.
``Parser`` returns the last assistant message's text, passed through ``extract_fn``; subclasses
read XML fields (:class:`~verifiers.XMLParser`) or drop thinking
(:class:`~verifiers.ThinkParser`, :class:`~verifiers.MaybeThinkParser`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from verifiers.parsers.extract import extract_boxed_answer, extract_hash_answer
from verifiers.types import Messages

__all__ = ["Parser", "content_text", "identity"]


def identity(text: str) -> str:
    """The default ``extract_fn``: the text unchanged."""
    return text


def _field(message: Any, name: str) -> Any:
    if isinstance(message, dict):
        return message.get(name)
    return getattr(message, name, None)


def content_text(content: Any) -> str:
    """A message's ``content`` as text: strings as is, the text parts of a content list joined
    with spaces, anything else (``None``, images only) as ``""``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        chunks: list[str] = []
        for part in content:
            text = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
            if isinstance(text, str) and (
                not isinstance(part, dict) or part.get("type", "text") == "text"
            ):
                chunks.append(text)
        return " ".join(chunks)
    return ""


def _unwrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


class Parser:
    """Reads the answer out of a completion.

    ``extract_fn`` post-processes the text (for example :func:`~verifiers.extract_boxed_answer`).
    ``parse(text)`` returns ``extract_fn(text)``; ``parse_answer(completion)`` parses the last
    assistant message (or the string itself for completion-style prompts).
    """

    def __init__(self, extract_fn: Callable[[str], str] = identity) -> None:
        if not callable(extract_fn):
            from verifiers.errors import ConfigError

            raise ConfigError(
                f"extract_fn must be a callable taking the text, not {type(extract_fn).__name__}"
            )
        self.extract_fn = extract_fn
        self.logger = logging.getLogger(f"verifiers.parsers.{type(self).__name__}")

    def parse(self, text: str) -> Any:
        """The parsed value of one text."""
        return self.extract_fn(text)

    # -- messages -----------------------------------------------------------------------------

    @staticmethod
    def _by_role(completion: Messages, role: str) -> Messages:
        return [m for m in completion if _field(m, "role") == role]

    def get_assistant_messages(self, completion: Messages) -> Messages:
        """The assistant messages of ``completion``, in order."""
        return self._by_role(completion, "assistant")

    def get_user_messages(self, completion: Messages) -> Messages:
        """The user messages of ``completion``, in order."""
        return self._by_role(completion, "user")

    def get_system_messages(self, completion: Messages) -> Messages:
        """The system messages of ``completion``, in order."""
        return self._by_role(completion, "system")

    def get_tool_messages(self, completion: Messages) -> Messages:
        """The tool messages of ``completion``, in order."""
        return self._by_role(completion, "tool")

    @staticmethod
    def message_text(message: Any) -> str:
        """The text content of one message (dict or object)."""
        return content_text(_field(message, "content"))

    def _assistant_texts(self, completion: Messages) -> list[str]:
        """Texts of the assistant messages that have text (tool-call-only turns skipped)."""
        texts = []
        for m in completion:
            if _field(m, "role") != "assistant":
                continue
            text = content_text(_field(m, "content"))
            if text.strip() or not _field(m, "tool_calls"):
                texts.append(text)
        return texts

    def parse_answer(self, completion: Messages | str) -> Any:
        """The answer in ``completion``: what :meth:`parse` makes of the last assistant
        message's text (returned as it is, also when ``parse`` returns a dict or a number), or
        ``None`` when there is no assistant message."""
        if isinstance(completion, str):
            return self.parse(completion)
        for m in reversed(completion):
            if _field(m, "role") == "assistant":
                return self.parse(content_text(_field(m, "content")))
        return None

    # -- format -------------------------------------------------------------------------------

    def get_format_reward_func(self) -> Callable[..., float]:
        """A reward function ``(completion) -> float`` scoring the completion's format in
        [0, 1]. The base parser has no format: every completion scores 1.0."""

        def format_reward_func(completion: Messages | str) -> float:
            return 1.0

        return format_reward_func

    def _format_reward(self, score: Callable[[str], float]) -> Callable[..., float]:
        """A reward function ``(completion) -> float``: the mean ``score`` of the assistant
        messages with text (tool-call-only turns skipped), 0.0 when there are none."""

        def format_reward_func(completion: Messages | str) -> float:
            texts = (
                [completion] if isinstance(completion, str) else self._assistant_texts(completion)
            )
            if not texts:
                return 0.0
            return sum(score(t) for t in texts) / len(texts)

        return format_reward_func

    def format_answer(self, answer: str) -> str:
        """The text a perfect model would write for the gold ``answer``: parsing it gives the
        answer back and the format reward is 1.0. Used by the built-in ``oracle`` model."""
        return self.wrap_for_extract(answer)

    def wrap_for_extract(self, answer: str) -> str:
        """``answer`` in the form ``extract_fn`` reads: ``\\boxed{answer}`` for
        :func:`~verifiers.extract_boxed_answer`, ``#### answer`` for
        :func:`~verifiers.extract_hash_answer`, the answer itself otherwise."""
        fn = _unwrap(self.extract_fn)
        if fn is extract_boxed_answer:
            return f"\\boxed{{{answer}}}"
        if fn is extract_hash_answer:
            return f"#### {answer}"
        return answer


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
