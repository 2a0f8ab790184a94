"""Parser for models that may or may not write ``<think>...</think>`` in their content."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verifiers.parsers.extract import THINK_CLOSE, THINK_OPEN, strip_think
from verifiers.parsers.parser import Parser, identity

__all__ = ["MaybeThinkParser"]


class MaybeThinkParser(Parser):
    """The answer is the text with its thinking removed (see
    :func:`~verifiers.parsers.extract.strip_think`), passed through ``extract_fn``.

    Unlike the classic parser, an unclosed ``<think>`` (the model ran out of tokens while
    thinking) does not let an answer written inside the thinking count.
    """

    def __init__(self, extract_fn: Callable[[str], str] = identity) -> None:
        super().__init__(extract_fn=extract_fn)

    def parse(self, text: str) -> Any:
        return self.extract_fn(strip_think(text).strip())

    @staticmethod
    def follows_format(text: str) -> bool:
        """Either no thinking tags and a non-empty text, or one ``<think>`` block (its opening
        tag optional, for templates that put it in the prompt) first, then a non-empty answer."""
        body = text.strip()
        opens, closes = body.count(THINK_OPEN), body.count(THINK_CLOSE)
        if opens == 0 and closes == 0:
            return bool(body)
        if closes != 1 or opens > 1 or (opens == 1 and not body.startswith(THINK_OPEN)):
            return False
        return bool(body.split(THINK_CLOSE, 1)[1].strip())

    def get_format_reward_func(self) -> Callable[..., float]:
        """A reward function ``(completion) -> float``: the share of assistant messages with
        text that follow :meth:`follows_format` (0.0 when there are none)."""
        return self._format_reward(lambda text: float(self.follows_format(text)))


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
