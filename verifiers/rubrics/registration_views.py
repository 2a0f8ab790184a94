"""``rubric.funcs``, ``rubric.weights`` and ``rubric.reward_weights`` as 0.3.x has them: lists
(and a dict) that environments assign and edit in place (``rubric.weights[i] = w``,
``rubric.funcs.append(f)``, ``rubric.reward_weights["name"] = w``). Here they are live views
of the rubric's registrations, so such edits take effect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableSequence, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from verifiers.decorators import is_group_reward
from verifiers.errors import ConfigError
from verifiers.rubrics.reward_calls import func_name

if TYPE_CHECKING:
    from verifiers.rubrics.rubric import Rubric

__all__ = ["FuncsView", "WeightsByName", "WeightsView", "checked_weight"]


def checked_weight(func: Callable[..., Any], weight: Any) -> float:
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise ConfigError(f"weight of {func_name(func)!r} must be a number, not {weight!r}")
    return float(weight)


_T = TypeVar("_T")


class RegistrationView(MutableSequence[_T]):
    """A live list over one column of a rubric's registrations (function, weight, group):
    read as a list, compared and concatenated as one; subclasses say how it is edited."""

    _column: int

    def __init__(self, rubric: Rubric) -> None:
        self._rubric = rubric

    def __len__(self) -> int:
        return len(self._rubric._registrations())

    @overload
    def __getitem__(self, index: int) -> _T: ...
    @overload
    def __getitem__(self, index: slice) -> list[_T]: ...
    def __getitem__(self, index: int | slice) -> Any:
        return [reg[self._column] for reg in self._rubric._registrations()][index]

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    def __add__(self, other: Iterable[_T]) -> list[_T]:
        return list(self) + list(other)

    def __radd__(self, other: Iterable[_T]) -> list[_T]:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return repr(list(self))


class FuncsView(RegistrationView[Callable[..., Any]]):
    """``rubric.funcs``: the registered functions, edited in place as 0.3.x's list is (a
    function inserted gets weight 1.0; one removed takes its weight along)."""

    _column = 0

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            raise ConfigError("assign rubric.funcs as a whole list, not a slice")
        regs = self._rubric._own_registrations()
        _, w, _ = regs[index]
        regs[index] = (value, w, is_group_reward(value))
        self._rubric._changed()

    def __delitem__(self, index: Any) -> None:
        regs = self._rubric._own_registrations()
        del regs[index]
        self._rubric._changed()

    def insert(self, index: int, value: Callable[..., Any]) -> None:
        regs = self._rubric._own_registrations()
        self._rubric._add(value, 1.0, None)  # validates and appends
        regs.insert(index, regs.pop())
        self._rubric._changed()


class WeightsView(RegistrationView[float]):
    """``rubric.weights``: one weight per function, set in place (``weights[i] = w``); the
    list's length follows the functions (add one with ``add_reward_func(func, weight)``)."""

    _column = 1

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            raise ConfigError("assign rubric.weights as a whole list, not a slice")
        self._rubric._set_weight(index, value)

    def _fixed_length(self) -> ConfigError:
        return ConfigError(
            "rubric.weights has one weight per reward function: add a function with "
            "add_reward_func(func, weight=...) or assign both `funcs` and `weights`"
        )

    def __delitem__(self, index: Any) -> None:
        raise self._fixed_length()

    def insert(self, index: int, value: float) -> None:
        raise self._fixed_length()


class WeightsByName(dict[str, float]):
    """``rubric.reward_weights``: weights by name; assigning an item (by name, or by the
    function's position) changes the rubric's weight."""

    def __init__(self, rubric: Rubric, weights: dict[str, float]) -> None:
        super().__init__(weights)
        self._rubric = rubric

    def __setitem__(self, key: Any, value: Any) -> None:
        names = self._rubric.get_reward_func_names()
        if isinstance(key, int) and not isinstance(key, bool):
            index = key
        elif key in names:
            index = len(names) - 1 - names[::-1].index(key)
        else:
            raise ConfigError(f"no reward function {key!r} in this rubric; it has {names}")
        self._rubric._set_weight(index, value)
        super().__setitem__(names[index], float(value))
