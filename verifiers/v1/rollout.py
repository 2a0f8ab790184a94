"""``Rollout``: one agent's run on one task, driven stage by stage.

:meth:`Rollout.open` runs the task's setup and records the task's opening in the trace's message
graph; each :meth:`Rollout.step` runs ONE harness segment (the harness answering until it hands
the turn back, or the run ends), optionally after recording the user's messages at the end of the
conversation; :meth:`Rollout.close` finalizes and scores. ``Agent.run`` is open, one step, close;
``Agent.interaction`` is open, a step per user turn, close. Every failure is recorded on the
trace (``ok`` false), never raised; an expired stage deadline is a stop (``<stage>_timeout``),
not a failure, and the partial trace is still finalized and scored.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from verifiers.v1.boundaries import intercept_request
from verifiers.v1.decorators import call_hook
from verifiers.v1.errors import TaskError
from verifiers.v1.harness import HarnessSession, opening_messages, seed_prompt
from verifiers.v1.task import TaskTimeout, hooks_need_runtime
from verifiers.v1.task_runtime import TaskRuntime, close_task_runtime, open_task_runtime
from verifiers.v1.trace import TimeSpan, Trace
from verifiers.v1.types import Messages, Request, UserMessage

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.configs.agent import TimeoutConfig
    from verifiers.v1.task import Task

__all__ = ["Rollout", "RolloutTimeouts", "deadline"]


def deadline(
    seconds: float | None = None, *, at: float | None = None
) -> contextlib.AbstractAsyncContextManager[Any]:
    """``asyncio.timeout(seconds)`` (or ``asyncio.timeout_at(at)``); with no limit, a context
    that does nothing (what an unlimited ``asyncio.timeout`` does, without its bookkeeping on
    every stage of every rollout)."""
    if at is not None:
        return asyncio.timeout_at(at)
    if seconds is not None:
        return asyncio.timeout(seconds)
    return _NO_DEADLINE


_NO_DEADLINE: contextlib.AbstractAsyncContextManager[Any] = contextlib.nullcontext()


@dataclass(frozen=True)
class RolloutTimeouts:
    """Seconds each stage of one rollout may take (None: no limit). ``agent`` is one budget
    for all the rollout's harness segments together: time spent between segments (an
    interaction waiting on its user) does not count."""

    setup: float | None = None
    agent: float | None = None
    finalize: float | None = None
    scoring: float | None = None

    @classmethod
    def from_config(
        cls, timeout: TimeoutConfig, task: Task[Any, Any, Any] | None = None
    ) -> RolloutTimeouts:
        """The stage limits of a seat's ``timeout`` config (its ``rollout`` is the agent's);
        a stage it leaves unset takes ``task``'s own limit (``TaskData.timeout``)."""
        own = task.data.timeout if task is not None else TaskTimeout()

        def pick(seat: float | None, task_limit: float | None) -> float | None:
            return seat if seat is not None else task_limit

        return cls(
            setup=pick(timeout.setup, own.setup),
            agent=pick(timeout.rollout, own.agent),
            finalize=pick(timeout.finalize, own.finalize),
            scoring=pick(timeout.scoring, own.scoring),
        )


class Rollout:
    """One rollout's lifecycle: :meth:`open`, :meth:`step` per segment, :meth:`close`.
    ``has_user``: a caller supplies the user's turns (an interaction), so the task needs no
    prompt of its own."""

    def __init__(
        self,
        *,
        task: Task[Any, Any, Any],
        agent: Agent,
        has_user: bool = False,
        timeouts: RolloutTimeouts | None = None,
        collect_artifacts: bool = False,
    ) -> None:
        self.task = task
        self._collect_artifacts = collect_artifacts
        self.agent = agent
        self._has_user = has_user
        self._timeouts = (
            timeouts
            if timeouts is not None
            else RolloutTimeouts.from_config(agent.config.timeout, task)
        )
        self._agent_time_remaining = self._timeouts.agent
        self.trace: Trace = agent.new_trace(task)
        self._harness_session: HarnessSession | None = None
        self._opened = False
        self._closed = False
        self._failed = False
        self._failure: Exception | None = None
        self.runtime: TaskRuntime | None = None
        """The runtime the task's hooks get (``runtime`` parameters): started in :meth:`open`
        when a hook of the task names one or artifacts are collected, stopped when the rollout
        closes. A program harness runs its program in it."""
        self.deadline_at: float | None = None
        """The running segment's deadline on the event loop's clock (None between segments,
        or with no agent time limit)."""

    @property
    def ok(self) -> bool:
        """Whether the exchange can go on: nothing failed and nothing stopped it."""
        return not self._failed and self.trace.stop_condition is None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` already ran (no further segments)."""
        return self._closed

    @property
    def failure(self) -> Exception | None:
        """The exception last recorded as the rollout's failure."""
        return self._failure

    def fail(self, error: Exception) -> None:
        """Record ``error`` as the rollout's outcome: no further segment runs, and closing
        skips finalize and scoring. Also how a driver reports a failure the rollout could not
        see (its user raising between segments)."""
        self._failed = True
        self._failure = error
        self.trace.record_error(error)

    def timeout(self, stage: str) -> None:
        """Record that ``stage``'s deadline expired: a stop (``<stage>_timeout``), not a
        failure, so finalize and scoring still run on the partial trace."""
        self.trace.record_timeout(stage)

    async def open(self) -> bool:
        """Run the task's setup (within the ``setup`` limit), record the task's opening and
        start the harness session. Whether segments can run; a failure is recorded."""
        self._opened = True
        trace = self.trace
        trace.timing.setup.start = time.time()
        trace.notify()
        try:
            if self.task.data.prompt is None and not self._has_user:
                raise TaskError(
                    f"task {type(self.task).__name__} (idx {self.task.data.idx}) has no prompt, "
                    "so there is no user message to answer; give it a prompt, or drive it "
                    "through agent.interaction() and open it with turn(message)"
                )
            async with deadline(self._timeouts.setup):
                if (
                    self._collect_artifacts
                    or hooks_need_runtime(self.task)
                    or hasattr(self.agent.harness, "open_runtime")  # one workspace per rollout
                ):
                    self.runtime = await open_task_runtime(
                        self.agent, trace, self.task.runtime_env()
                    )
                await call_hook(self.task.setup, self._hook_args())
            opening = await intercept_users(self, opening_messages(self.task.data))
        except TimeoutError:
            self.timeout("setup")
            return False
        except Exception as exc:
            self.fail(exc)
            return False
        seed_prompt(self.task, trace, opening)
        self._harness_session = self.agent.harness.session(self.task, trace, self.agent)
        trace.timing.setup.end = trace.timing.agent.start = time.time()
        trace.notify()
        return self.ok

    async def step(self, messages: Messages | None = None) -> bool:
        """Run one segment: record ``messages`` (the user's turn) at the end of the
        conversation, then let the harness answer until it hands the turn back. Whether the
        exchange can go on: a stop, a failure, an expired agent budget or a segment in which
        the model generated nothing all end it."""
        if not self._opened or self._closed or not self.ok:
            return False
        session = self._harness_session
        if session is None:
            raise RuntimeError("the rollout has no harness session; open() it first")
        trace = self.trace
        turns_before = trace.num_turns
        reply_before = trace.root_reply
        trace.root_reply = None  # a segment reports its own root reply, or none
        if messages:
            try:
                messages = await intercept_users(self, list(messages))
            except Exception as exc:
                self.fail(exc)
                return False
        loop = asyncio.get_running_loop()
        started = loop.time()
        remaining = self._agent_time_remaining
        self.deadline_at = None if remaining is None else started + max(0.0, remaining)
        try:
            async with deadline(at=self.deadline_at):
                await session.turn(messages)
        except TimeoutError as exc:
            # Only the expired budget is the agent's timeout; a harness's own I/O timing out
            # before it is a failure like any other.
            if self.deadline_at is not None and loop.time() >= self.deadline_at:
                self.timeout("agent")
            else:
                self.fail(exc)
            return False
        except Exception as exc:
            if trace.stop_condition is None:  # a harness torn down by a stop did not fail
                self.fail(exc)
            return False
        finally:
            if trace.num_turns == turns_before:
                trace.root_reply = reply_before  # nothing new: the last answer stands
            if self._agent_time_remaining is not None:
                self._agent_time_remaining = max(
                    0.0, self._agent_time_remaining - (loop.time() - started)
                )
            self.deadline_at = None
        return self.ok and trace.num_turns > turns_before

    async def close(self) -> Trace:
        """Finish the rollout (once; later calls return the trace): end the harness session,
        then, unless the rollout failed, the task's ``finalize`` and scoring, each within its
        limit. Always returns the trace, ``is_completed`` and ``ok`` stamped."""
        trace = self.trace
        if self._closed:
            return trace
        self._closed = True
        timing = trace.timing
        try:
            if self._harness_session is not None:
                await self._harness_session.close()
        except Exception as exc:
            self.fail(exc)
        now = time.time()
        if timing.agent.start and not timing.agent.end:
            timing.agent.end = now
        timing.agent.harness.duration = max(
            0.0, timing.agent.duration - timing.agent.model.duration
        )
        if not self._failed and self._opened:
            await self._stage("finalize", lambda _: self._finalize())
            if not self._failed:
                await self._stage("scoring", lambda t: self.task.score(t, self.runtime))
        await self._stop_runtime()
        trace.is_completed = True
        trace.ok = not self._failed
        trace.notify()
        return trace

    async def abort(self) -> None:
        """End the harness session without finalizing or scoring (the driver was cancelled);
        the rollout is closed."""
        self._closed = True
        if self._harness_session is not None:
            with contextlib.suppress(Exception):
                await self._harness_session.close()
        with contextlib.suppress(Exception):
            await self._stop_runtime()

    async def _finalize(self) -> None:
        """The task's ``finalize``, then (when asked) the artifacts' collection, while the
        runtime still holds what the agent left."""
        await call_hook(self.task.finalize, self._hook_args())
        if self._collect_artifacts and not self.trace.state.artifacts:
            from verifiers.v1.utils.artifacts import collect

            assert self.runtime is not None
            data = self.task.data
            self.trace.state.artifacts = await collect(
                self.runtime, data.artifacts, max_bytes=data.artifact_max_bytes
            )

    def _hook_args(self) -> dict[str | type, Any]:
        """What the task's ``setup`` / ``finalize`` may name: the trace and the runtime."""
        return {"trace": self.trace, "runtime": self.runtime}

    async def _stop_runtime(self) -> None:
        runtime, self.runtime = self.runtime, None
        if runtime is not None:
            await close_task_runtime(self.agent, self.trace, runtime)

    async def _stage(self, stage: str, hook: Callable[[Trace], Awaitable[Any]]) -> None:
        span: TimeSpan = getattr(self.trace.timing, stage)
        limit: float | None = getattr(self._timeouts, stage)
        span.start = time.time()
        try:
            async with deadline(limit):
                await hook(self.trace)
        except TimeoutError:
            self.timeout(stage)
        except Exception as exc:
            self.fail(exc)
        finally:
            span.end = time.time()


async def intercept_users(rollout: Any, messages: Messages) -> Messages:
    """The user's new messages after the rollout's task's request interceptors (before the
    harness stores them); each replacement is recorded in ``trace.request_rewrites``."""
    task = getattr(rollout, "task", None)  # (a rollout assembled by hand may have none)
    trace: Trace = rollout.trace
    if task is None or not task.hooks("intercept"):
        return messages
    request, records = await intercept_request(
        task, trace, Request(messages=[*trace.messages, *messages]),
        start=len(trace.messages), kinds=(UserMessage,),
    )  # fmt: skip
    trace.request_rewrites.extend(records)
    return request.messages[len(trace.messages) :]
