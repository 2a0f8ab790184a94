"""``EnvGroup``: several environments behind one, routed by ``info["env_id"]`` (as in 0.3.x)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from verifiers.envs.environment import Environment
from verifiers.errors import ConfigError
from verifiers.rubrics.rubric import Rubric

if TYPE_CHECKING:  # at run time ``Client`` here is 0.3.x's import (verifiers.clients.Client)
    from verifiers.clients.base import Client
from verifiers.types import SamplingArgs, State

__all__ = ["EnvGroup", "EnvGroupRubric"]

logger = logging.getLogger("verifiers.envs.EnvGroup")

#: the ``info`` key naming the member environment of an EnvGroup row
ENV_GROUP_INFO_KEY = "env_id"


def _info_dict(info: object) -> dict[str, Any]:
    if info is None or info == "":
        return {}
    if isinstance(info, str):
        parsed = json.loads(info)
        if isinstance(parsed, dict):
            return parsed
        raise ConfigError("an EnvGroup row's info must decode to a JSON object")
    if isinstance(info, Mapping):
        return dict(info)
    raise ConfigError(f"an EnvGroup row's info must be a dict, not {type(info).__name__}")


def _route_of(info: Mapping[str, Any]) -> tuple[str, ...]:
    """``info["env_id"]`` as a route: the member's name, then its own members' names."""
    value = info.get(ENV_GROUP_INFO_KEY)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    raise ConfigError("EnvGroup info['env_id'] must be a string or a list of strings")


def _route_value(route: tuple[str, ...]) -> str | list[str] | None:
    if not route:
        return None
    return route[0] if len(route) == 1 else list(route)


class EnvGroupRubric(Rubric):
    """Scores each rollout with the rubric of the member environment named by its
    ``info["env_id"]``. Every rollout's metrics hold every reward name of every member (0.0 for
    the other members' functions), so that metrics line up across the group."""

    def __init__(self, env_map: Mapping[str, Environment]) -> None:
        super().__init__()
        self.env_map = env_map
        # num_turns: written by the multi-turn members (0.3.x's MultiTurnEnv rubric)
        names: set[str] = (
            {"num_turns"} if any(e.num_turns_metric for e in env_map.values()) else set()
        )
        for env in env_map.values():
            rubric = env.rubric
            getter = getattr(rubric, "_get_reward_func_names", None)
            if callable(getter):
                names.update(getter())
        self.all_reward_names = sorted(names)

    def _get_reward_func_names(self) -> list[str]:
        return list(self.all_reward_names)

    @property
    def has_group_rewards(self) -> bool:
        return any(e.has_group_rewards for e in self.env_map.values())

    def _env_for(self, state: State) -> Environment | None:
        route = _route_of(_info_dict(state.get("info")))
        env = self.env_map.get(route[0]) if route else None
        if env is None:
            logger.warning(
                "no environment of the EnvGroup for info['env_id']=%r; have %s",
                _route_value(route),
                sorted(self.env_map),
            )
        return env

    def _fill(self, state: State) -> None:
        metrics = state.get("metrics")
        metrics = dict(metrics) if isinstance(metrics, Mapping) else {}
        state["metrics"] = {
            **{name: 0.0 for name in self.all_reward_names},
            **{k: v for k, v in metrics.items() if k in self.all_reward_names},
            **{k: v for k, v in metrics.items() if k not in self.all_reward_names},
        }

    async def score_rollout(self, state: State) -> None:
        env = self._env_for(state)
        if env is None:  # as in 0.3.x: reward 0 (the warning says why)
            state["reward"] = 0.0
            state["metrics"] = {name: 0.0 for name in self.all_reward_names}
            return
        await env.rubric.score_rollout(state)
        self._fill(state)

    async def score_group(self, states: list[State]) -> None:
        if not states:
            return
        env = self._env_for(states[0])
        if env is None:
            for state in states:
                state["reward"] = 0.0
                state["metrics"] = {name: 0.0 for name in self.all_reward_names}
            return
        await env.rubric.score_group(states)
        for state in states:
            self._fill(state)


class EnvGroup(Environment):
    """Combine environments: their datasets are concatenated (``example_id`` renumbered,
    ``info["env_id"]`` naming the member each row belongs to), and every rollout and its scoring
    go to that member.

    Args:
        envs: the environments.
        env_names: one name per environment (default ``env_0``, ``env_1``, ...). A repeated name
            routes to the last environment given it.
    """

    def __init__(
        self,
        envs: list[Environment],
        env_names: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if not envs:
            raise ConfigError("EnvGroup requires at least one environment")
        names = list(env_names) if env_names else [f"env_{i}" for i in range(len(envs))]
        if len(names) != len(envs):
            raise ConfigError(
                f"Number of env_names must match number of envs ({len(names)} names for "
                f"{len(envs)} environments)"
            )
        if len(set(names)) != len(names):
            logger.warning(
                "EnvGroup names repeat (%s): rows of a repeated name go to the last "
                "environment of that name",
                names,
            )
        self.envs = list(envs)
        self.env_names = names
        self.env_map: dict[str, Environment] = dict(zip(names, envs, strict=True))

        def rows(split: str) -> Any:
            out: list[dict[str, Any]] = []
            for name, env in zip(names, envs, strict=True):
                if env._raw[split] is None:
                    continue
                for row in env.get_rows(split):
                    info = _info_dict(row.get("info"))
                    info[ENV_GROUP_INFO_KEY] = _route_value((name, *_route_of(info)))
                    out.append(
                        {
                            "prompt": row["prompt"],
                            "answer": str(row.get("answer", "")),
                            "info": info,
                            "task": row.get("task", "default"),
                            "example_id": len(out),
                        }
                    )
            if not out:
                return None
            from datasets import Dataset

            try:  # info as a struct column, as 0.3.x has it
                return Dataset.from_list(out)
            except (TypeError, ValueError, ArithmeticError):
                # members whose info fields clash in type: info travels as JSON text
                return Dataset.from_list([{**r, "info": json.dumps(r["info"])} for r in out])

        super().__init__(dataset=rows("train"), eval_dataset=rows("eval"), **kwargs)
        # the member and the full route of each rollout in flight (by id of its state)
        self._routes: dict[int, tuple[Environment, tuple[str, ...]]] = {}
        self.rubric = EnvGroupRubric(self.env_map)
        self.num_turns_metric = any(e.num_turns_metric for e in envs)

    # ------------------------------------------------------------------ routing

    def get_env_for_name(self, name: str) -> Environment:
        """The member environment called ``name``."""
        try:
            return self.env_map[name]
        except KeyError:
            raise ConfigError(
                f"No environment found for info['env_id']={name!r}; this EnvGroup has "
                f"{self.env_names}"
            ) from None

    def get_env_for_task(self, task: str) -> Environment:
        """Alias of :meth:`get_env_for_name`."""
        return self.get_env_for_name(task)

    def _route_input(
        self, input: Mapping[str, Any]
    ) -> tuple[Environment, dict[str, Any], tuple[str, ...]]:
        """(member environment, the row as the member sees it, the full route)."""
        info = _info_dict(input.get("info"))
        route = _route_of(info)
        if not route:
            if len(self.envs) != 1:
                raise ConfigError(
                    "EnvGroup input is missing info['env_id']; use rows of the group's "
                    "get_dataset()/get_eval_dataset() or set info['env_id'] to a member's name"
                )
            route = (self.env_names[0],)
        rest = route[1:]
        if rest:
            info[ENV_GROUP_INFO_KEY] = _route_value(rest)
        else:
            info.pop(ENV_GROUP_INFO_KEY, None)
        child = {**input, "info": info}
        return self.get_env_for_name(route[0]), child, route

    @staticmethod
    def _restore_route(state: State, route: tuple[str, ...]) -> State:
        info = _info_dict(state.get("info"))
        info[ENV_GROUP_INFO_KEY] = _route_value(route)
        state["info"] = info
        return state

    @property
    def has_group_rewards(self) -> bool:
        return any(e.has_group_rewards for e in self.envs)

    # ------------------------------------------------------------------ per-rollout routing
    # Each rollout runs in the member its input routes to: the group's init_state, loop,
    # scoring and cleanup hand the state to that member, so every way of running rollouts
    # (rollout, run_rollout, run_group, the classic call shapes) routes the same way. The
    # member sees the row without its own name in info["env_id"]; the full route is put back
    # after cleanup.

    async def init_state(
        self,
        input: Mapping[str, Any],
        client: Client,
        model: str,
        sampling_args: SamplingArgs | None = None,
        *,
        rollout_index: int = 0,
    ) -> State:
        env, child, route = self._route_input(input)
        state = await env.init_state(
            child, client, model, sampling_args, rollout_index=rollout_index
        )
        self._routes[id(state)] = (env, route)
        return state

    async def rollout(
        self,
        input: Mapping[str, Any],
        client: Client | Any,
        model: str,
        sampling_args: SamplingArgs | None = None,
    ) -> State:
        """The member's ``rollout`` (its own override, when it has one)."""
        env, child, route = self._route_input(input)
        state = await env.rollout(child, client, model, sampling_args)
        return self._restore_route(state, route)

    def _member(self, state: State) -> Environment:
        entry = self._routes.get(id(state))
        if entry is None:
            raise ConfigError("this state was not started by this EnvGroup's init_state")
        return entry[0]

    async def _run_states(
        self,
        states: list[State],
        *,
        score: bool,
        semaphore: asyncio.Semaphore | None,
        group: bool = True,
    ) -> None:
        if len({id(self._member(s)) for s in states}) > 1:
            for s in states:
                self._routes.pop(id(s), None)
            raise ConfigError("all inputs of an EnvGroup group must route to one environment")
        await super()._run_states(states, score=score, semaphore=semaphore, group=group)

    async def _drive(self, state: State) -> None:
        await self._member(state)._drive(state)

    async def _score(self, states: list[State], *, group: bool) -> None:
        member = self._member(states[0])
        if member.score_rollouts:
            await member._score(states, group=group)

    async def _cleanup(self, state: State) -> None:
        entry = self._routes.pop(id(state), None)
        if entry is None:
            await super()._cleanup(state)
            return
        env, route = entry
        try:
            await env._cleanup(state)
        finally:
            self._restore_route(state, route)

    async def close(self) -> None:
        await asyncio.gather(*(e.close() for e in self.envs))
        await super().close()


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
