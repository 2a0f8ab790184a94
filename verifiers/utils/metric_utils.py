"""0.3.x's running metrics over rollout outputs (``vf-eval``'s live summary).

Each metric takes outputs one at a time (``add_output``) or in batches (``add_outputs``),
``compute()`` gives the value so far and ``reset()`` starts over. Outputs are the saved rollout
records (mappings with ``reward``, ``error``, ``token_usage``, ``metrics``, ``example_id``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "EnvMetrics",
    "ErrorRateMetric",
    "FinalInputTokensMetric",
    "FinalOutputTokensMetric",
    "InputTokensMetric",
    "MeanMetric",
    "Metric",
    "OutputTokensMetric",
    "PassAtKMetric",
    "RewardMetric",
    "TokenUsageKeyMetric",
]

Output = Mapping[str, Any]


@runtime_checkable
class Metric(Protocol):
    """What every metric here offers."""

    def add_output(self, output: Any) -> None: ...
    def add_outputs(self, outputs: list[Any]) -> None: ...
    def compute(self) -> Any: ...
    def reset(self) -> None: ...


class MeanMetric(ABC):
    """The mean of :meth:`extract` over the outputs seen (``None`` skips an output); 0.0
    before any value."""

    __slots__ = ("_count", "_sum")

    def __init__(self) -> None:
        self.reset()

    @abstractmethod
    def extract(self, output: Output) -> float | None:
        """The value this output contributes, or ``None`` to skip it."""

    def add_output(self, output: Output) -> None:
        value = self.extract(output)
        if value is None:
            return
        self._sum += value
        self._count += 1

    def add_outputs(self, outputs: Iterable[Output]) -> None:
        for output in outputs:
            self.add_output(output)

    def reset(self) -> None:
        self._sum = 0.0
        self._count = 0

    def compute(self) -> float:
        return self._sum / self._count if self._count else 0.0

    @property
    def count(self) -> int:
        """How many outputs contributed a value."""
        return self._count


class RewardMetric(MeanMetric):
    """Mean ``reward`` (a missing reward counts as 0.0; a ``None`` reward, a rollout whose
    reward function failed, is left out)."""

    def extract(self, output: Output) -> float | None:
        return output.get("reward", 0.0)  # type: ignore[no-any-return]


class ErrorRateMetric(MeanMetric):
    """Share of outputs whose ``error`` is set."""

    def extract(self, output: Output) -> float:
        return 0.0 if output.get("error") is None else 1.0


class TokenUsageKeyMetric(MeanMetric):
    """Mean of ``token_usage[_key]`` over the outputs that report it."""

    _key: str = ""

    def extract(self, output: Output) -> float | None:
        usage = output.get("token_usage")
        if not isinstance(usage, Mapping) or self._key not in usage:
            return None
        return float(usage[self._key])


class InputTokensMetric(TokenUsageKeyMetric):
    _key = "input_tokens"


class OutputTokensMetric(TokenUsageKeyMetric):
    _key = "output_tokens"


class FinalInputTokensMetric(TokenUsageKeyMetric):
    _key = "final_input_tokens"


class FinalOutputTokensMetric(TokenUsageKeyMetric):
    _key = "final_output_tokens"


class EnvMetrics:
    """A mean per key of the outputs' ``metrics`` (numbers only; other values skipped)."""

    def __init__(self) -> None:
        self.reset()

    def add_output(self, output: Output) -> None:
        for key, value in (output.get("metrics") or {}).items():
            if isinstance(value, int | float):
                total, count = self._totals.get(key, (0.0, 0))
                self._totals[key] = (total + value, count + 1)

    def add_outputs(self, outputs: Iterable[Output]) -> None:
        for output in outputs:
            self.add_output(output)

    def reset(self) -> None:
        self._totals: dict[str, tuple[float, int]] = {}

    def compute(self) -> dict[str, float]:
        return {key: total / count for key, (total, count) in self._totals.items()}


class PassAtKMetric:
    """pass@k and pass^k, averaged over the examples whose ``rollouts_per_example`` rollouts
    have all arrived, with the unbiased estimators over n rollouts of which c are correct
    (``reward >= threshold``): pass@k = 1 - C(n-c, k)/C(n, k), pass^k = C(c, k)/C(n, k);
    k runs over the powers of two up to n (none when n is 1). Keys are ``str(k)``."""

    def __init__(self, rollouts_per_example: int, threshold: float = 0.5) -> None:
        self.rollouts_per_example = rollouts_per_example
        self.threshold = threshold
        self._k_values = (
            [2**i for i in range(rollouts_per_example.bit_length())]
            if rollouts_per_example > 1
            else []
        )
        self.reset()

    def add_output(self, output: Output) -> None:
        example_id = output["example_id"]
        if example_id is None:
            raise ValueError("output['example_id'] is required.")
        if not self._k_values:
            return
        seen, correct = self._examples.get(example_id, (0, 0))
        seen += 1
        reward = output.get("reward", 0.0)
        correct += reward is not None and reward >= self.threshold  # None: the reward failed
        self._examples[example_id] = (seen, correct)
        if seen != self.rollouts_per_example:
            return
        self._complete += 1
        n = self.rollouts_per_example
        for k in self._k_values:
            total = math.comb(n, k)
            at_k = 1.0 if n - correct < k else 1.0 - math.comb(n - correct, k) / total
            self._at_k[str(k)] += at_k
            self._all_k[str(k)] += math.comb(correct, k) / total

    def add_outputs(self, outputs: Iterable[Output]) -> None:
        for output in outputs:
            self.add_output(output)

    def reset(self) -> None:
        self._examples: dict[Any, tuple[int, int]] = {}
        self._complete = 0
        self._at_k = {str(k): 0.0 for k in self._k_values}
        self._all_k = {str(k): 0.0 for k in self._k_values}

    def compute(self) -> tuple[dict[str, float], dict[str, float]]:
        """``(pass_at_k, pass_all_k)``; both empty before any example is complete."""
        if not self._complete:
            return {}, {}
        return (
            {k: v / self._complete for k, v in self._at_k.items()},
            {k: v / self._complete for k, v in self._all_k.items()},
        )


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
