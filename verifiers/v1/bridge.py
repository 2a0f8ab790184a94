"""v1 environments on the classic machinery: :class:`V1Environment` wraps a v1 ``Env`` as a
classic ``Environment``, so ``vf.load_environment``, ``vf-eval`` (results, ``--resume``,
``vf view``, ``--ray``) and ``EnvGroup`` run it like any classic environment.

One dataset row per task (of the tasks ``select`` keeps, when given; its load position is the ``example_id``; the task's data rides in
``info["v1_task"]``); one rollout is one v1 episode. The rollout's ``reward`` is its trace's
reward (for a multi-seat episode the mean over its trainable seats' traces), its ``metrics``
each trace's rewards and metrics by name (a multi-seat episode prefixes them with the seat
name), ``completion`` the first trace's messages after the prompt, and a failed episode is the
rollout's ``error``.
"""

from __future__ import annotations

from typing import Any

from verifiers.envs.environment import Environment
from verifiers.errors import ConfigError
from verifiers.rubrics.rubric import Rubric
from verifiers.types import State
from verifiers.v1.configs import SelectConfig
from verifiers.v1.env import Env
from verifiers.v1.harness import opening_messages
from verifiers.v1.task import Task
from verifiers.v1.trace import Episode, Trace

__all__ = ["V1Environment", "load_v1_environment"]


def _wire(message: Any) -> dict[str, Any]:
    data: dict[str, Any] = message.model_dump(mode="json", exclude_none=True)
    calls = data.pop("tool_calls", None)
    if calls:
        data["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ]
    return data


def _as_parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A prompt mixing text and content-part messages with every text content as one text
    part (a dataset column holds one type: a system prompt beside an image message)."""
    if not any(isinstance(m.get("content"), list) for m in messages):
        return messages
    return [
        {**m, "content": [{"type": "text", "text": m["content"]}]}
        if isinstance(m.get("content"), str)
        else m
        for m in messages
    ]


def _recorded(name: str) -> Any:
    def read(state: State, **_: Any) -> float | None:
        value = (state.get("v1_metrics") or {}).get(name)
        return None if value is None else float(value)

    read.__name__ = name
    read.__doc__ = f"The score the v1 episode recorded under {name!r}."
    return read


class _EpisodeRubric(Rubric):
    """Scores a rollout with what its v1 episode recorded (the episode scored itself). Its
    functions, for tools that list them, read each ``@vf.reward`` (weighted) and
    ``@vf.metric`` (weight 0) of the taskset's first task back from the rollout."""

    def __init__(self, owner: V1Environment) -> None:
        super().__init__()
        self._owner = owner
        self._listed: list[tuple[Any, float, bool]] | None = None

    def _registrations(self) -> list[tuple[Any, float, bool]]:
        if self._listed is None:
            task = self._owner.first_task()
            listed: list[tuple[Any, float, bool]] = []
            if task is not None:
                for fn in task.hooks("reward"):
                    listed.append(
                        (_recorded(fn.__name__), float(getattr(fn, "_vf_weight", 1.0)), False)
                    )
                for fn in task.hooks("metric"):
                    listed.append((_recorded(fn.__name__), 0.0, False))
            self._listed = listed
        return self._listed

    async def score_group(self, states: list[State]) -> None:
        for state in states:
            state["reward"] = state.get("v1_reward")
            state["metrics"].update(state.get("v1_metrics") or {})
            state["reward_errors"] = []


class V1Environment(Environment):
    """A v1 ``Env`` as a classic environment (see the module docstring). Like a classic
    environment it runs in process: a seat naming no harness runs ``null`` here, where the
    v1 run (``run_eval``) gives it 0.4.0's ``bash``."""

    def __init__(self, env: Env[Any], *, select: SelectConfig | None = None, **kwargs: Any) -> None:
        if env.default_harness.id == "bash":
            # a classic environment runs in process: its seats that name no harness (and whose
            # taskset bundles none) run the null chat loop here, not 0.4.0's default program
            from verifiers.v1.harness import NullHarnessConfig

            env.default_harness = NullHarnessConfig()
        self.v1_env = env
        self._select = select
        self._tasks: dict[int, Task[Any, Any, Any]] = {}
        kwargs.setdefault("env_id", env.id)
        super().__init__(eval_dataset=self._task_rows, rubric=_EpisodeRubric(self), **kwargs)

    async def close(self) -> None:
        await self.v1_env.close()
        await super().close()

    def first_task(self) -> Task[Any, Any, Any] | None:
        if not self._tasks:
            self._task_rows()
        return next(iter(self._tasks.values()), None)

    def _task_rows(self) -> list[dict[str, Any]]:
        taskset = self.v1_env.taskset
        if self._select is not None:
            taskset = taskset.select(self._select)
        if not taskset.bounded:
            raise ConfigError(
                f"{type(taskset).__name__} is endless; a classic run needs a bounded view: "
                "load it with a config that bounds it, select a bounded part of it "
                "(--select.limit N), or run it with verifiers.v1's run_eval"
            )
        rows: list[dict[str, Any]] = []
        for position, task in enumerate(taskset):
            idx = task.data.idx if task.data.idx is not None else position
            self._tasks[idx] = task
            rows.append(
                {
                    "prompt": _as_parts([_wire(m) for m in opening_messages(task.data)]),
                    "answer": "",
                    "task": self.v1_env.id or "default",
                    "example_id": idx,
                    "info": {"v1_task": task.data.model_dump(mode="json")},
                }
            )
        return rows

    def _task(self, state: State) -> Task[Any, Any, Any]:
        # the task's own position (an EnvGroup renumbers example_id)
        data = (state.get("info") or {}).get("v1_task") or {}
        idx = int(data["idx"]) if data.get("idx") is not None else int(state["example_id"])
        if not self._tasks:
            self._task_rows()
        try:
            return self._tasks[idx]
        except KeyError:
            raise ConfigError(
                f"{self.env_id}: no task at position {idx} (the taskset has {len(self._tasks)})"
            ) from None

    async def _loop(self, state: State) -> None:
        """One rollout: run a v1 episode of the row's task and copy what it recorded."""
        task = self._task(state)
        env = self.v1_env
        episode = await env.run_episode_with_retries(
            task, lambda: env.agents(state["client"], state["model"], state["sampling_args"])
        )
        _fill(state, episode)


def _opening_len(trace: Trace[Any, Any, Any]) -> int:
    """How many messages open the trace's last branch before its first sampled reply: the
    task's prompt, with the system prompt a program harness (``bash``) put first."""
    branch: list[int] = []
    at: int | None = len(trace.nodes) - 1 if trace.nodes else None
    while at is not None:
        branch.append(at)
        at = trace.nodes[at].parent
    branch.reverse()
    return next((i for i, n in enumerate(branch) if trace.nodes[n].sampled), len(branch))


def _fill(state: State, episode: Episode[Any, Any, Any]) -> None:
    traces: list[Trace[Any, Any, Any]] = list(episode.traces)
    if traces:
        first = traces[0]
        state["completion"] = [_wire(m) for m in first.messages[_opening_len(first) :]]
        state["stop_condition"] = first.stop_condition
        state["turn"] = sum(t.num_turns for t in traces)
        used = [t.usage for t in traces if t.usage is not None]
        usage = state.get("usage")
        if used and usage is not None:
            usage.prompt_tokens += sum(u.input_tokens for u in used)
            usage.completion_tokens += sum(u.output_tokens for u in used)
    multi = len({t.agent.name for t in traces}) > 1
    metrics: dict[str, float] = {}
    for trace in traces:
        prefix = f"{trace.agent.name}/" if multi else ""
        for name, reward in trace.rewards.items():
            if reward is not None:
                metrics[prefix + name] = reward.score
        for name, value in trace.metrics.items():
            if value is not None:
                metrics[prefix + name] = value
    state["v1_metrics"] = metrics
    scored = [t for t in traces if t.agent.trainable] or traces
    state["v1_reward"] = (
        sum(t.reward for t in scored) / len(scored) if episode.ok and scored else None
    )
    state["is_truncated"] = any(t.is_timeout for t in traces) or episode.is_timeout
    errors = [*episode.errors, *(e for t in traces for e in t.errors)]
    if not episode.ok:
        first_error = errors[0] if errors else None
        state["error"] = {
            "type": first_error.type if first_error else "EpisodeError",
            "message": first_error.message if first_error else "the episode did not complete",
            "traceback": (first_error.traceback or "") if first_error else "",
        }
        state["stop_condition"] = state.get("stop_condition") or "has_error"


def load_v1_environment(env_id: str, **config: Any) -> V1Environment:
    """The v1 env ``env_id`` names (its taskset built with ``config``), as a classic
    environment. An ``env`` key holds the rest of the ``[env]`` block (seats, env id)."""
    from verifiers.v1.utils.loaders import load_environment

    block = dict(config.pop("env", None) or {})
    block["taskset"] = {**config, "id": env_id}
    return V1Environment(load_environment(block))
