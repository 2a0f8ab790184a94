"""Plain-text extractors used as a parser's ``extract_fn``, and the thinking-block stripper.

- :func:`extract_boxed_answer` returns the content of the last ``\\boxed{...}`` (nested braces
  are balanced: ``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``).
- :func:`extract_hash_answer` returns the text after GSM8K's ``####`` marker.
- :func:`strip_think` removes ``<think>...</think>`` blocks so that answers written while
  thinking are never taken as the final answer.
"""

from __future__ import annotations

__all__ = ["extract_boxed_answer", "extract_hash_answer", "strip_think"]

_BOXED_PREFIXES = ("\\boxed", "\\fbox")
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def _boxed_content(text: str, start: int) -> tuple[str, int] | None:
    """Content of the box whose ``\\boxed``/``\\fbox`` keyword ends at ``start``.

    Handles ``\\boxed{...}`` with nested braces and the brace-less form ``\\boxed 5``.
    Returns ``(content, end_index)`` or ``None`` when the box is not closed.
    """
    i = start
    n = len(text)
    while i < n and text[i] == " ":
        i += 1
    if i >= n:
        return None
    if text[i] != "{":
        if i == start:  # "\boxedfoo": another command, not a box
            return None
        j = i
        while j < n and not text[j].isspace() and text[j] not in "$\\":
            j += 1
        return (text[i:j], j) if j > i else None
    depth = 0
    for j in range(i, n):
        c = text[j]
        if c == "{" and (j == 0 or text[j - 1] != "\\"):
            depth += 1
        elif c == "}" and (j == 0 or text[j - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
    return None


def extract_boxed_answer(text: str, strict: bool = False) -> str:
    """The content of the last closed ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``.

    Without a closed box, returns ``text`` unchanged (classic behaviour, so the function also
    works as a general extractor) or ``""`` when ``strict`` is true (for scoring, where a
    missing box must not match).
    """
    best: tuple[int, str] | None = None
    for prefix in _BOXED_PREFIXES:
        pos = text.rfind(prefix)
        while pos != -1:
            found = _boxed_content(text, pos + len(prefix))
            if found is not None:
                if best is None or pos > best[0]:
                    best = (pos, found[0])
                break
            pos = text.rfind(prefix, 0, pos)
    if best is None:
        return "" if strict else text
    return best[1].strip()


def extract_hash_answer(text: str) -> str:
    """The answer after GSM8K's ``####`` marker (the last one), stripped; ``text`` if absent."""
    _, sep, tail = text.rpartition("####")
    if not sep:
        return text
    return tail.strip()


def strip_think(text: str) -> str:
    """``text`` without its thinking.

    - ``<think>...</think>`` blocks are removed;
    - a ``</think>`` without an opening tag before it (chat templates that put ``<think>`` in
      the prompt) removes everything up to it;
    - an unclosed ``<think>`` (the model ran out of tokens while thinking) removes everything
      after it.
    """
    if THINK_CLOSE not in text and THINK_OPEN not in text:
        return text
    first_open = text.find(THINK_OPEN)
    orphan_close = text.rfind(THINK_CLOSE, 0, len(text) if first_open == -1 else first_open)
    pos = 0 if orphan_close == -1 else orphan_close + len(THINK_CLOSE)
    parts: list[str] = []
    while True:
        start = text.find(THINK_OPEN, pos)
        if start == -1:
            parts.append(text[pos:])
            break
        parts.append(text[pos:start])
        end = text.find(THINK_CLOSE, start + len(THINK_OPEN))
        if end == -1:
            break
        pos = end + len(THINK_CLOSE)
    return "".join(parts)
