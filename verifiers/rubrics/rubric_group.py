"""Several rubrics scored as one: their functions, weights and class objects kept apart,
their values summed into one reward and one set of metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verifiers.errors import ConfigError
from verifiers.parsers.parser import Parser
from verifiers.rubrics.reward_calls import RewardCall
from verifiers.rubrics.rubric import Rubric

__all__ = ["RubricGroup"]


class RubricGroup(Rubric):
    """Scores with every rubric in ``rubrics``: the reward is the sum of their weighted sums,
    metrics hold every function of every rubric (functions of the same name in several rubrics
    add up in one metric, as in 0.3.x). Each function keeps its own rubric's parser, class
    objects and ``score_on_error``.

    ``parser`` defaults to the first rubric's parser.
    """

    def __init__(self, rubrics: list[Rubric], parser: Parser | None = None) -> None:
        if not rubrics:
            raise ConfigError("RubricGroup must have at least one rubric")
        for r in rubrics:
            if not isinstance(r, Rubric):
                raise ConfigError(f"RubricGroup takes Rubric objects, not {type(r).__name__}")
        self.rubrics = list(rubrics)
        super().__init__(parser=parser if parser is not None else rubrics[0].parser)

    def _registrations(self) -> list[tuple[Callable[..., Any], float, bool]]:
        return [reg for r in self.rubrics for reg in r._registrations()]

    def _entries(self) -> list[RewardCall]:
        entries = []
        for source, r in enumerate(self.rubrics):
            for e in r._entries():
                e.source = source
                entries.append(e)
        return entries

    def _key(self) -> object:
        return tuple(r._key() for r in self.rubrics)

    def _add(self, func: Callable[..., Any], weight: float, group: bool | None) -> None:
        """Functions added to the group go to its first rubric (classic behaviour)."""
        assert self.rubrics, "RubricGroup must have at least one rubric"
        self.rubrics[0]._add(func, weight, group)

    def add_class_object(self, name: str, obj: Any) -> None:
        """Make ``obj`` available to the functions of every rubric in the group."""
        super().add_class_object(name, obj)
        for r in self.rubrics:
            r.add_class_object(name, obj)

    async def cleanup(self, state: Any) -> None:
        for r in self.rubrics:
            await r.cleanup(state)
        await super().cleanup(state)

    async def teardown(self) -> None:
        for r in self.rubrics:
            await r.teardown()
        await super().teardown()


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
