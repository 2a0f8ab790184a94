"""A classic rollout's ``state["timing"]``: the core's timing dict (``start``,
``generation_ms``, ``model_ms``, ...), which results and reports read, that also answers
0.3.x's ``RolloutTiming`` attributes: ``timing.model.spans`` (one wall-clock
:class:`~verifiers.classic.models.TimeSpan` per model call) and ``timing.env.spans`` (one per
environment reply: from the end of the model's reply to the environment's reply), as
0.3.1's per-turn timing does. The span models are built on first use (pydantic is imported
lazily)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifiers.classic.models import TimeSpans


class ClassicTiming(dict[str, Any]):
    """The timing dict with the classic span collections as attributes."""

    _model: TimeSpans | None = None
    _env: TimeSpans | None = None

    @property
    def start_time(self) -> float:
        return float(self.get("start", 0.0))

    @property
    def model(self) -> TimeSpans:
        if self._model is None:
            from verifiers.classic.models import TimeSpans

            self._model = TimeSpans()
        return self._model

    @property
    def env(self) -> TimeSpans:
        if self._env is None:
            from verifiers.classic.models import TimeSpans

            self._env = TimeSpans()
        return self._env

    def add_model_span(self, start: float, end: float) -> None:
        from verifiers.classic.models import TimeSpan

        self.model.spans.append(TimeSpan(start=start, end=end))

    def add_env_span(self, end: float | None = None) -> None:
        """An environment span from the end of the last model span (the rollout's start when
        there is none) to ``end`` (now)."""
        from verifiers.classic.models import TimeSpan

        spans = self.model.spans
        start = spans[-1].end if spans else self.start_time
        self.env.spans.append(TimeSpan(start=start, end=time.time() if end is None else end))


def classic_timing(state: Any) -> ClassicTiming | None:
    """The state's timing as a :class:`ClassicTiming` (made so in place), ``None`` when the
    state has no timing dict."""
    timing = state.get("timing") if isinstance(state, dict) else None
    if isinstance(timing, ClassicTiming):
        return timing
    if isinstance(timing, dict):
        wrapped = ClassicTiming(timing)
        state["timing"] = wrapped
        return wrapped
    return None
