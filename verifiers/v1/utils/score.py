"""0.4.0's home of the v1 scoring helpers (:mod:`verifiers.v1.scoring`)."""

from __future__ import annotations

from verifiers.v1.scoring import (
    ANSI_RE,
    BOXED_START,
    PYTEST_OUTCOMES,
    compare_stdout_results,
    extract_boxed_answer,
    parse_judge_choice,
    parse_pytest_outcomes,
    read_answer_file_or_last_reply,
    verify_boxed_math_answer,
)

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
