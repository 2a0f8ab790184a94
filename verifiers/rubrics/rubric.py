"""Rubrics: weighted reward functions that score rollouts.

A reward function is a plain sync or async callable (function, ``functools.partial``, bound
method, callable object). It receives only the arguments it names, from:

- ``prompt``, ``completion``, ``answer``, ``info``, ``task``, ``example_id``, ``state``,
  ``parser``, and the objects added with :meth:`Rubric.add_class_object`;
- any other name is read from the rollout state (extra dataset columns), and is an error when
  missing and the parameter has no default;
- a ``**kwargs`` parameter receives all of the above.

Group reward functions (``@vf.group_reward``, ``Rubric(group_funcs=...)``, or the classic
plural-argument form) receive ``prompts``, ``completions``, ``answers``, ``infos``, ``tasks``,
``example_ids``, ``states`` (plus ``parser`` and class objects) for the N rollouts of one
example and return one number per rollout.

Scoring sets ``state["reward"]`` (the weighted sum, or ``None`` when a weighted function
raised), updates ``state["metrics"]`` with every function's value under its name (weight-0
functions are metrics; a failed function's value is ``None``) and sets
``state["reward_errors"]`` (``{"func", "type", "message", "traceback"}`` per failure).
With ``score_on_error=True`` a failed function counts 0.0 instead; its error is still recorded.

Signatures are resolved once, when the scoring plan is built (it is rebuilt only after the rubric
changes), so that scoring a rollout does no introspection (:mod:`verifiers.rubrics.reward_calls`).
0.3.x's editable ``funcs``/``weights`` lists are :mod:`verifiers.rubrics.registration_views`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableSequence, Sequence
from typing import Any

from verifiers.decorators import discover, is_group_reward
from verifiers.errors import ConfigError
from verifiers.parsers.parser import Parser
from verifiers.rubrics.registration_views import (
    FuncsView,
    WeightsByName,
    WeightsView,
    checked_weight,
)
from verifiers.rubrics.reward_calls import (
    RewardCall,
    RolloutScores,
    ScoringPlan,
    as_score,
    build_reward_call,
    func_name,
    warn_duplicate_name,
)
from verifiers.types import State

__all__ = ["GroupScoreObjectProvider", "Rubric", "ScoreObjectProvider", "func_name"]

# classic (0.3.x) names: callables giving extra objects to reward functions
ScoreObjectProvider = Callable[[State], Mapping[str, object]]
GroupScoreObjectProvider = Callable[[list[State]], Mapping[str, object]]


class Rubric:
    """Weighted reward functions.

    ``Rubric(funcs, weights)``: the reward is the weighted sum; ``weights`` defaults to 1.0 for
    each function; weight-0 functions are metrics. ``group_funcs``/``group_weights`` declare
    group reward functions explicitly (functions in ``funcs`` marked ``@vf.group_reward`` or
    naming plural arguments are group functions too). ``parser`` (default :class:`Parser`) is
    passed to functions that name ``parser``. Two functions with the same name are a
    :class:`~verifiers.ConfigError`.
    """

    def __init__(
        self,
        funcs: Iterable[Callable[..., Any]] | None = None,
        weights: Iterable[float] | None = None,
        parser: Parser | None = None,
        *,
        group_funcs: Iterable[Callable[..., Any]] | None = None,
        group_weights: Iterable[float] | None = None,
        score_on_error: bool = False,
    ) -> None:
        self.logger = logging.getLogger(f"verifiers.rubrics.{type(self).__name__}")
        self._funcs: list[tuple[Callable[..., Any], float, bool]] = []
        self.class_objects: dict[str, Any] = {}
        self._parser: Parser = parser if parser is not None else Parser()
        self.class_objects["parser"] = self._parser
        self.score_on_error = score_on_error
        self._version = 0
        self._plan: ScoringPlan | None = None
        self._plan_key: object = None
        for funcs_, weights_, group in ((funcs, weights, None), (group_funcs, group_weights, True)):
            fs = list(funcs_ or [])
            ws = [1.0] * len(fs) if weights_ is None else list(weights_)
            if len(ws) != len(fs):
                raise ConfigError(
                    f"{len(ws)} weights for {len(fs)} reward functions: give one weight per "
                    "function (or none for 1.0 each)"
                )
            for f, w in zip(fs, ws, strict=True):
                self._add(f, w, group)

    # -- registration -------------------------------------------------------------------------

    @property
    def parser(self) -> Parser:
        return self._parser

    @parser.setter
    def parser(self, parser: Parser) -> None:
        self._parser = parser
        self.add_class_object("parser", parser)

    def _registrations(self) -> list[tuple[Callable[..., Any], float, bool]]:
        """(function, weight, is group function) of every function, in order."""
        return self._funcs

    def _names(self) -> dict[str, Callable[..., Any]]:
        return {func_name(f): f for f, _, _ in self._registrations()}

    def _changed(self) -> None:
        self._version += 1

    def _add(self, func: Callable[..., Any], weight: float, group: bool | None) -> None:
        if not callable(func):
            raise ConfigError(f"reward functions must be callable, not {type(func).__name__}")
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ConfigError(f"weight of {func_name(func)!r} must be a number, not {weight!r}")
        name = func_name(func)
        existing = self._names().get(name)
        if existing is not None:
            warn_duplicate_name(self.logger, name, existing, func)
        is_group = is_group_reward(func) if group is None else group
        # reads the signature now: a function that cannot be called with keywords is an error
        # at registration, not at scoring
        build_reward_call(func, weight, is_group, self.class_objects, self.score_on_error)
        self._funcs.append((func, float(weight), is_group))
        self._changed()

    def add_reward_func(self, func: Callable[..., Any], weight: float = 1.0) -> None:
        """Add a reward function (a group function when marked ``@vf.group_reward`` or when it
        names plural arguments)."""
        self._add(func, weight, None)

    def add_group_reward_func(self, func: Callable[..., Any], weight: float = 1.0) -> None:
        """Add a group reward function: it scores the N rollouts of one example together."""
        self._add(func, weight, True)

    def add_metric(self, func: Callable[..., Any], weight: float = 0.0) -> None:
        """Add a function reported in metrics (weight 0: not part of the reward)."""
        self._add(func, weight, None)

    def add_class_object(self, name: str, obj: Any) -> None:
        """Make ``obj`` available to reward functions that name the argument ``name``."""
        self.class_objects[name] = obj
        self._changed()

    def get_reward_funcs(self) -> list[Callable[..., Any]]:
        return [f for f, _, _ in self._registrations()]

    def get_reward_func_names(self) -> list[str]:
        return [func_name(f) for f, _, _ in self._registrations()]

    def get_reward_weights(self) -> list[float]:
        return [w for _, w, _ in self._registrations()]

    # the classic (0.3.x) private spellings, which environments and trainers call
    def _get_reward_funcs(self) -> list[Callable[..., Any]]:
        return self.get_reward_funcs()

    def _get_reward_func_names(self) -> list[str]:
        return self.get_reward_func_names()

    def _get_reward_weights(self) -> list[float]:
        return self.get_reward_weights()

    def _is_group_func(self, func: Callable[..., Any]) -> bool:
        """True when ``func`` scores a group of rollouts (marked ``@vf.group_reward``,
        registered as a group function, or naming plural arguments such as ``completions``)."""
        for f, _, group in self._registrations():
            if f is func or f == func:
                return group
        return is_group_reward(func)

    # 0.3.x keeps ``funcs`` and ``weights`` as plain lists that environments assign and edit in
    # place (``self.weights = [...]``, ``rubric.weights[i] = w``, ``rubric.funcs.append(f)``);
    # here they are live views of the registrations, so such edits take effect.
    @property
    def funcs(self) -> MutableSequence[Callable[..., Any]]:
        return FuncsView(self)

    @funcs.setter
    def funcs(self, funcs: Iterable[Callable[..., Any]]) -> None:
        regs = self._own_registrations()
        new = list(funcs)
        old_weights = [w for _, w, _ in regs]
        weights = old_weights if len(old_weights) == len(new) else [1.0] * len(new)
        del regs[:]
        for f, w in zip(new, weights, strict=True):
            self._add(f, w, None)
        self._changed()

    @property
    def weights(self) -> MutableSequence[float]:
        return WeightsView(self)

    @weights.setter
    def weights(self, weights: Iterable[float]) -> None:
        regs = self._own_registrations()
        ws = list(weights)
        if len(ws) != len(regs):
            # 0.3.x pairs functions and weights with zip(): a function without a weight is
            # not part of the reward, a weight without a function is unused
            self.logger.warning(
                "%d weights for %d reward functions: they pair up in order; %s",
                len(ws),
                len(regs),
                "functions without a weight count as metrics (weight 0)"
                if len(regs) > len(ws)
                else "the extra weights are unused",
            )
            ws = (ws + [0.0] * len(regs))[: len(regs)]
        regs[:] = [(f, checked_weight(f, w), g) for (f, _, g), w in zip(regs, ws, strict=True)]
        self._changed()

    @property
    def reward_weights(self) -> dict[str, float]:
        """Every function's weight by name (weight 0: a metric). Assigning an item changes the
        weight: by name, or by position as earlier 0.x's list (``reward_weights[i] = w``)."""
        return WeightsByName(self, {e.name: e.weight for e in self._get_plan().ordered})

    def _own_registrations(self) -> list[tuple[Callable[..., Any], float, bool]]:
        regs = self._registrations()
        if regs is not self._funcs:
            raise ConfigError(
                f"{type(self).__name__}'s reward functions belong to the rubrics it combines; "
                "change them on those rubrics"
            )
        return regs

    def _set_weight(self, index: int, weight: float) -> None:
        regs = self._own_registrations()
        f, _, g = regs[index]
        regs[index] = (f, checked_weight(f, weight), g)
        self._changed()

    @property
    def has_group_rewards(self) -> bool:
        return bool(self._get_plan().group)

    # -- plan ---------------------------------------------------------------------------------

    def _entries(self) -> list[RewardCall]:
        return [
            build_reward_call(f, w, g, self.class_objects, self.score_on_error)
            for f, w, g in self._funcs
        ]

    def _key(self) -> object:
        """Changes whenever the functions, weights or class objects change."""
        return self._version

    def _get_plan(self) -> ScoringPlan:
        plan, key = self._plan, self._key()
        if plan is None or key != self._plan_key:
            plan = self._make_plan(self._entries())
            self._plan, self._plan_key = plan, key
        return plan

    @staticmethod
    def _make_plan(entries: list[RewardCall]) -> ScoringPlan:
        for i, e in enumerate(entries):
            e.index = i
        individual = tuple(e for e in entries if not e.group)
        return ScoringPlan(
            individual=individual,
            group=tuple(e for e in entries if e.group),
            ordered=tuple(entries),
            any_async=any(e.is_async for e in individual),
        )

    # -- scoring ------------------------------------------------------------------------------

    async def score_rollout(self, state: State) -> None:
        """Score one rollout (group functions see a group of one)."""
        await self.score_group([state])

    async def score_group(self, states: list[State]) -> None:
        """Score the N rollouts of one example: individual functions for each rollout
        (concurrently when any is async), then group functions once."""
        if not states:
            return
        plan = self._get_plan()
        scores = [RolloutScores() for _ in states]
        if plan.any_async and len(states) > 1:
            await asyncio.gather(
                *(self._run_individual(plan, s, sc) for s, sc in zip(states, scores, strict=True))
            )
        else:
            for s, sc in zip(states, scores, strict=True):
                await self._run_individual(plan, s, sc)
        if len(plan.group) == 1:
            await self._run_group(plan.group[0], states, scores)
        elif plan.group:
            await asyncio.gather(*(self._run_group(e, states, scores) for e in plan.group))
        for s, sc in zip(states, scores, strict=True):
            self._finish(plan, s, sc)

    async def _run_individual(self, plan: ScoringPlan, state: State, scores: RolloutScores) -> None:
        pending: list[tuple[RewardCall, Awaitable[Any]]] = []
        for entry in plan.individual:
            try:
                result = entry.func(**entry.kwargs(state))
                if inspect.isawaitable(result):
                    if entry.is_async:
                        pending.append((entry, result))
                        continue
                    result = await result
                scores.values[entry.index] = as_score(entry.name, result)
            except Exception as exc:
                scores.fail(entry, exc)
        if len(pending) == 1:
            entry, awaitable = pending[0]
            try:
                scores.values[entry.index] = as_score(entry.name, await awaitable)
            except Exception as exc:
                scores.fail(entry, exc)
        elif pending:
            results = await asyncio.gather(*(a for _, a in pending), return_exceptions=True)
            for (entry, _), result in zip(pending, results, strict=True):
                if isinstance(result, BaseException):
                    if not isinstance(result, Exception):
                        raise result
                    scores.fail(entry, result)
                    continue
                try:
                    scores.values[entry.index] = as_score(entry.name, result)
                except (TypeError, ValueError) as exc:
                    scores.fail(entry, exc)

    async def _run_group(
        self, entry: RewardCall, states: list[State], scores: list[RolloutScores]
    ) -> None:
        try:
            result = entry.func(**entry.group_kwargs(states))
            if inspect.isawaitable(result):
                result = await result
            if isinstance(result, str | bytes) or not isinstance(result, Sequence):
                raise TypeError(
                    f"group reward function {entry.name!r} returned {type(result).__name__}, "
                    f"expected a list of {len(states)} numbers (one per rollout)"
                )
            if len(result) != len(states):
                raise ValueError(
                    f"group reward function {entry.name!r} returned {len(result)} values for "
                    f"{len(states)} rollouts; return one value per rollout"
                )
            values = [as_score(entry.name, v) for v in result]
        except Exception as exc:
            for sc in scores:
                sc.fail(entry, exc)
            return
        for sc, v in zip(scores, values, strict=True):
            sc.values[entry.index] = v

    @staticmethod
    def _finish(plan: ScoringPlan, state: State, scores: RolloutScores) -> None:
        reward: float | None = 0.0
        # a metric per name: within one rubric a later function of the same name replaces an
        # earlier one's value, across the rubrics of a RubricGroup they add up (as in 0.3.x)
        by_source: dict[tuple[str, int], float | None] = {}
        for entry in plan.ordered:
            value = scores.values.get(entry.index)
            if value is None and entry.score_on_error:
                value = 0.0
            by_source[entry.name, entry.source] = value
            if value is None:
                if entry.weight != 0.0:
                    reward = None
            elif reward is not None:
                reward += value * entry.weight
        values: dict[str, float | None] = {}
        for (name, _), value in by_source.items():
            if name not in values:
                values[name] = value
            else:
                prev = values[name]
                values[name] = None if prev is None or value is None else prev + value
        state["reward"] = reward
        metrics = state.get("metrics")
        if isinstance(metrics, dict):
            metrics.update(values)
        else:
            state["metrics"] = values
        state["reward_errors"] = scores.errors

    # -- lifecycle ----------------------------------------------------------------------------

    async def cleanup(self, state: State) -> None:
        """Run the ``@vf.cleanup`` methods of this rubric for one rollout."""
        for handler in discover(self, "cleanup"):
            result = handler(state)
            if inspect.isawaitable(result):
                await result

    async def teardown(self) -> None:
        """Run the ``@vf.teardown`` methods of this rubric (once, when the environment closes)."""
        for handler in discover(self, "teardown"):
            result = handler()
            if inspect.isawaitable(result):
                await result


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
