"""Token usage helpers of 0.3.x's ``verifiers.utils.usage_utils``: the token counts of a classic
``vf.Response``, a running total per rollout, and the context-size metrics of a trajectory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from verifiers.classic.types import TokenUsage

__all__ = [
    "StateUsageTracker",
    "compute_context_token_metrics",
    "response_usage_tokens",
    "usage_tokens",
]


def usage_tokens(usage: Any) -> tuple[int, int]:
    """(prompt tokens, completion tokens) of a usage record (object or mapping); negative
    counts are a ``ValueError``."""
    if isinstance(usage, Mapping):
        prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    else:
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
    if prompt < 0 or completion < 0:
        raise ValueError(f"token counts must be non-negative, got {prompt} and {completion}")
    return int(prompt), int(completion)


def response_usage_tokens(response: Any) -> tuple[int, int]:
    """(prompt tokens, completion tokens) of a response; ``(0, 0)`` when it has no usage."""
    usage = getattr(response, "usage", None)
    return (0, 0) if usage is None else usage_tokens(usage)


class StateUsageTracker:
    """The input and output tokens of one rollout so far, with a read-only live view."""

    __slots__ = ("_seen", "_totals", "_view")

    def __init__(self) -> None:
        self._seen = False
        self._totals: dict[str, float] = {"input_tokens": 0.0, "output_tokens": 0.0}
        self._view = MappingProxyType(self._totals)

    @property
    def usage(self) -> Mapping[str, float]:
        return self._view

    def increment(
        self, input_tokens: float = 0, output_tokens: float = 0, *, mark_seen: bool = True
    ) -> None:
        add_in, add_out = float(input_tokens or 0), float(output_tokens or 0)
        if add_in < 0 or add_out < 0:
            raise ValueError("token usage increments must be non-negative")
        self._seen = self._seen or mark_seen
        self._totals["input_tokens"] += add_in
        self._totals["output_tokens"] += add_out

    def increment_from_response(self, response: Any) -> None:
        """Add a response's usage (nothing when it reported none)."""
        if getattr(response, "usage", None) is not None:
            self.increment(*response_usage_tokens(response))

    def snapshot(self) -> TokenUsage | None:
        """The totals, or ``None`` when no usage was ever recorded."""
        if not self._seen:
            return None
        return TokenUsage(
            input_tokens=self._totals["input_tokens"], output_tokens=self._totals["output_tokens"]
        )


def compute_context_token_metrics(trajectory: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """For a linear rollout: ``final_output_tokens``, the tokens the model generated over all
    turns, and ``final_input_tokens``, the rest of the last turn's context (its prompt plus
    completion, less the generated tokens). Steps whose response has no usage are skipped."""
    counted = [
        response_usage_tokens(step["response"])
        for step in trajectory
        if getattr(step.get("response"), "usage", None) is not None
    ]
    if not counted:
        return {"final_output_tokens": 0, "final_input_tokens": 0}
    generated = sum(completion for _, completion in counted)
    last_prompt, last_completion = counted[-1]
    return {
        "final_output_tokens": generated,
        "final_input_tokens": max(0, last_prompt + last_completion - generated),
    }


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
