"""``Agent``: a seat (a harness playing against a model through a client) and what it runs:
``Agent.run`` (one rollout on the task's prompt) and ``Agent.interaction`` (a rollout the caller
drives turn by turn, as its user). Both go through :class:`verifiers.v1.rollout.Rollout`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from verifiers.v1.configs import AgentConfig
from verifiers.v1.configs.agent import TimeoutConfig
from verifiers.v1.configs.retries import RetryBudget
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.errors import AgentError, ModelError, provider_status
from verifiers.v1.harness import Harness, harness_for
from verifiers.v1.rollout import Rollout
from verifiers.v1.task import Task
from verifiers.v1.trace import AgentInfo, ModelCall, TimeSpan, Trace, TraceTask
from verifiers.v1.types import (
    AssistantMessage,
    FinishReason,
    Message,
    Messages,
    Response,
    SamplingConfig,
    Tool,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    content_text,
)

__all__ = ["Agent", "Agents", "Interaction", "Segment", "TimeoutConfig", "make_agent"]


class Agent:
    """A seat: a harness playing against ``model`` through ``client``."""

    def __init__(
        self,
        client: Any,
        model: str,
        config: AgentConfig | None = None,
        *,
        name: str = "agent",
        harness: Harness[Any] | None = None,
        sampling: SamplingConfig | dict[str, Any] | None = None,
    ) -> None:
        from verifiers.clients.base import as_client

        self.client = as_client(client)
        self.model = model
        self.config = config if config is not None else AgentConfig()
        self.name = name
        self.trainable = True
        self.harness = (
            harness
            if harness is not None
            else harness_for(self.config.harness if self.config.harness is not None else "null")
        )
        merged: dict[str, Any] = {}
        if isinstance(sampling, SamplingConfig):
            merged.update(sampling.as_args())
        elif sampling:
            merged.update(sampling)
        if self.config.sampling is not None:
            merged.update(self.config.sampling.model_dump(exclude_unset=True))
        self.sampling = SamplingConfig.model_validate(merged)
        self.traces: list[Trace] = []
        self.on_trace: Callable[[Trace], None] | None = None
        """Called with each trace this seat starts (a served episode watches it)."""
        self.on_discard: Callable[[Trace], None] | None = None
        """Called with each trace this seat drops (a failed run it retries)."""

    def cap_reached(self, trace: Trace) -> str | None:
        """The seat cap (``max_turns``, ``max_*_tokens``) the trace has reached, if any."""
        cfg = self.config
        if cfg.max_turns is not None and trace.num_turns >= cfg.max_turns:
            return "max_turns"
        if (
            cfg.max_output_tokens is None
            and cfg.max_input_tokens is None
            and cfg.max_total_tokens is None
        ):
            return None
        usage = trace.usage
        if usage is None:
            return None
        if cfg.max_output_tokens is not None and usage.output_tokens >= cfg.max_output_tokens:
            return "max_output_tokens"
        if cfg.max_input_tokens is not None and usage.input_tokens >= cfg.max_input_tokens:
            return "max_input_tokens"
        if cfg.max_total_tokens is not None and usage.total_tokens >= cfg.max_total_tokens:
            return "max_total_tokens"
        return None

    async def sample(
        self,
        trace: Trace,
        tools: list[Tool] | None = None,
        task: Task[Any, Any, Any] | None = None,
    ) -> AssistantMessage:
        """One model call on the trace's conversation (offering ``tools``); the reply is
        appended to ``trace``. With ``task``, the reply first passes the task's response
        interceptors and stops (:func:`verifiers.v1.boundaries.intercept_response`): a
        replacement is what is recorded, and a stop that fires stops the trace."""
        prompt = [message_to_wire(m) for m in trace.messages]
        call = ModelCall(model=self.model, time=TimeSpan(start=time.time()))
        trace.calls.append(call)
        schemas = (
            [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
            if tools
            else None
        )
        try:
            response = await self.client.get_response(
                prompt, self.model, sampling_args=self.sampling.as_args(), tools=schemas
            )
        except Exception as exc:
            call.time.end = time.time()
            trace.timing.agent.model.duration += call.time.duration
            raise ModelError(
                f"model {self.model!r} failed: {exc}", status_code=provider_status(exc)
            ) from exc
        call.time.end = time.time()
        trace.timing.agent.model.duration += call.time.duration
        raw = response.message
        tool_calls = [
            ToolCall(
                id=str(tc.get("id", "")),
                name=str(tc["function"]["name"]),
                arguments=str(tc["function"].get("arguments", "")),
            )
            for tc in raw.get("tool_calls") or []
            if isinstance(tc, dict) and isinstance(tc.get("function"), dict)
        ]
        reply = AssistantMessage(
            content=raw.get("content"),
            reasoning_content=raw.get("reasoning_content"),
            tool_calls=tool_calls or None,
        )
        stopped: str | None = None
        from verifiers.v1.boundaries import intercept_response, watches_responses

        if task is not None and watches_responses(task):
            boundary = Response(
                id=str(getattr(response, "id", "") or ""),
                created=int(time.time()),
                model=self.model,
                message=reply,
                finish_reason=_finish_reason(response.finish_reason),
                usage=Usage(
                    input_tokens=response.usage.prompt_tokens,
                    output_tokens=response.usage.completion_tokens,
                ),
            )
            replaced, records, stopped = await intercept_response(task, trace, boundary)
            trace.response_rewrites.extend(records)
            reply = replaced.message
        call.node = trace.append(
            reply,
            sampled=True,
            prompt_token_ids=response.prompt_token_ids,
            completion_token_ids=response.completion_token_ids,
            completion_logprobs=response.completion_logprobs,
        )
        call.finish_reason = response.finish_reason
        call.usage = Usage(
            input_tokens=response.usage.prompt_tokens,
            output_tokens=response.usage.completion_tokens,
        )
        if stopped is not None:
            trace.stop(stopped)
        trace.notify()
        return reply

    def new_trace(self, task: Task[Any, Any, Any]) -> Trace:
        """A fresh trace of this seat on ``task``, kept in :attr:`traces`."""
        trace: Trace = Trace(
            task=TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            agent=AgentInfo(config=self.config, name=self.name, trainable=self.trainable),
            state=task.state_type()(),
        )
        self.traces.append(trace)
        if self.on_trace is not None:
            self.on_trace(trace)
        return trace

    async def run(self, task: Task[Any, Any, Any], *, collect_artifacts: bool = False) -> Trace:
        """Run the task: setup, one harness segment on the task's prompt, finalize, scoring
        (a :class:`Rollout`). ``collect_artifacts``: after finalize, archive the task's
        declared artifacts out of the rollout's runtime into ``trace.state.artifacts``. Errors are recorded on the trace (``ok`` false), never raised; a
        failed run whose last error a rule of the seat's ``retries`` still allows is run again
        (the failed trace is dropped)."""
        budget = RetryBudget(self.config.retries)
        while True:
            trace = await self._run_once(task, collect_artifacts)
            last = trace.last_error
            if (
                trace.ok
                or last is None
                or not budget.allow(last.type, last.message, last.status_code)
            ):
                return trace
            self.traces.remove(trace)
            if self.on_discard is not None:
                self.on_discard(trace)

    async def _run_once(self, task: Task[Any, Any, Any], collect_artifacts: bool) -> Trace:
        run = Rollout(task=task, agent=self, collect_artifacts=collect_artifacts)
        try:
            if await run.open():
                await run.step()
                if run.ok:  # the harness handed the turn back (0.4.0's name for it)
                    run.trace.stop("agent_completed")
        except BaseException:
            await run.abort()
            raise
        return await run.close()

    @contextlib.asynccontextmanager
    async def interaction(self, task: Task[Any, Any, Any]) -> AsyncIterator[Interaction]:
        """A conversation the caller scripts turn by turn (a simulated user): each
        ``await interaction.turn(message)`` runs one harness segment. A prompted task speaks
        first (take its opening reply with a bare ``turn()``); a task without a prompt is
        opened by the first ``turn(message)``. Leaving the block ends the exchange (stop
        condition ``user_closed`` unless a stop ended it first), then finalizes and scores the
        trace. A failure opening it (task setup) raises, its trace kept failed; an error
        inside the block is recorded on the trace (``ok`` false), not raised."""
        run = Rollout(task=task, agent=self, has_user=True)
        if not await run.open() and run.failure is not None:
            await run.close()
            raise run.failure
        interaction = Interaction(run)
        try:
            yield interaction
        except Exception as exc:
            run.fail(exc)
        except BaseException:
            await run.abort()
            raise
        await interaction.close()


@dataclass(frozen=True)
class Segment:
    """What one interaction turn produced: ``messages``, the replies the model generated in
    the segment with the tool results between them; ``root_reply``, the root agent's answer
    when the harness reports one. ``terminated``: the rollout ended instead of answering (no
    messages; the trace holds the whole exchange)."""

    messages: Messages
    root_reply: str | None = None
    terminated: bool = False

    @property
    def last_reply(self) -> str:
        """The root agent's answer, else the text of the segment's last reply."""
        if self.root_reply is not None:
            return self.root_reply.strip()
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return content_text(message.content).strip()
        return ""


class Interaction:
    """An agent's rollout held open turn by turn, the caller playing its user: each
    :meth:`turn` records the user's message and runs one harness segment. ``trace`` is live
    throughout; :meth:`close` ends the exchange and scores it."""

    def __init__(self, run: Rollout) -> None:
        self._run = run
        self._started = False  # a segment ran
        self._over = False  # a terminated segment was delivered
        self._lock = asyncio.Lock()

    @property
    def trace(self) -> Trace:
        return self._run.trace

    async def turn(self, message: str | Message | Messages | None = None) -> Segment:
        """Send one user turn (text, a message or several) and run one segment. A bare
        ``turn()`` takes a prompted task's opening reply. A ``terminated`` segment means the
        rollout ended instead (a stop, a cap, a failure); a turn after that raises."""
        async with self._lock:
            if self._run.closed:
                raise AgentError("this interaction is closed; open a new one")
            if self._over:
                raise AgentError(
                    f"the interaction already ended ({self.trace.stop_condition or 'failed'}); "
                    "read interaction.trace, or open a new one"
                )
            prompted = not self._started and self.trace.task.data.prompt is not None
            if message is None and not prompted:
                raise ValueError(
                    "turn() needs the user's message: a bare turn() only takes a prompted "
                    "task's opening reply"
                )
            if message is not None and prompted:
                raise ValueError(
                    "the task's prompt opens this exchange: take its first reply with a bare "
                    "turn() before answering (or give the interaction a task without a prompt "
                    "to open the conversation yourself)"
                )
            messages: Messages | None
            if isinstance(message, str):
                messages = [UserMessage(content=message)]
            elif message is None or isinstance(message, list):
                messages = message
            else:
                messages = [message]
            self._started = True
            trace = self.trace
            turns_before, nodes_before = trace.num_turns, len(trace.nodes)
            await self._run.step(messages)
            if trace.num_turns == turns_before:
                self._over = True
                return Segment(messages=[], terminated=True)
            # The segment answered; a stop it ended with surfaces as the next turn's
            # terminated segment.
            produced: Messages = []
            for node in trace.nodes[nodes_before:]:
                if node.sampled:
                    produced.append(node.message)
                elif produced and isinstance(node.message, ToolMessage):
                    produced.append(node.message)
            return Segment(messages=produced, root_reply=trace.root_reply)

    async def close(self) -> Trace:
        """End the exchange (``user_closed`` unless it already stopped or failed) and finish
        the rollout; idempotent, returns the trace."""
        async with self._lock:
            if not self._run.closed and self._run.ok:
                self.trace.stop("user_closed")
            return await self._run.close()


class Agents:
    """An episode's seats by name: ``agents.agent`` or ``agents["agent"]``."""

    def __init__(self, agents: dict[str, Agent]) -> None:
        self._agents = agents

    def __getattr__(self, name: str) -> Agent:
        try:
            return self.__dict__["_agents"][name]  # type: ignore[no-any-return]
        except KeyError:
            raise AttributeError(
                f"no agent seat {name!r}; seats: {sorted(self.__dict__['_agents'])}"
            ) from None

    def __getitem__(self, name: str) -> Agent:
        return self._agents[name]

    def __iter__(self) -> Iterator[Agent]:
        return iter(self._agents.values())


def _finish_reason(value: Any) -> FinishReason:
    return value if value in ("stop", "length", "tool_calls") else None


def make_agent(config: AgentConfig) -> Agent:
    """A standalone agent built from its config alone: ``model`` must be set; the endpoint is
    ``config.client`` (else the default client config's) and the harness ``config.harness``
    (else ``bash``, 0.4.0's default). The agent's client is its own: ``await
    agent.client.close()`` when done."""
    from verifiers.v1.configs.client import EvalClientConfig, build_client

    if config.model is None:
        raise ValueError(
            "AgentConfig.model is unset; a standalone agent needs a model "
            "(inside an env the run's model fills it in)"
        )
    client = build_client(config.client if config.client is not None else EvalClientConfig())
    harness = harness_for(config.harness if config.harness is not None else "bash")
    return Agent(client, config.model, config, harness=harness)
