"""``IsolatedVerifierEnv`` (``--env.id isolated-verifier``): one solver runs the task with its
scoring deferred; after the task's ``finalize`` the task's declared artifacts are collected and
the solver's runtime is stopped. The task is then set up again in a fresh runtime, the artifacts
restored at their paths, ``stage_verifier`` run, and the task's own metrics and rewards scored
there onto the solver's trace. Nothing else the solver left (files outside the artifacts,
processes, its runtime's state) reaches the grader.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import Field, TypeAdapter

from verifiers.v1.agent import Agents
from verifiers.v1.configs import AgentConfig, Config
from verifiers.v1.configs.env import EnvConfig
from verifiers.v1.decorators import call_hook
from verifiers.v1.env import Env
from verifiers.v1.errors import TaskError
from verifiers.v1.rollout import RolloutTimeouts
from verifiers.v1.runtimes import BwrapConfig, RuntimeConfig, SubprocessConfig
from verifiers.v1.task_runtime import TaskRuntime, task_runtime_config
from verifiers.v1.utils.artifacts import restore, runtime_workdir

if TYPE_CHECKING:
    from verifiers.v1.task import Task
    from verifiers.v1.trace import Episode, Trace

__all__ = ["IsolatedVerifierEnv", "IsolatedVerifierEnvConfig", "VerifierConfig"]

logger = logging.getLogger(__name__)
_RUNTIME: TypeAdapter[RuntimeConfig] = TypeAdapter(RuntimeConfig)


class VerifierConfig(Config):
    """Where and how the grader runs."""

    runtime: RuntimeConfig | None = None
    """The grader's runtime; None: a fresh one like the solver's."""
    env: dict[str, str] | None = None
    """Variables of the grader's commands (setup, staging, scoring); None: the task's
    ``runtime_env()``."""
    retries: int = Field(default=2, ge=0)
    """Further attempts, each in a new fresh runtime, after a failed setup, restore, staging
    or scoring."""


class IsolatedVerifierEnvConfig(EnvConfig):
    agent: AgentConfig = AgentConfig()
    """The solver's seat."""
    verifier: VerifierConfig = VerifierConfig()


class IsolatedVerifierEnv(Env[IsolatedVerifierEnvConfig]):
    """One solver, then its task's deterministic scoring in a fresh runtime."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._solver_runtimes: dict[int, RuntimeConfig] = {}

    async def run(self, task: Task[Any, Any, Any], agents: Agents) -> None:
        if task.config.judges:
            raise ValueError(
                "isolated-verifier grades with the task's own metrics and rewards; it does not "
                "run model-backed judges (drop the task's `judges`, or use another env)"
            )
        solver = _RUNTIME.validate_python(task_runtime_config(agents.agent))
        self.verifier_config(task, solver)  # refuse an impossible grader before solving
        trace = await agents.agent.run(task.defer_scoring(), collect_artifacts=True)
        self._solver_runtimes[id(trace)] = solver

    def verifier_config(
        self, task: Task[Any, Any, Any], solver: RuntimeConfig | None = None
    ) -> RuntimeConfig:
        """The grader's runtime: the verifier's own, else one like the solver's. Raises for
        the ``subprocess`` runtime (restoring writes absolute paths: this host's) and for
        relative artifacts between runtimes with different work dirs."""
        if solver is None:
            solver = self.config.agent.runtime or BwrapConfig()
        config = self.config.verifier.runtime or solver
        if isinstance(config, SubprocessConfig):
            raise TypeError(
                "isolated-verifier restores artifacts at their absolute paths, so it grades in "
                "a sandbox: give the agent or verifier runtime type 'bwrap' or 'docker', not "
                "'subprocess'"
            )
        relative = [
            a.source for a in task.data.artifacts if not PurePosixPath(a.source).is_absolute()
        ]
        ours, theirs = runtime_workdir(solver), runtime_workdir(config)
        if isinstance(solver, SubprocessConfig):
            ours = "<a temporary directory on the host>"
        if relative and ours != theirs:
            raise ValueError(
                f"isolated-verifier cannot carry the relative artifacts {relative} from the "
                f"solver's work dir {ours!r} to the verifier's {theirs!r}; declare them as "
                "absolute paths or run both in runtimes with the same work dir"
            )
        return config

    async def finalize(self, task: Task[Any, Any, Any], episode: Episode) -> None:
        solution = episode.traces[0]
        solver = self._solver_runtimes.pop(id(solution), None)
        if solution.ok:
            _, graded = await self.grade(self.verifier_config(task, solver), task, solution)
            for name in type(graded).model_fields:
                setattr(solution, name, getattr(graded, name))

    async def stage_verifier(
        self, task: Task[Any, Any, Any], solution: Trace, runtime: TaskRuntime
    ) -> None:
        """Set the task up in the grader's runtime, restore the solver's artifacts, then
        run the task's ``stage_verifier``."""
        args: dict[str | type, Any] = {"trace": solution, "runtime": runtime}
        try:
            await call_hook(task.setup, args)
        except Exception as exc:
            raise TaskError(f"the verifier's task setup failed: {exc!r}") from exc
        await restore(runtime, dict(solution.state.artifacts))
        try:
            await call_hook(task.stage_verifier, args)
        except Exception as exc:
            raise TaskError(f"the verifier's staging failed: {exc!r}") from exc

    async def verify(self, task: Task[Any, Any, Any], solution: Trace, runtime: TaskRuntime) -> Any:
        """Score ``solution`` in the grader's runtime (the task's metrics and rewards)."""
        return await task.score(solution, runtime)

    async def grade(
        self,
        config: RuntimeConfig,
        task: Task[Any, Any, Any],
        solution: Trace,
        *,
        scoring_timeout_covers_attempt: bool = False,
    ) -> tuple[Any, Trace]:
        """Grade ``solution`` in a fresh ``config`` runtime: ``(verify's result, the graded
        copy of the trace)``; each retry starts from the untouched task and trace. Raises the
        last failure when every attempt failed."""
        timeouts = RolloutTimeouts.from_config(self.config.agent.timeout, task)
        attempts = self.config.verifier.retries + 1
        last: Exception | None = None
        for attempt in range(attempts):
            if attempt:
                delay = min(0.5 * 2 ** (attempt - 1), 8.0)
                logger.warning(
                    "isolated verifier attempt %d/%d failed (%s); retrying in %.1fs",
                    attempt, attempts, last, delay,
                )  # fmt: skip
                await asyncio.sleep(delay)
            whole = timeouts.scoring if scoring_timeout_covers_attempt else None
            try:
                async with asyncio.timeout(whole):
                    return await self._attempt(config, task, solution, timeouts)
            except Exception as exc:  # a fresh runtime and untouched copies each time
                last = exc
        assert last is not None
        raise last

    async def _attempt(
        self,
        config: RuntimeConfig,
        task: Task[Any, Any, Any],
        solution: Trace,
        timeouts: RolloutTimeouts,
    ) -> tuple[Any, Trace]:
        grader_task = copy.deepcopy(task)
        grader_task.scoring_deferred = False
        graded = copy.deepcopy(solution)
        env = (
            grader_task.runtime_env()
            if self.config.verifier.env is None
            else self.config.verifier.env
        )
        runtime = TaskRuntime(config, env)
        try:
            async with asyncio.timeout(timeouts.setup):
                await runtime.start()
                await self.stage_verifier(grader_task, graded, runtime)
            async with asyncio.timeout(timeouts.scoring):
                result = await self.verify(grader_task, graded, runtime)
            return result, graded
        finally:
            with contextlib.suppress(Exception):
                await runtime.stop()
