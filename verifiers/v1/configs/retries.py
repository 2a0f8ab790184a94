"""Retry rules for failed agent runs and episodes: which recorded errors rerun, how often."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StrictInt, field_validator

from verifiers.v1.configs import Config

__all__ = ["RetryBudget", "RetryConfig", "RetryRule", "StatusCode"]

StatusClass = Literal["1xx", "2xx", "3xx", "4xx", "5xx"]

StatusCode = Annotated[StrictInt, Field(ge=100, le=599)] | StatusClass
"""An HTTP status a retry rule matches: one code (an int from 100 to 599) or a class
(``"4xx"``, ``"5xx"``, ...)."""


class RetryRule(Config):
    """Matches an error when every given field matches; the first matching rule applies."""

    type: str | None = None
    """The recorded exception class name, e.g. ``ModelError``."""
    status_code: list[StatusCode] | None = None
    """Any of these statuses or status classes; an error with no status never matches."""
    message: str | None = None
    """A regex searched in the error message."""
    max_retries: int = Field(ge=0)

    @field_validator("message")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"message {value!r} is not a valid regex: {exc}") from exc
        return value

    def matches(self, error_type: str, message: str, status_code: int | None) -> bool:
        if self.type is not None and self.type != error_type:
            return False
        if self.message is not None and not re.search(self.message, message):
            return False
        if self.status_code is not None:
            if status_code is None:
                return False
            wanted = {str(c) for c in self.status_code}
            if str(status_code) not in wanted and f"{status_code // 100}xx" not in wanted:
                return False
        return True


class RetryConfig(Config):
    """Ordered rules; an error no rule matches gets ``max_retries``."""

    max_retries: int = Field(default=0, ge=0)
    rules: list[RetryRule] = Field(default_factory=list)

    def rule_for(
        self, error_type: str, message: str, status_code: int | None = None
    ) -> tuple[int, int]:
        """(index of the first matching rule, or -1 for none; its retry budget)."""
        for index, rule in enumerate(self.rules):
            if rule.matches(error_type, message, status_code):
                return index, rule.max_retries
        return -1, self.max_retries

    def budget(self, error_type: str, message: str, status_code: int | None = None) -> int:
        return self.rule_for(error_type, message, status_code)[1]


class RetryBudget:
    """Counts retries per rule of a :class:`RetryConfig` over one run (an agent run, or an
    episode with its reruns): :meth:`allow` says whether an error may be retried once more."""

    def __init__(self, config: RetryConfig) -> None:
        self.config = config
        self.used: dict[int, int] = {}

    def allow(self, error_type: str, message: str, status_code: int | None = None) -> bool:
        index, budget = self.config.rule_for(error_type, message, status_code)
        if self.used.get(index, 0) >= budget:
            return False
        self.used[index] = self.used.get(index, 0) + 1
        return True
