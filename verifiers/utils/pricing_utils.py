"""0.3.x's token-cost arithmetic for ``vf-eval`` (prices in US dollars per million tokens).

``fetch_prime_pricing`` (Prime Intellect's hosted price list) is not available here: it raises
a ``ConfigError`` saying so (:mod:`verifiers.classic.unavailable`); pass prices yourself.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

__all__ = ["compute_cost_usd", "compute_eval_cost", "format_cost_usd", "is_prime_inference_url"]

logger = logging.getLogger(__name__)

_PER_TOKEN = 1_000_000


def _number(value: object) -> float | None:
    """A number, or a string holding one, as a float; ``None`` otherwise."""
    if isinstance(value, bool | int | float | str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def is_prime_inference_url(base_url: str) -> bool:
    """Whether ``base_url`` is Prime Intellect's inference service."""
    return "pinference.ai" in base_url.lower()


def compute_eval_cost(
    usage: Mapping[str, Any] | None, pricing: Mapping[str, float] | None
) -> dict[str, float] | None:
    """``{"input_usd", "output_usd", "total_usd"}`` for a token usage (``input_tokens``,
    ``output_tokens``, missing ones 0) at ``pricing`` (``input_usd_per_mtok``,
    ``output_usd_per_mtok``); ``None`` without both or with a non-numeric count."""
    if usage is None or pricing is None:
        return None
    tokens_in = _number(usage.get("input_tokens", 0.0))
    tokens_out = _number(usage.get("output_tokens", 0.0))
    if tokens_in is None or tokens_out is None:
        return None
    input_usd = tokens_in * pricing["input_usd_per_mtok"] / _PER_TOKEN
    output_usd = tokens_out * pricing["output_usd_per_mtok"] / _PER_TOKEN
    return {"input_usd": input_usd, "output_usd": output_usd, "total_usd": input_usd + output_usd}


def compute_cost_usd(
    usage: Mapping[str, Any] | None, pricing: Mapping[str, float] | None
) -> float | None:
    """The total of :func:`compute_eval_cost`, or ``None``."""
    cost = compute_eval_cost(usage, pricing)
    return None if cost is None else cost["total_usd"]


def format_cost_usd(cost_usd: float) -> str:
    """Dollars with cents from $1 up, four decimals below."""
    return f"${cost_usd:.2f}" if cost_usd >= 1 else f"${cost_usd:.4f}"


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
