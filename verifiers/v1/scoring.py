"""Scoring helpers for v1 tasks: boxed answers (math-verified), judge-verdict parsing, stdout
comparison, pytest outcomes, an answer read from a file or the last reply."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from verifiers.v1.errors import SandboxError

if TYPE_CHECKING:
    from verifiers.v1.trace import Trace

__all__ = [
    "ANSI_RE",
    "BOXED_START",
    "PYTEST_OUTCOMES",
    "compare_stdout_results",
    "extract_boxed_answer",
    "parse_judge_choice",
    "parse_pytest_outcomes",
    "read_answer_file_or_last_reply",
    "verify_boxed_math_answer",
]

BOXED_START = "\\boxed{"
"""What opens a boxed answer."""
ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
"""An ANSI escape sequence (terminal colours), stripped from pytest output before parsing."""
PYTEST_OUTCOMES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
"""The outcomes a pytest summary line starts with."""
_WITH_REASON = frozenset({"FAILED", "ERROR", "XFAIL", "XPASS"})


def extract_boxed_answer(text: str, strict: bool = False) -> str:
    """The contents of the last ``\\boxed{...}`` (nested braces allowed); without one, ``text``
    itself (or ``""`` when ``strict``)."""
    at = text.rfind(BOXED_START)
    if at >= 0:
        depth, begin = 0, at + len(BOXED_START)
        for i in range(begin, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth < 0:
                return text[begin:i]
    return "" if strict else text


async def read_answer_file_or_last_reply(runtime: Any, path: str, trace: Trace) -> str:
    """The answer the agent wrote to ``path`` in ``runtime`` (decoded, stripped), or the
    trace's last reply when the file is missing, unreadable or blank."""
    try:
        answer = (await runtime.read(path)).decode(errors="replace").strip()
    except (OSError, SandboxError):
        answer = ""
    return answer or trace.last_reply


def verify_boxed_math_answer(
    response: str | None, answer: str, *, timeout_seconds: int = 5
) -> float:
    """1.0 when the last ``\\boxed{}`` of ``response`` (after any ``</think>``) is the same
    math as ``answer`` (its own ``\\boxed{}`` contents, else the whole of it) by
    math-verify, else 0.0: also for no response, an unfinished ``<think>``, no boxed answer,
    an expression that does not parse, or a parse or check over ``timeout_seconds``."""
    if not response or ("<think>" in response and "</think>" not in response):
        return 0.0
    predicted = extract_boxed_answer(response.rsplit("</think>", 1)[-1], strict=True).strip()
    gold = (extract_boxed_answer(answer, strict=True) or answer).strip()
    if not predicted or not gold:
        return 0.0
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    try:
        parsed_gold = parse(f"\\boxed{{{gold}}}", parsing_timeout=timeout_seconds)
        parsed = parse(f"\\boxed{{{predicted}}}", parsing_timeout=timeout_seconds)
        return float(verify(parsed_gold, parsed, timeout_seconds=timeout_seconds))
    except (Exception, TimeoutException):  # an answer that cannot be checked scores 0
        return 0.0


def parse_judge_choice(content: str | None, choices: Sequence[str] = ("A", "B", "C")) -> str | None:
    """The choice a judge's reply settles on, or None. In order of precedence: the last line
    starting ``Final judgment/answer/verdict:`` directly followed by a choice; the last
    ``\\boxed{}`` answer; the first choice after a verdict label; the last choice mentioned.
    An unfinished ``<think>`` block is no answer."""
    if not content or ("<think>" in content and "</think>" not in content):
        return None
    text = content.rsplit("</think>", 1)[-1].strip()
    by_upper = {c.upper(): c for c in choices}
    word = r"(?<!\w)(" + "|".join(re.escape(c) for c in by_upper) + r")(?!\w)"
    upper = text.upper()
    finals = re.findall(
        r"^[ \t]*FINAL[ \t]+(?:JUDGMENT|ANSWER|VERDICT)[ \t]*(?:IS[ \t]*)?[:\-]?[ \t]*" + word,
        upper,
        re.MULTILINE,
    )
    if finals:
        return by_upper[finals[-1]]
    boxed = extract_boxed_answer(text, strict=True).strip()
    if boxed:
        upper = boxed.upper()
    label = re.search(
        r"(?:^|\n)\s*(?:FINAL\s+)?(?:JUDGMENT|VERDICT|ANSWER)\s*(?:IS\s*)?[:\-]?\s*", upper
    )
    if label:
        found = re.search(word, upper[label.end() :])
        return by_upper[found.group(1)] if found else None
    mentioned = re.findall(word, upper)
    return by_upper[mentioned[-1]] if mentioned else None


def _number(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def compare_stdout_results(exec_stdout: str, expected: str, *, tolerance: float = 1e-3) -> bool:
    """Whether a program's stdout matches the expected output: equal up to whitespace, or the
    same tokens with numbers within ``tolerance``."""
    got, want = exec_stdout.split(), expected.split()
    if got == want:
        return True
    if len(got) != len(want) or not got:
        return False
    for a, b in zip(got, want, strict=True):
        if a == b:
            continue
        x, y = _number(a), _number(b)
        if x is None or y is None or abs(x - y) > tolerance + 1e-12:
            return False
    return True


def parse_pytest_outcomes(output: str | None) -> dict[str, str]:
    """``{node id: outcome}`` from pytest's ``-rA``/``-v`` lines (``PASSED path::test`` ...),
    with a summary row's `` - reason`` removed."""
    outcomes: dict[str, str] = {}
    for line in ANSI_RE.sub("", output or "").splitlines():
        parts = line.strip().split(maxsplit=1)
        if len(parts) != 2 or parts[0] not in PYTEST_OUTCOMES or parts[1].startswith("["):
            continue
        outcome, node = parts
        if outcome in _WITH_REASON and " - " in node:
            pieces = node.split(" - ")
            for n in range(1, len(pieces)):
                head = " - ".join(pieces[:n])
                if head.count("[") == head.count("]"):
                    node = head
                    break
        outcomes[node.rstrip()] = outcome
    return outcomes
