"""XML-tagged answers: ``<reasoning>...</reasoning><answer>...</answer>``, read as 0.3.x reads them.

Each tag is found by the pattern ``<tag>\\s*(.*?)\\s*</tag>`` (first occurrence, or the last
with ``last=True``); ``parse_answer`` returns the answer field of the last assistant message
that has one; the format reward gives, per assistant message, 0.4 x the share of fields present,
0.2 for proper spacing, 0.2 when the message starts with the first field's tag and 0.2 when it
ends with the last field's tag. :meth:`XMLParser.parse_all` (every occurrence of every tag) is
an addition of this SDK.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from verifiers.parsers.parser import Parser, identity
from verifiers.types import Messages

__all__ = ["XMLParser"]

_PLACEHOLDER = "..."


class XMLParser(Parser):
    """Parses XML-style fields out of model text.

    ``fields`` lists the schema: a string is one tag; a tuple is one field with alternative tag
    names, the first being the canonical one used by :meth:`format`
    (``fields=["reasoning", ("code", "answer")]``). ``answer_field`` names the tag
    :meth:`parse_answer` returns.
    """

    def __init__(
        self,
        fields: list[str | tuple[str, ...]],
        answer_field: str = "answer",
        extract_fn: Callable[[str], str] = identity,
    ) -> None:
        super().__init__(extract_fn=extract_fn)
        self._fields: list[tuple[str, list[str]]] = []
        self.answer_field = answer_field
        seen: set[str] = set()
        for spec in fields:
            if isinstance(spec, str):
                canonical, alternatives = spec, [spec]
            elif isinstance(spec, tuple):
                if not spec:
                    raise ValueError("an XMLParser field tuple cannot be empty")
                if not all(isinstance(alt, str) for alt in spec):
                    raise TypeError(
                        f"all alternatives of an XMLParser field must be strings: {spec!r}"
                    )
                canonical, alternatives = spec[0], list(spec)
            else:
                raise TypeError(
                    f"each XMLParser field must be a tag name or a tuple of tag names, not {spec!r}"
                )
            if canonical in seen:
                raise ValueError(f"Duplicate field name: {canonical}")
            seen.add(canonical)
            self._fields.append((canonical, alternatives))
        self._patterns = {
            alt: re.compile(rf"<{re.escape(alt)}>\s*(.*?)\s*</{re.escape(alt)}>", re.DOTALL)
            for _, alternatives in self._fields
            for alt in alternatives
        }
        if answer_field not in self._patterns:
            self._patterns[answer_field] = re.compile(
                rf"<{re.escape(answer_field)}>\s*(.*?)\s*</{re.escape(answer_field)}>", re.DOTALL
            )
        if "think" in seen:
            self.logger.debug(
                "XMLParser fields include 'think': use it only with models that always write "
                "<think>...</think> and whose chat template does not remove it"
            )

    # -- parsing ------------------------------------------------------------------------------

    def _find(self, tag: str, text: str, strip: bool, last: bool) -> str | None:
        pattern = self._patterns[tag]
        match = None
        if last:
            for match in pattern.finditer(text):  # noqa: B007 - keep the last match
                pass
        else:
            match = pattern.search(text)
        if match is None:
            return None
        return match.group(1).strip() if strip else match.group(1)

    def parse(self, text: str, strip: bool = True, last: bool = False) -> Any:
        """An object with one attribute per allowed tag (alternatives included): the content of
        its first occurrence (``last=True``: its last), or ``None`` when the tag does not occur
        closed. Whitespace next to the tags is never part of the content."""
        return SimpleNamespace(
            **{
                alt: self._find(alt, text, strip, last)
                for _, alternatives in self._fields
                for alt in alternatives
            }
        )

    def parse_all(self, text: str, strip: bool = True) -> dict[str, list[str]]:
        """Every occurrence of every allowed tag, in order: ``{tag: [content, ...]}`` (an empty
        list for a tag that does not occur)."""
        return {
            alt: [
                m.group(1).strip() if strip else m.group(1)
                for m in self._patterns[alt].finditer(text)
            ]
            for _, alternatives in self._fields
            for alt in alternatives
        }

    def parse_answer(self, completion: Messages | str) -> str | None:
        """The answer field: of the text's last occurrence for a string, else of the last
        assistant message that has one (its first occurrence there). ``None`` when none has
        one."""
        if isinstance(completion, str):
            return self._find(self.answer_field, completion, strip=True, last=True)
        for m in reversed(self.get_assistant_messages(completion)):
            answer = self._find(self.answer_field, self.message_text(m), strip=True, last=False)
            if answer is not None:
                return answer
        return None

    # -- format -------------------------------------------------------------------------------

    def get_fields(self) -> list[str]:
        """The canonical field names, in schema order."""
        return [canonical for canonical, _ in self._fields]

    def get_format_str(self) -> str:
        """A description of the expected format, for system prompts."""
        lines = []
        for canonical, names in self._fields:
            tag = canonical if len(names) == 1 else "[ " + " | ".join(names) + " ]"
            lines.append(f"<{tag}>\n...\n</{tag}>")
        return "\n".join(lines)

    def format(self, **kwargs: Any) -> str:
        """Every field, in schema order, as ``<canonical>\\nvalue\\n</canonical>``; a value may
        be given by the canonical or an alternative name. A missing field is a ``ValueError``."""
        parts = []
        for canonical, alternatives in self._fields:
            value = kwargs.get(canonical)
            if canonical not in kwargs:
                value = next((kwargs[alt] for alt in alternatives if alt in kwargs), None)
            if value is None:
                raise ValueError(f"Missing value for field '{canonical}' (allowed: {alternatives})")
            parts.append(f"<{canonical}>\n{value}\n</{canonical}>")
        return "\n".join(parts)

    def format_answer(self, answer: str) -> str:
        """Every field filled (``...`` for fields other than the answer), the answer field with
        ``answer`` (``parse_answer`` returns the field's text as it is)."""
        answer_text = answer
        values: dict[str, str] = {}
        has_answer = False
        for canonical, alternatives in self._fields:
            if self.answer_field in alternatives:
                values[canonical] = answer_text
                has_answer = True
            else:
                values[canonical] = _PLACEHOLDER
        text = self.format(**values)
        if not has_answer:
            tag = self.answer_field
            text += f"\n<{tag}>\n{answer_text}\n</{tag}>"
        return text

    def format_score(self, text: str) -> float:
        """Format score of one message in [0, 1]: 0.4 x the share of fields present (a tag
        without parsable content counts as present), + 0.2 for proper spacing, + 0.2 when it
        starts with a tag of the first field, + 0.2 when it ends with a tag of the last field
        (0.3.x's weights)."""
        if not self._fields:
            return 0.0
        parsed = self.parse(text)
        parsed_raw = self.parse(text, strip=False)
        has_any_field = False
        spacing_ok = True
        present: set[int] = set()
        for i, (_, alternatives) in enumerate(self._fields):
            for alt in alternatives:
                if getattr(parsed, alt) is not None:
                    has_any_field = True
                    present.add(i)
                    if getattr(parsed_raw, alt) is None:
                        spacing_ok = False
                elif f"<{alt}>" in text or f"</{alt}>" in text:
                    present.add(i)
        body = text.strip()
        score = 0.0
        if has_any_field:
            score += 0.4 * len(present) / len(self._fields)
        if spacing_ok:
            score += 0.2
        if any(body.startswith(f"<{alt}>") for alt in self._fields[0][1]):
            score += 0.2
        if any(body.endswith(f"</{alt}>") for alt in self._fields[-1][1]):
            score += 0.2
        return score

    def get_format_reward_func(self) -> Callable[..., float]:
        """A reward function ``(completion) -> float``: the mean :meth:`format_score` of the
        assistant messages (0.0 when there are none)."""

        def format_reward_func(completion: Messages | str, **kwargs: Any) -> float:
            if isinstance(completion, str):
                return self.format_score(completion)
            messages = self.get_assistant_messages(completion)
            if not messages:
                return 0.0
            return sum(self.format_score(self.message_text(m)) for m in messages) / len(messages)

        return format_reward_func


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
