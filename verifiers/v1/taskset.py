"""``Taskset``: a loader of typed tasks with lazy, chainable selection views."""

from __future__ import annotations

import copy
import itertools
import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, Self

from typing_extensions import TypeVar

from verifiers.v1.configs import SelectConfig, TaskMatchConfig, TasksetConfig
from verifiers.v1.task import Task, TaskT, _type_arg

__all__ = ["Taskset", "Transform"]

logger = logging.getLogger(__name__)

TasksetConfigT = TypeVar("TasksetConfigT", bound=TasksetConfig, default=TasksetConfig)
Transform = Callable[[Iterator[Any]], Iterator[Any]]
"""A view's step over the task stream (``include``, ``shuffle``, ``take`` ... each adds one)."""


class Taskset(ABC, Generic[TaskT, TasksetConfigT]):
    """Subclasses implement :meth:`load` (a list or a generator; set ``INFINITE = True`` for an
    endless one). Iterating sets each task's ``idx`` to its load position."""

    INFINITE: bool = False
    transform: Transform | None = None
    _bounded: bool | None = None
    _in_order: bool = True

    def __init__(self, config: TasksetConfigT | None = None) -> None:
        self.config: TasksetConfigT = config if config is not None else self.config_type()()  # type: ignore[assignment]
        path = self.config.system_prompt
        self.system_prompt: str | None = path.read_text() if path is not None else None

    @abstractmethod
    def load(self) -> Iterable[TaskT]:
        """Build the tasks."""

    @classmethod
    def task_type(cls) -> type[Task[Any, Any, Any]]:
        return _type_arg(cls, Task) or Task

    @classmethod
    def config_type(cls) -> type[TasksetConfig]:
        return _type_arg(cls, TasksetConfig) or TasksetConfig

    @property
    def bounded(self) -> bool:
        """Whether iteration ends (a finite load, or a view that caps it)."""
        return (not self.INFINITE) if self._bounded is None else self._bounded

    def __iter__(self) -> Iterator[TaskT]:
        extra = {} if self.system_prompt is None else {"system_prompt": self.system_prompt}
        shared = self.shared_toolsets()
        stream: Iterator[TaskT] = (
            _with_shared(t.with_data(idx=i, **extra), shared) for i, t in enumerate(self.load())
        )
        return stream if self.transform is None else self.transform(stream)

    def shared_toolsets(self) -> list[Any]:
        """The toolsets every task of this taskset offers besides its own: what the taskset
        class's ``toolsets(config)`` classmethod returns (as 0.4.0's), built once per
        taskset and shared by all its rollouts, each call with its rollout's ``self.state``."""
        cached = self.__dict__.get("_vf_shared_toolsets")
        if cached is None:
            factory = getattr(type(self), "toolsets", None)
            cached = list(factory(self.config)) if callable(factory) else []
            self.__dict__["_vf_shared_toolsets"] = cached
        return list(cached)

    def _then(self, step: Transform) -> Self:
        view = copy.copy(self)
        before = self.transform
        view.transform = step if before is None else (lambda s: step(before(s)))
        return view

    def include(self, **match: Any) -> Self:
        """Keep only the tasks ``match`` names (``idx``, ``ids``, ``keys``, ``names``)."""
        cfg = TaskMatchConfig(**match)
        if not self.bounded and (cfg.ids or cfg.keys or cfg.names):
            raise ValueError(
                f"{type(self).__name__} is infinite: an include by ids, keys or names may never end; "
                "bound it first with closed idx ranges (include(idx=['0:1000'])) or take(n)"
            )
        stop = cfg.idx_stop if self._in_order else None
        view = self._then(lambda s: _filter(s, cfg, True, "include", stop))
        if cfg.idx_stop is not None:
            view._bounded = True
        return view

    def exclude(self, **match: Any) -> Self:
        """Drop the tasks ``match`` names."""
        cfg = TaskMatchConfig(**match)
        if not self.bounded and cfg.idx_tail:
            raise ValueError(
                f"{type(self).__name__} is infinite: excluding an open idx range drops every later "
                "task; exclude a closed range such as '5:10' instead"
            )
        return self._then(lambda s: _filter(s, cfg, False, "exclude", None))

    def shuffle(self, seed: int = 0) -> Self:
        """Shuffle under ``seed`` (reads the whole view); the view must be bounded."""
        if not self.bounded:
            raise ValueError(
                f"{type(self).__name__} is infinite: cannot shuffle an endless stream; bound it first "
                "with take(n) or closed include idx ranges"
            )

        def step(stream: Iterator[Any]) -> Iterator[Any]:
            items = list(stream)
            random.Random(seed).shuffle(items)
            return iter(items)

        view = self._then(step)
        view._in_order = False
        return view

    def skip(self, num_tasks: int) -> Self:
        return self._then(lambda s: itertools.islice(s, num_tasks, None))

    def take(self, num_tasks: int) -> Self:
        view = self._then(lambda s: itertools.islice(s, num_tasks))
        view._bounded = True
        return view

    def select(self, config: SelectConfig) -> Self:
        """Apply ``config``: include, exclude, shuffle, skip, limit, in that order."""
        view = self
        if not config.include.empty:
            view = view.include(**config.include.model_dump())
        if not config.exclude.empty:
            view = view.exclude(**config.exclude.model_dump())
        if config.shuffle:
            view = view.shuffle(config.seed)
        if config.skip:
            view = view.skip(config.skip)
        if config.limit is not None:
            view = view.take(config.limit)
        return view


def _filter(
    stream: Iterator[Any], cfg: TaskMatchConfig, keep: bool, label: str, stop: int | None
) -> Iterator[Any]:
    ranges = cfg.idx_ranges()
    wanted = {"ids": set(cfg.ids), "keys": set(cfg.keys), "names": set(cfg.names)}
    seen: dict[str, set[str]] = {k: set() for k in wanted}
    ranges_hit: set[int] = set()
    for task in stream:
        idx = task.data.idx
        if stop is not None and idx >= stop:
            break
        hit_ranges = {i for i, r in enumerate(ranges) if idx in r}
        ranges_hit |= hit_ranges
        values = {
            "ids": task.data.id,
            "names": task.data.name,
            "keys": task.key if cfg.keys else None,
        }
        hits = [k for k, v in values.items() if v is not None and v in wanted[k]]
        for k in hits:
            seen[k].add(values[k])
        if bool(hits or hit_ranges) == keep:
            yield task
        if stop is not None and idx + 1 >= stop:
            break
    unmatched: dict[str, list[Any]] = {
        k: sorted(wanted[k] - seen[k]) for k in wanted if wanted[k] - seen[k]
    }
    missed = [cfg.idx[i] for i in range(len(ranges)) if i not in ranges_hit]
    if missed:
        unmatched["idx"] = missed
    if unmatched:
        logger.warning("%s matched no task for %s (a typo?)", label, unmatched)


def _with_shared(task: TaskT, shared: list[Any]) -> TaskT:
    if shared:
        task.__dict__["_vf_shared_toolsets"] = shared
    return task
