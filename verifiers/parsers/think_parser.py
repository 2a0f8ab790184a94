"""Parser for models that always write ``<think>...</think>`` before answering."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verifiers.parsers.extract import THINK_CLOSE, THINK_OPEN
from verifiers.parsers.parser import Parser, identity

__all__ = ["ThinkParser"]


class ThinkParser(Parser):
    """The answer is the text after ``</think>``, passed through ``extract_fn``.

    Meant for models that write their thinking in the content and always close it. Without a
    ``</think>`` the model never finished thinking: ``parse`` sees an empty text. For models
    that may or may not think (or whose server strips thinking), use
    :class:`~verifiers.MaybeThinkParser`.
    """

    def __init__(self, extract_fn: Callable[[str], str] = identity) -> None:
        super().__init__(extract_fn=extract_fn)

    def parse(self, text: str) -> Any:
        _, sep, after = text.rpartition(THINK_CLOSE)
        return self.extract_fn(after.strip() if sep else "")

    @staticmethod
    def follows_format(text: str) -> bool:
        """One ``<think>`` block opening the message, closed once, followed by a non-empty
        answer."""
        body = text.strip()
        if not body.startswith(THINK_OPEN):
            return False
        if body.count(THINK_OPEN) != 1 or body.count(THINK_CLOSE) != 1:
            return False
        return bool(body.split(THINK_CLOSE, 1)[1].strip())

    def get_format_reward_func(self) -> Callable[..., float]:
        """A reward function ``(completion) -> float``: the share of assistant messages with
        text that follow :meth:`follows_format` (0.0 when there are none)."""
        return self._format_reward(lambda text: float(self.follows_format(text)))

    def format_answer(self, answer: str) -> str:
        return f"{THINK_OPEN}\n...\n{THINK_CLOSE}\n{self.wrap_for_extract(answer)}"


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
