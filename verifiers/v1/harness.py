"""``Harness``: the program an agent runs, and the built-in in-process ``null`` harness (a chat
loop: one model call per turn through the seat's client, tool calls run in the task's
toolsets)."""

from __future__ import annotations

import asyncio
from abc import ABC
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from typing_extensions import TypeVar

from verifiers.v1.boundaries import intercept_request, trace_stops
from verifiers.v1.configs import HarnessConfig
from verifiers.v1.decorators import invoke_all
from verifiers.v1.errors import HarnessError, TaskError
from verifiers.v1.graph import continue_branch, prepare_turn
from verifiers.v1.task import Task, TaskData, _type_arg
from verifiers.v1.trace import Trace
from verifiers.v1.types import (
    AssistantMessage,
    Message,
    Messages,
    Request,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.runtimes import ProgramResult

__all__ = [
    "ConfigT",
    "Harness",
    "HarnessSession",
    "NullHarness",
    "NullHarnessConfig",
    "harness_for",
    "opening_messages",
    "seed_prompt",
]


class NullHarnessConfig(HarnessConfig):
    """The ``null`` harness's config (it has no knobs of its own)."""

    id: str = "null"


ConfigT = TypeVar("ConfigT", bound=HarnessConfig, default=HarnessConfig)


class Harness(ABC, Generic[ConfigT]):
    """The program an agent runs. :meth:`run` drives one segment of the conversation (until
    the model hands the turn back), appending to ``trace``; it returns True when the rollout
    is over (a stop hook fired or a cap was reached).

    A harness is a value built from its config (``Harness[MyHarnessConfig]``) and shared by
    the episodes of a run, so per-rollout state lives on the trace (``trace.state``), not on
    the harness. Seats name it by id: register a built-in with
    :func:`verifiers.v1.utils.loaders.register_harness` (``harness_config_type(id)`` then
    gives its config type), or export the subclass in an installed module's ``__all__``.
    Inside :meth:`run`: ``agent.sample(trace)`` makes one model call on the trace's
    conversation through the run's client and records it; ``agent.cap_reached(trace)`` names
    the seat cap reached (``max_turns``, ``max_*_tokens``); ``agent.config.runtime`` says where
    a program should run; ``task.hooks("stop")`` are the task's stop conditions. Raise
    :class:`HarnessError` for a broken program; it is recorded on the trace."""

    name: str = ""

    # what a harness says about itself (0.4.0's flags; read by the program API below)
    APPENDS_SYSTEM_PROMPT: ClassVar[bool] = False
    """Whether :meth:`resolve_prompt` keeps the task's system prompt apart (else it is folded
    into a text prompt)."""
    SUPPORTS_MCP: ClassVar[bool] = False
    SUPPORTS_TOOL_INTERCEPTION: ClassVar[bool] = False
    """Whether the program asks the rollout before running each tool call (its
    ``tool_interception_url``), so an interceptor's result can stand in for the call."""
    SUPPORTS_RESUME: ClassVar[bool] = False
    EXECUTES_CODE: ClassVar[bool] = True
    SUPPORTS_SKILLS: ClassVar[bool] = False
    NEEDS_CONTAINER: ClassVar[bool] = True

    def __init__(self, config: ConfigT | None = None) -> None:
        if config is None:
            config = self.config_type().model_validate({"id": self.name} if self.name else {})  # type: ignore[assignment]
        self.config: ConfigT = config  # type: ignore[assignment]

    @classmethod
    def config_type(cls) -> type[HarnessConfig]:
        return _type_arg(cls, HarnessConfig) or HarnessConfig

    async def run(self, task: Task[Any, Any, Any], trace: Trace, agent: Agent) -> bool:
        """One segment. A harness written to 0.4.0's program API defines :meth:`launch`
        instead: it then runs as a program harness (its runtime, its model calls over the
        rollout's interception channel; :mod:`verifiers.v1.harnesses.program`)."""
        if type(self).launch is Harness.launch:
            raise NotImplementedError(f"{type(self).__name__} defines neither run() nor launch()")
        from verifiers.v1.harnesses.launched import launched

        return await launched(self).run(task, trace, agent)

    # 0.4.0's program API --------------------------------------------------------------

    async def setup(self, runtime: Any) -> None:
        """Provision the program in ``runtime`` before it is launched (a launch harness)."""

    async def launch(
        self,
        ctx: ModelContext,
        trace: Trace,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: TaskData,
    ) -> ProgramResult:
        """Run the harness's program in ``runtime`` to its end (0.4.0's program API): its model
        calls go to ``endpoint`` (an OpenAI base URL) with ``secret`` as the API key;
        ``mcp_urls`` are MCP servers of the task's tools it may reach (none here: the task's
        toolsets are offered to the model next to the program's own tools and run by the
        rollout, out of the program's sight); ``data`` is the task's data."""
        raise NotImplementedError

    def resolve_prompt(self, data: TaskData) -> tuple[str | None, str | Messages | None]:
        """The system prompt and the prompt to hand the program: the task's system prompt
        apart where :attr:`APPENDS_SYSTEM_PROMPT`, else folded in front of a text prompt
        (a message-list prompt with a system prompt cannot be folded: TypeError)."""
        prompt, system = data.prompt, data.system_prompt
        if system is None or self.APPENDS_SYSTEM_PROMPT:
            return (system if self.APPENDS_SYSTEM_PROMPT else None), prompt
        if not isinstance(prompt, str):
            raise TypeError(
                f"harness {self.config.id!r} cannot fold a system prompt into a "
                f"{'message-list' if prompt is not None else 'missing'} prompt; set "
                "APPENDS_SYSTEM_PROMPT to pass it apart"
            )
        return None, f"{system}\n\n{prompt}"

    def resolve_text_prompt(self, data: TaskData) -> tuple[str | None, str | None]:
        """As :meth:`resolve_prompt`, for a program that takes text only (ValueError for a
        message-list prompt)."""
        system, prompt = self.resolve_prompt(data)
        if prompt is not None and not isinstance(prompt, str):
            raise ValueError(
                f"harness {self.config.id!r} takes a text prompt only; this task's prompt is "
                "a list of messages"
            )
        return system, prompt

    def session(self, task: Task[Any, Any, Any], trace: Trace, agent: Agent) -> HarnessSession:
        """The live harness of one rollout (:class:`verifiers.v1.rollout.Rollout` runs its
        segments through it); by default each segment is one :meth:`run`."""
        return HarnessSession(self, task, trace, agent)


class HarnessSession:
    """One rollout's harness: :meth:`turn` runs one segment on the trace, after recording the
    user's messages (if any) at the end of the conversation."""

    def __init__(
        self, harness: Harness[Any], task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> None:
        self.harness, self.task, self.trace, self.agent = harness, task, trace, agent

    async def turn(self, messages: Messages | None = None) -> None:
        if messages:
            continue_branch(self.trace, messages).commit_prompt()
            self.trace.notify()
        await self.harness.run(self.task, self.trace, self.agent)

    async def close(self) -> None:
        """End the session (nothing is held between segments by default)."""


def opening_messages(data: TaskData) -> list[Message]:
    """The task's opening: its system prompt, then its prompt (text or messages)."""
    messages: list[Message] = []
    if data.system_prompt:
        messages.append(SystemMessage(content=data.system_prompt))
    if isinstance(data.prompt, str):
        messages.append(UserMessage(content=data.prompt))
    elif data.prompt:
        messages.extend(data.prompt)
    return messages


def seed_prompt(task: Task[Any, Any, Any], trace: Trace, opening: Messages | None = None) -> None:
    """Record the task's opening (``opening``, else :func:`opening_messages`) as the root of
    an empty trace."""
    if not trace.nodes:
        messages = opening if opening is not None else opening_messages(task.data)
        prepare_turn(trace, messages).commit_prompt()


class NullHarness(Harness[NullHarnessConfig]):
    """The plain chat loop: send the conversation, record the reply; the segment ends when a
    ``@vf.stop`` hook fires, the model stops calling tools, or ``max_turns`` is reached."""

    name = "null"
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def run(self, task: Task[Any, Any, Any], trace: Trace, agent: Agent) -> bool:
        if not any(m.role == "user" for m in trace.messages):
            raise TaskError(
                f"task {type(task).__name__} (idx {task.data.idx}) has no user message to answer; "
                "give it a prompt, or open the conversation with an interaction turn"
            )
        from verifiers.v1.mcp.toolset import rollout_tools, toolsets_of

        stops = trace_stops(task)
        available: dict[str | type, Any] = {
            "task": task.data,
            "trace": trace,
            "state": trace.state,
        }
        toolsets = toolsets_of(task)
        tools, owners = await rollout_tools(toolsets, trace.state)
        if tools and not trace.tools:
            trace.tools = tools
        while True:
            cap = agent.cap_reached(trace)
            if cap is not None:
                trace.stop(cap)
                return True
            await agent.sample(trace, tools or None, task)
            if trace.stop_condition is not None:  # a response stop fired
                return True
            for fn, hit in zip(stops, await invoke_all(stops, available), strict=True):
                if hit:
                    trace.stop(fn.__name__)
                    return True
            last = trace.last_message
            if not (isinstance(last, AssistantMessage) and last.tool_calls):
                return False
            if not toolsets:
                raise HarnessError(
                    "the model called a tool but the null harness offers none; give the task "
                    "toolsets, the agent a harness with tools, or make the task single-turn"
                )
            await _run_tool_calls(last.tool_calls, owners, trace, task)


async def _run_tool_calls(
    calls: list[ToolCall], owners: dict[str, Any], trace: Trace, task: Task[Any, Any, Any]
) -> None:
    """Run one assistant turn's tool calls concurrently (in the task's toolsets, with the
    trace's state); each result, or a tool's error, becomes the call's tool message, after
    the task's request interceptors saw it."""

    async def one(call: ToolCall) -> str:
        owner = owners.get(call.name)
        if owner is None:
            return f"error: no tool {call.name!r}"
        try:
            return str(await owner.call(call.name, call.arguments, trace.state))
        except Exception as exc:
            return f"error: {type(exc).__name__}: {exc}"

    results = await asyncio.gather(*(one(call) for call in calls))
    replies: Messages = [
        ToolMessage(tool_call_id=call.id, name=call.name, content=result)
        for call, result in zip(calls, results, strict=True)
    ]
    branch = trace.messages
    request, records = await intercept_request(
        task, trace, Request(messages=[*branch, *replies], tools=trace.tools or None),
        start=len(branch), kinds=(ToolMessage,),
    )  # fmt: skip
    trace.request_rewrites.extend(records)
    for message in request.messages[len(branch) :]:
        trace.append(message)


def harness_for(name: str | HarnessConfig) -> Harness[Any]:
    """The harness ``name`` (an id or a harness config) names, built from its config."""
    from verifiers.errors import ConfigError
    from verifiers.v1.utils.loaders import builtin_harness_ids, harness_class

    ident = name if isinstance(name, str) else name.id
    try:
        cls = harness_class(ident)
    except ConfigError as exc:
        raise HarnessError(
            f"unknown harness {ident!r}; available here: {builtin_harness_ids()} "
            f"(or install a package exporting a Harness subclass) ({exc})"
        ) from exc
    config = cls.config_type().model_validate({"id": ident}) if isinstance(name, str) else name
    return cls(config)


def _register() -> None:
    from verifiers.v1.utils.loaders import register_harness

    register_harness("null", NullHarness)


_register()
