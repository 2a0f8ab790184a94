"""``Env`` (runs agents on a taskset's tasks, one :class:`Episode` per task run) and
``SingleAgentEnv`` (one ``agent`` seat). The seats themselves are in :mod:`verifiers.v1.agent`,
the harnesses they run in :mod:`verifiers.v1.harness`."""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from verifiers.utils.gc_utils import batch_gc
from verifiers.v1.agent import Agent, Agents
from verifiers.v1.configs import AgentConfig, EnvConfig, HarnessConfig, SelectConfig
from verifiers.v1.configs.agent import agent_config_fields, resolve_agent
from verifiers.v1.configs.retries import RetryBudget
from verifiers.v1.errors import AgentError, EnvError, V1Error
from verifiers.v1.harness import Harness, harness_for
from verifiers.v1.rollout import deadline
from verifiers.v1.task import Task, _type_arg
from verifiers.v1.taskset import Taskset
from verifiers.v1.trace import AgentInfo, EnvInfo, Episode, Trace, TraceTask
from verifiers.v1.types import SamplingConfig
from verifiers.v1.utils.memory import trim_memory_periodically

if TYPE_CHECKING:
    from verifiers.v1.clients import ModelContext

__all__ = ["ConfigT", "Env", "RunSlot", "SingleAgentEnv", "SingleAgentEnvConfig"]


@dataclass
class RunSlot:
    """One planned episode (:meth:`Env.slots`), watchable while :meth:`Env.run_slot` plays
    it: ``traces`` holds the current attempt's traces as they start (an episode retry starts
    the list over, a seat's retried run leaves it), ``episode`` and ``done`` are set when it
    is final. ``started`` is for a runner that cannot watch traces to stamp at dispatch."""

    task: Task[Any, Any, Any]
    traces: list[Trace] = field(default_factory=list)
    episode: Episode | None = None
    done: bool = False
    started: float | None = None

    @classmethod
    def finished(cls, episode: Episode) -> RunSlot:
        """The slot of an episode already played (e.g. one a resume keeps)."""
        return cls(
            task=Task(episode.task.data),
            traces=list(episode.traces),
            episode=episode,
            done=True,
        )


class SingleAgentEnvConfig(EnvConfig):
    """:class:`SingleAgentEnv`'s config: one ``agent`` seat over the seed taskset."""

    agent: AgentConfig = AgentConfig()


ConfigT = TypeVar("ConfigT", bound=EnvConfig, default=EnvConfig)


class Env(ABC, Generic[ConfigT]):
    """Runs agents on a taskset's tasks; one :class:`Episode` per task run, holding every trace
    its agents recorded. Built from its config (``Env[MyEnvConfig]``: each seat an
    ``AgentConfig`` field) or, in code, from a taskset directly."""

    id: str = ""
    on_episode: Callable[[Episode], None] | None = None
    """Called with each episode :meth:`run_episode_with_retries` returns (an eval run
    appends it to its ``traces.jsonl``)."""

    def __init__(self, config: ConfigT | Taskset[Any, Any]) -> None:
        from verifiers.v1.utils.loaders import default_harness_config, load_taskset

        config_type = self.config_type()
        if isinstance(config, Taskset):
            self.taskset: Taskset[Any, Any] = config
            built = config_type()
            built.taskset = config.config
            self.config: ConfigT = built  # type: ignore[assignment]
        else:
            if not isinstance(config, config_type):
                raise TypeError(
                    f"{type(self).__name__} takes a {config_type.__name__}, got "
                    f"{type(config).__name__}; build it with "
                    "verifiers.v1.utils.loaders.load_environment(config), which narrows the "
                    "config to the env's own type"
                )
            if not config.taskset.id:
                raise ValueError(
                    f"{type(self).__name__} needs a seed taskset: set --env.taskset.id (or "
                    "the positional `vf-eval <taskset-id>`)"
                )
            self.config = config
            self.taskset = load_taskset(config.taskset)
        if not agent_config_fields(self.config):
            raise TypeError(
                f"{type(self).__name__} declares no agent seat; declare each as an AgentConfig "
                "field of its config (`solver: vf.AgentConfig = vf.AgentConfig()`)"
            )
        self.id = self.id or self.config.env_id
        self._default_harness = default_harness_config(self.config.taskset.id)
        self._seat_plans: dict[tuple[str, str], dict[str, tuple[AgentConfig, Harness[Any]]]] = {}
        self._clients: dict[str, Any] = {}

    @property
    def default_harness(self) -> HarnessConfig:
        """What a seat naming no harness runs: the taskset's bundled harness, else ``bash``."""
        return self._default_harness

    @default_harness.setter
    def default_harness(self, harness: HarnessConfig) -> None:
        self._default_harness = harness
        self._seat_plans.clear()

    @classmethod
    def config_type(cls) -> type[EnvConfig]:
        return _type_arg(cls, EnvConfig) or EnvConfig

    # what a subclass writes
    async def setup(self, agents: Agents) -> None:
        """Runs once per episode before :meth:`run` (e.g. ``agents.judge.trainable = False``)."""

    @abstractmethod
    async def run(self, task: Task[Any, Any, Any], agents: Agents) -> None:
        """Play ``task`` with ``agents`` (``await agents.agent.run(task)``, or an
        ``agents.agent.interaction(task)`` scripted turn by turn)."""

    async def finalize(self, task: Task[Any, Any, Any], episode: Episode) -> None:
        """Cross-agent judgement over the finished episode (``trace.record_reward`` ...);
        a raise fails the episode."""

    def complete(self, episode: Episode) -> bool:
        """Whether a finished episode counts as done (what a resume keeps)."""
        return episode.ok

    async def start(self) -> None:
        """Bring up what the env shares across its episodes (a task server ...): runs once,
        before the first episode. A raise fails the run."""

    async def stop(self) -> None:
        """Tear down what :meth:`start` built, at :meth:`close`; it runs even when
        :meth:`start` failed partway, so it must cope with a partial start."""

    # machinery
    def agents(
        self,
        client: Any,
        model: str,
        sampling: SamplingConfig | dict[str, Any] | None = None,
    ) -> Agents:
        """Fresh seats for one episode, each resolved against the run's model and sampling."""
        run_sampling = (
            sampling
            if isinstance(sampling, SamplingConfig)
            else SamplingConfig.model_validate(sampling or {})
        )
        key = (model, run_sampling.model_dump_json(exclude_none=True))
        plan = self._seat_plans.get(key)
        if plan is None:  # resolved once per (model, sampling): seats and harnesses are values
            plan = {}
            for name, spec in agent_config_fields(self.config).items():
                resolved = resolve_agent(
                    spec, model=model, sampling=run_sampling, harness=self._default_harness
                )
                plan[name] = (resolved, harness_for(resolved.harness or "bash"))
            self._seat_plans[key] = plan
        seats: dict[str, Agent] = {}
        for name, (resolved, harness) in plan.items():
            seat_client = client if resolved.client is None else self._seat_client(resolved)
            seats[name] = Agent(
                seat_client, resolved.model or model, resolved, name=name, harness=harness
            )
        return Agents(seats)

    def _seat_client(self, config: AgentConfig) -> Any:
        """The client of a seat whose config names its own endpoint (one per endpoint, closed
        by :meth:`close`)."""
        assert config.client is not None
        key = config.client.model_dump_json()
        if key not in self._clients:
            self._clients[key] = _client_from(config.client)
        return self._clients[key]

    async def close(self) -> None:
        """Stop what :meth:`start` started; close the clients of seats with their own
        endpoint."""
        started = self.__dict__.pop("_vf_started", None)
        try:
            if started is not None:
                await self.stop()
        finally:
            clients, self._clients = list(self._clients.values()), {}
            for client in clients:
                await client.close()

    async def _started(self) -> None:
        """:meth:`start`, once (concurrent first episodes wait for the one start)."""
        started = self.__dict__.get("_vf_started")
        if started is None:
            started = self.__dict__["_vf_started"] = asyncio.ensure_future(self.start())
        await asyncio.shield(started)

    async def run_episode(self, task: Task[Any, Any, Any], agents: Agents) -> Episode:
        episode: Episode = Episode(
            env=EnvInfo(id=self.id or type(self.taskset).__name__),
            task=TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        )
        stage = "setup"
        try:
            async with deadline(self.config.timeout.episode):
                await self.setup(agents)
                stage = "run"
                await self.run(task, agents)
            episode.traces = [trace for agent in agents for trace in agent.traces]
            if not episode.traces:
                raise AgentError(
                    f"{type(self).__name__}.run() ran no agent; every episode needs at least "
                    "one agent run"
                )
            stage = "finalize"
            async with deadline(self.config.timeout.finalize):
                await self.finalize(task, episode)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if isinstance(exc, TimeoutError):
                episode.is_timeout = True
                exc = TimeoutError(f"{type(self).__name__}.{stage}() exceeded its deadline")
            elif not isinstance(exc, V1Error):  # the env's own code failed (0.4.0's wording)
                exc = EnvError(f"{type(self).__name__}.{stage}(): {type(exc).__name__}: {exc}")
            probe: Trace = Trace(task=episode.task, agent=AgentInfo(config=AgentConfig()))
            probe.record_error(exc)
            episode.errors.extend(probe.errors)
        episode.traces = [trace for agent in agents for trace in agent.traces]
        episode.ok = (
            not episode.errors and bool(episode.traces) and all(t.ok for t in episode.traces)
        )
        return episode

    async def run_episode_with_retries(
        self, task: Task[Any, Any, Any], make_agents: Callable[[], Agents]
    ) -> Episode:
        """:meth:`run_episode` on fresh agents, rerun whole while the env's ``retries`` allow
        the failed episode's last error (its own, else its last trace's)."""
        await self._started()
        budget = RetryBudget(self.config.retries)
        while True:
            episode = await self.run_episode(task, make_agents())
            errors = episode.errors or [e for t in episode.traces for e in t.errors]
            if (
                episode.ok
                or not errors
                or not budget.allow(errors[-1].type, errors[-1].message, errors[-1].status_code)
            ):
                if self.on_episode is not None:
                    self.on_episode(episode)
                return episode

    def slots(self, task: Task[Any, Any, Any], n: int = 1) -> list[RunSlot]:
        """``n`` independent episodes of ``task`` to play (``-r n``)."""
        if n < 1:
            raise ValueError("a task needs at least one rollout (n >= 1)")
        return [RunSlot(task) for _ in range(n)]

    async def run_slot(
        self,
        slot: RunSlot,
        ctx: ModelContext,
        semaphore: asyncio.Semaphore | None = None,
        on_complete: Callable[[Episode], Awaitable[None]] | None = None,
        on_trace: Callable[[Trace], None] | None = None,
    ) -> Episode:
        """Play one planned episode to the end against ``ctx``'s model (a client of its own,
        closed after), with the env's whole-episode ``retries``. ``semaphore`` bounds the
        episodes in flight (held for the attempts, released before ``on_complete``);
        ``on_trace`` sees each trace as it starts, after it joined ``slot.traces``;
        ``on_complete`` gets the final episode."""
        from verifiers.v1.clients import resolve_client

        def minted(trace: Trace) -> None:
            slot.traces.append(trace)
            if on_trace is not None:
                on_trace(trace)

        def dropped(trace: Trace) -> None:
            with contextlib.suppress(ValueError):
                slot.traces.remove(trace)

        def attempt_agents() -> Agents:
            slot.traces = []  # a retried episode shows its fresh attempt
            agents = self.agents(client, ctx.model, ctx.sampling)
            for seat in agents:
                seat.on_trace, seat.on_discard = minted, dropped
            return agents

        client = resolve_client(ctx.client)
        try:
            async with semaphore if semaphore is not None else contextlib.nullcontext():
                episode = await self.run_episode_with_retries(slot.task, attempt_agents)
        finally:
            await client.close()
        slot.traces = list(episode.traces)
        slot.episode = episode
        slot.done = True
        if on_complete is not None:
            await on_complete(episode)
        await trim_memory_periodically()  # a worker plays episodes for as long as it runs
        return episode

    def tasks(self, select: SelectConfig | None = None) -> Iterable[Task[Any, Any, Any]]:
        return self.taskset if select is None else self.taskset.select(select)

    async def evaluate(
        self,
        client: Any,
        model: str,
        *,
        select: SelectConfig | None = None,
        rollouts_per_task: int = 1,
        sampling: SamplingConfig | dict[str, Any] | None = None,
        max_concurrent: int | None = 32,
    ) -> list[Episode]:
        """Run every selected task ``rollouts_per_task`` times; episodes in task order."""
        if rollouts_per_task < 1:
            raise ValueError(f"rollouts_per_task must be >= 1, got {rollouts_per_task}")
        gate = asyncio.Semaphore(max(1, max_concurrent)) if max_concurrent else None

        async def one(task: Task[Any, Any, Any]) -> Episode:
            async with gate if gate is not None else contextlib.nullcontext():
                return await self.run_episode_with_retries(
                    task, lambda: self.agents(client, model, sampling)
                )

        jobs = [one(task) for task in self.tasks(select) for _ in range(rollouts_per_task)]
        with batch_gc():
            return list(await asyncio.gather(*jobs))


def _client_from(config: Any) -> Any:
    from verifiers.clients.native import NativeClient

    return NativeClient(config.base_url, api_key=config.api_key)


class SingleAgentEnv(Env[SingleAgentEnvConfig]):
    """The env of a plain taskset: one ``agent`` seat, one trace per episode."""

    def __init__(
        self,
        config: SingleAgentEnvConfig | Taskset[Any, Any],
        agent: AgentConfig | None = None,
    ) -> None:
        super().__init__(config)
        if agent is not None:
            self.config.agent = agent

    @property
    def agent_config(self) -> AgentConfig:
        return self.config.agent

    async def run(self, task: Task[Any, Any, Any], agents: Agents) -> None:
        await agents.agent.run(task)
