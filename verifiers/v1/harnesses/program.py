"""Program harnesses: the agent is a program running in a :class:`~verifiers.v1.runtimes.Runtime`,
and its model calls are intercepted.

Each rollout opens its own channel of the interception server (:mod:`verifiers.agents.interception`):
a Unix socket bound into the runtime, reached by the program through a small relay on the
runtime's loopback (``$OPENAI_BASE_URL``, the channel's secret as ``$OPENAI_API_KEY``; for
programs of Anthropic's Messages API ``$ANTHROPIC_BASE_URL`` and ``$ANTHROPIC_API_KEY``). Every
request the program makes becomes one model call of the trace: the harness calls the model through
the agent's client, records the reply with its token ids (the oracle ids the server returned)
and answers the program. The segment ends when the program exits, a ``@vf.stop`` hook fires or
``max_turns`` is reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from pydantic import Field, TypeAdapter, ValidationError
from typing_extensions import TypeVar

from verifiers.errors import SandboxError
from verifiers.v1.boundaries import ProgramBoundary, response_stop, trace_stops
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.decorators import invoke_all
from verifiers.v1.errors import HarnessError, ModelError
from verifiers.v1.graph import MessageNode
from verifiers.v1.harness import Harness
from verifiers.v1.mcp.toolset import rollout_tools, toolsets_of
from verifiers.v1.runtimes import BwrapConfig, Runtime, RuntimeConfig, make_runtime
from verifiers.v1.task import _type_arg
from verifiers.v1.trace import ModelCall, TimeSpan
from verifiers.v1.types import (
    AssistantMessage,
    Message,
    Request,
    Tool,
    ToolCall,
    Usage,
    content_text,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from verifiers.agents.interception import Channel, InterceptedCall, InterceptionServer
    from verifiers.sandbox.base import SandboxProcess
    from verifiers.v1.agent import Agent
    from verifiers.v1.task import Task
    from verifiers.v1.task_runtime import TaskRuntime
    from verifiers.v1.trace import Trace

__all__ = [
    "SOCKET_INSIDE",
    "ProgramHarness",
    "ProgramHarnessConfig",
    "ProgramHarnessConfigT",
    "message_key",
]

SOCKET_INSIDE = "/run/vf/model.sock"
_TAIL = 1 << 14
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)
_RUNTIME: TypeAdapter[RuntimeConfig] = TypeAdapter(RuntimeConfig)


class ProgramHarnessConfig(HarnessConfig):
    """Where and how a program harness runs its program (``env`` / ``forward_env``: the
    program's extra variables)."""

    runtime: RuntimeConfig | None = None
    """Where the program runs; None: the seat's ``runtime`` (``AgentConfig.runtime``), else
    ``bwrap`` (a sandbox without network). ``subprocess`` (no isolation) only when named."""
    timeout: float = Field(default=3600.0, gt=0)
    """Wall-clock seconds the program may run (default one hour); past it the program is
    stopped and the rollout ends with ``agent_timeout`` (``trace.is_timeout``)."""


ProgramHarnessConfigT = TypeVar(
    "ProgramHarnessConfigT", bound=ProgramHarnessConfig, default=ProgramHarnessConfig
)


def _tool_calls(raw: Any) -> list[ToolCall] | None:
    calls = [
        ToolCall(
            id=str(tc.get("id", "")),
            name=str(tc["function"].get("name", "")),
            arguments=str(tc["function"].get("arguments", "")),
        )
        for tc in raw or []
        if isinstance(tc, dict) and isinstance(tc.get("function"), dict)
    ]
    return calls or None


def message_from_wire(raw: dict[str, Any]) -> Message:
    """A chat-completions message (as a program sends it) as a v1 message."""
    if raw.get("role") == "assistant":
        return AssistantMessage(
            content=raw.get("content") if isinstance(raw.get("content"), str) else None,
            reasoning_content=raw.get("reasoning_content"),
            tool_calls=_tool_calls(raw.get("tool_calls")),
        )
    fields = {k: v for k, v in raw.items() if k in ("role", "content", "tool_call_id", "name")}
    if fields.get("content") is None:
        fields["content"] = ""
    return _MESSAGE.validate_python(fields)


def _arguments_key(arguments: str) -> str:
    """Tool-call arguments compared by their JSON value where they are JSON: a program of a
    dialect that sends them back as an object (Anthropic's ``input``) re-serialises them."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments


def message_key(message: Message) -> tuple[Any, ...]:
    """What identifies a message when matching a program's request against the trace."""
    calls: tuple[Any, ...] = ()
    if isinstance(message, AssistantMessage):
        calls = tuple((c.id, c.name, _arguments_key(c.arguments)) for c in message.tool_calls or [])
    return (message.role, content_text(message.content), calls)


def _record_prompt(trace: Trace, prompt: list[Message], tools: list[Tool]) -> None:
    """Make the trace's last branch end with ``prompt``: append what extends it; a request that
    does not extend it (the program rewrote its history) starts a new branch. Before the first
    model call, the program's opening replaces the trace's seeded one."""
    current = trace.messages
    if not any(n.sampled for n in trace.nodes) and [message_key(m) for m in current] != [
        message_key(m) for m in prompt[: len(current)]
    ]:
        trace.nodes.clear()
        current = []
    shared = 0
    for have, want in zip(current, prompt, strict=False):
        if message_key(have) != message_key(want):
            break
        shared += 1
    if shared < len(current):  # a new branch from the root
        parent: int | None = None
        for message in prompt:
            trace.nodes.append(MessageNode(parent=parent, message=message, tools=tools))
            parent = len(trace.nodes) - 1
        return
    for message in prompt[shared:]:
        index = trace.append(message)
        trace.nodes[index].tools = tools


_Hidden = dict[int, tuple[list[tuple[Any, ...]], list[dict[str, Any]]]]
"""Toolset exchanges the program never saw: by the program's message count where they go,
the keys of the program's messages before them, and the exchange's wire messages."""


class ProgramHarness(Harness[ProgramHarnessConfigT]):
    """A harness whose agent is a program run in a runtime, its model calls intercepted.
    Subclasses say what to run (:meth:`command`) and may upload files first (:meth:`prepare`);
    their own knobs live on a :class:`ProgramHarnessConfig` subclass
    (``ProgramHarness[MyConfig]``).

    The task's request interceptors and request stops see every request the program makes
    and every reply's tool calls before the program gets them
    (:class:`~verifiers.v1.boundaries.ProgramBoundary`). A program that asks before running
    each tool call (``SUPPORTS_TOOL_INTERCEPTION``: it posts ``{tool_call_id, name,
    arguments}`` to ``$VF_TOOL_INTERCEPTION_URL``, given when the task has such hooks)
    records an interceptor's result instead of running a call; with any other program such a
    rewrite ends the rollout."""

    EXECUTES_CODE = True

    def __init__(self, config: ProgramHarnessConfigT | None = None) -> None:
        super().__init__(config)
        self._servers: dict[int, InterceptionServer] = {}
        self._leases: dict[int, tuple[Runtime, Channel, int | None]] = {}

    @classmethod
    def config_type(cls) -> type[ProgramHarnessConfig]:
        """The ``ProgramHarness[Config]`` argument; a subclass naming none gets
        :class:`ProgramHarnessConfig`."""
        found = _type_arg(cls, ProgramHarnessConfig)
        return found if found is not None else ProgramHarnessConfig

    def runtime_config(self, agent: Agent) -> RuntimeConfig:
        """Where the program runs: the harness config's ``runtime``, else the seat's
        (``AgentConfig.runtime``), else ``bwrap``: model-written commands are sandboxed unless
        a config names another runtime (``subprocess`` isolates nothing)."""
        if self.config.runtime is not None:
            return self.config.runtime
        seat = agent.config.runtime
        if seat is None:
            return BwrapConfig()
        try:
            return _RUNTIME.validate_python(seat)
        except ValidationError as exc:
            raise HarnessError(
                f"agent {agent.name!r}: bad runtime {seat!r} for the {self.config.id} harness "
                f"(give `type` one of subprocess, bwrap, docker, and only its keys): {exc}"
            ) from exc

    @abstractmethod
    def command(
        self, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> tuple[list[str], dict[str, str]]:
        """The program's argv and extra environment."""

    async def prepare(
        self, runtime: Runtime, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> None:
        """Runs in the started runtime before the program (upload its input here)."""

    def binds(self) -> dict[str, str]:
        """Host paths the program needs, read-only: ``{host: inside}`` (a runtime that sees
        the host's files, ``subprocess``, uses the host paths as they are)."""
        return {}

    def _server(self) -> InterceptionServer:
        from verifiers.agents.interception import InterceptionServer

        loop = id(asyncio.get_running_loop())
        server = self._servers.get(loop)
        if server is None:
            server = self._servers[loop] = InterceptionServer()
        return server

    async def open_runtime(
        self, trace: Trace, agent: Agent, env: Mapping[str, str] | None = None
    ) -> TaskRuntime:
        """Start the runtime of ``trace``'s rollout, with this harness's interception channel
        bound in: the rollout's task hooks run in it and so does the program (each segment's
        :meth:`run`), so the hooks see what the program left. Stopped by
        :meth:`release_runtime`."""
        from verifiers.v1.task_runtime import TaskRuntime

        server = self._server()
        runtime = TaskRuntime(self.runtime_config(agent), env)
        channel, port = await self._connect(server, runtime)
        self._leases[id(trace)] = (runtime, channel, port)
        return runtime

    async def release_runtime(self, trace: Trace) -> None:
        """Stop the runtime :meth:`open_runtime` started for ``trace`` (idempotent)."""
        lease = self._leases.pop(id(trace), None)
        if lease is not None:
            await self._teardown(self._server(), lease[1], lease[0])

    async def _connect(
        self, server: InterceptionServer, runtime: Runtime
    ) -> tuple[Channel, int | None]:
        """Start ``runtime`` and open its interception channel, reachable from that runtime
        only; the channel and its port inside the runtime, or None where a relay must carry
        the program's calls (:meth:`_relay`). Local sandboxes (bwrap, subprocess): the
        channel listens on a socket the sandbox's agent opened on the sandbox's own loopback,
        before any code of the task or the program runs there (no relay process). Others
        (docker): a Unix socket of the channel bound in, reached through a relay."""
        if runtime.type not in ("bwrap", "subprocess"):
            channel = await server.open_channel()
            try:
                binds = (
                    {**self.binds(), channel.path: SOCKET_INSIDE} if runtime.binds_paths else None
                )
                await runtime.start(binds)
            except BaseException:
                await self._teardown(server, channel, runtime)
                raise
            return channel, None
        try:
            await runtime.start(self.binds() if runtime.binds_paths else None)
            listen = getattr(runtime.sandbox, "listen_loopback", None)
            if listen is None:
                raise HarnessError(
                    f"the {runtime.type} runtime's sandbox cannot listen on its loopback"
                )
            try:
                listener = await listen()
            except SandboxError as e:
                raise HarnessError(f"the interception channel could not be opened: {e}") from e
            try:
                channel = await server.open_channel(listener=listener)
            except BaseException:
                listener.close()
                raise
        except BaseException:
            await runtime.stop()
            if server.open_channels == 0:
                await server.close()
            raise
        return channel, int(listener.getsockname()[1])

    @staticmethod
    async def _teardown(server: InterceptionServer, channel: Channel, runtime: Runtime) -> None:
        await channel.close()
        await runtime.stop()
        if server.open_channels == 0:
            await server.close()

    async def run(self, task: Task[Any, Any, Any], trace: Trace, agent: Agent) -> bool:
        server = self._server()
        lease = self._leases.get(id(trace))
        if lease is not None:  # the rollout's runtime, already started
            runtime, channel, port = lease
        else:
            from verifiers.v1.task_runtime import TaskRuntime

            config = self.runtime_config(agent)
            local = config.type in ("subprocess", "bwrap", "docker")
            runtime = TaskRuntime(config) if local else make_runtime(config)
            channel, port = await self._connect(server, runtime)
        procs: list[SandboxProcess] = []
        watcher: asyncio.Task[int] | None = None
        tail = bytearray()
        try:
            if port is None:
                port = await self._relay(runtime, runtime.config, channel, procs)
            boundary = ProgramBoundary(task, trace, gates_tools=self.SUPPORTS_TOOL_INTERCEPTION)
            watching = boundary.watching
            await self.prepare(runtime, task, trace, agent)
            base_url = channel.base_url(port)
            channel_env = {
                "OPENAI_BASE_URL": base_url,
                "OPENAI_API_BASE": base_url,
                "OPENAI_API_KEY": channel.secret,
                "OPENAI_MODEL": agent.model,
                "ANTHROPIC_BASE_URL": channel.anthropic_base_url(port),
                "ANTHROPIC_API_KEY": channel.secret,
                "ANTHROPIC_MODEL": agent.model,
            }
            if watching and self.SUPPORTS_TOOL_INTERCEPTION:
                channel.tool_hook = self._tool_hook(boundary)
                channel_env["VF_TOOL_INTERCEPTION_URL"] = channel.tool_url(port)
            watcher = await self._start_program(
                runtime, task, trace, agent, channel_env, tail, procs
            )
            deadline = time.monotonic() + self.config.timeout
            toolsets = toolsets_of(task)
            hidden: _Hidden = {}
            while True:
                call = await self._next_call(channel, watcher, deadline)
                if call is None:
                    break
                if trace.stop_condition is not None:  # a tool hook stopped the rollout
                    call.fail(503, "the rollout is over", "rollout_finished")
                    return True
                boundary_or_none = boundary if watching else None
                if await self._answer(call, task, trace, agent, toolsets, hidden, boundary_or_none):
                    return True
            if boundary.error is not None:
                raise boundary.error
            if trace.stop_condition is not None:  # a tool hook stopped it; the program quit
                return True
            return self._ended(channel, watcher, tail, trace)
        finally:
            channel.tool_hook = None
            for proc in procs:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(proc.kill(), 10.0)
            if watcher is not None and not watcher.done():
                watcher.cancel()
                with contextlib.suppress(BaseException):
                    await watcher
            if lease is None:
                await self._teardown(server, channel, runtime)

    async def _start_program(
        self,
        runtime: Runtime,
        task: Task[Any, Any, Any],
        trace: Trace,
        agent: Agent,
        channel_env: dict[str, str],
        tail: bytearray,
        procs: list[SandboxProcess],
    ) -> asyncio.Task[int]:
        """Start the program (:meth:`command`, its model calls pointed at the channel by
        ``channel_env``); a task that ends with its exit status, keeping its output's tail."""
        argv, env = self.command(task, trace, agent)
        proc = await runtime.spawn(argv, env={**self.config.resolved_env, **env, **channel_env})
        procs.append(proc)
        return asyncio.ensure_future(self._watch(proc, tail))

    @staticmethod
    def _tool_hook(boundary: ProgramBoundary) -> Any:
        """The channel's tool route for ``boundary``: ``{tool_call_id, name, arguments}`` in,
        the verdict out (``{"action": "allow" | "deny" | "stop", "message"?, "reason"?}``)."""

        async def hook(request: dict[str, Any]) -> dict[str, Any]:
            try:
                return boundary.decide(
                    str(request.get("tool_call_id", "")),
                    request.get("name") if isinstance(request.get("name"), str) else None,
                    request.get("arguments"),
                )
            except Exception as exc:
                boundary.error = exc
                raise

        return hook

    def _ended(
        self, channel: Channel, watcher: asyncio.Task[int], tail: bytearray, trace: Trace
    ) -> bool:
        """How the program's run ended once it made no further call: over the interception
        server's limits or a failing exit (raised), its exit (the turn handed back: False),
        or its time up (True: the rollout is over)."""
        if channel.limit_errors:
            raise HarnessError(
                f"the {type(self).__name__} program went over the interception server's "
                f"limits after {trace.num_turns} model call(s): " + "; ".join(channel.limit_errors)
            )
        if watcher.done() and not watcher.cancelled():
            code = watcher.result()
            if code != 0:
                raise HarnessError(
                    f"the {type(self).__name__} program exited with status {code} after "
                    f"{trace.num_turns} model call(s): "
                    f"{tail.decode('utf-8', 'replace')[-2000:]}"
                )
            return False  # the turn is handed back (a plain run then ends agent_completed)
        trace.is_timeout = True
        trace.stop("agent_timeout")
        return True

    async def _relay(
        self,
        runtime: Runtime,
        config: Any,
        channel: Channel,
        procs: list[SandboxProcess],
    ) -> int:
        """Start the relay from the runtime's loopback to the channel's socket; its port."""
        from verifiers.agents.interception import FORWARDER

        target = SOCKET_INSIDE if runtime.binds_paths else channel.path
        proc = await runtime.spawn(["python3", "-c", FORWARDER, target])
        procs.append(proc)
        try:
            line = await asyncio.wait_for(proc.readline(), config.start_timeout)
        except TimeoutError:
            line = b""
        try:
            return int(line)
        except ValueError:
            raise HarnessError(
                f"the interception relay did not start in the {runtime.type} runtime: "
                f"{proc.stderr_tail().decode(errors='replace')[-500:]}"
            ) from None

    @staticmethod
    async def _watch(proc: SandboxProcess, tail: bytearray) -> int:
        """Wait for the program's exit, keeping the tail of its output."""

        async def read() -> None:
            while chunk := await proc.read(1 << 16):
                tail.extend(chunk)
                del tail[: max(0, len(tail) - _TAIL)]

        reader = asyncio.ensure_future(read())
        try:
            code = await proc.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), 1.0)
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
            tail.extend(proc.stderr_tail()[-_TAIL:])
        return code

    @staticmethod
    async def _next_call(
        channel: Channel, watcher: asyncio.Task[int], deadline: float
    ) -> InterceptedCall | None:
        """The program's next request; None once it exited, went over the interception
        server's limits or its time is up."""
        getter = asyncio.ensure_future(channel.next_call())
        limit = asyncio.ensure_future(channel.limit_hit())
        try:
            await asyncio.wait(
                {getter, watcher, limit},
                timeout=max(0.0, deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            for waiter in (getter, limit):
                if not waiter.done():
                    waiter.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await waiter
        if getter.done() and not getter.cancelled():
            return getter.result()
        return None

    async def _answer(
        self,
        call: InterceptedCall,
        task: Task[Any, Any, Any],
        trace: Trace,
        agent: Agent,
        toolsets: list[Any],
        hidden: _Hidden,
        boundary: ProgramBoundary | None = None,
    ) -> bool:
        """Answer one intercepted request with model calls recorded on the trace; True when
        the rollout is over (a stop hook fired or the turn cap was reached).

        The task's toolsets are offered next to the program's own tools; a reply that calls
        only toolset tools is run here (in this process, with the rollout's state) and the
        model asked again, so the program never sees that exchange. It is spliced back into
        every later request of the program that extends the one it answered (``hidden``: by
        the program's message count and the messages before it), so the model and the trace
        keep it; a program that rewrote its history (a new context) gets none."""
        own = [t for t in call.tools or [] if isinstance(t.get("function"), dict)]
        extra, owners = await rollout_tools(toolsets, trace.state)
        schemas = own + [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in extra
        ]
        tools = [
            Tool(
                name=str(t["function"].get("name", "")),
                description=str(t["function"].get("description", "")),
                parameters=dict(t["function"].get("parameters") or {}),
            )
            for t in own
        ] + extra
        if tools and not trace.tools:
            trace.tools = tools
        keys = [message_key(message_from_wire(m)) for m in call.messages]

        def spliced(at: int) -> list[dict[str, Any]]:
            entry = hidden.get(at)
            return entry[1] if entry is not None and entry[0] == keys[:at] else []

        prompt: list[dict[str, Any]] = []
        for i, message in enumerate(call.messages):
            prompt.extend(spliced(i))
            prompt.append(message)
        prompt.extend(spliced(len(call.messages)))
        owned = {t.name for t in extra}
        while True:
            cap = agent.cap_reached(trace)
            if cap is not None:
                call.fail(400, f"the rollout reached its {cap} cap", f"{cap}_reached")
                trace.stop(cap)
                return True
            messages = [message_from_wire(m) for m in prompt]
            if boundary is not None:
                prompt, messages, stopped = await self._intercept(boundary, prompt, messages, tools)
                if stopped is not None:
                    _record_prompt(trace, messages, tools)
                    call.fail(400, f"rollout stopped: {stopped}", "rollout_finished")
                    trace.stop(stopped)
                    return True
                boundary.consume(messages)
            _record_prompt(trace, messages, tools)
            response = await self._sample(call, trace, agent, prompt, schemas or None, tools)
            stopped = await response_stop(task, trace, agent.model)  # before the program sees it
            if stopped is None and boundary is not None:
                stopped = await boundary.gate_calls()
            if stopped is not None:
                call.fail(400, f"rollout stopped: {stopped}", "rollout_finished")
                trace.stop(stopped)
                return True
            calls = response.tool_calls
            names = {str((c.get("function") or {}).get("name", "")) for c in calls}
            if not calls or not names <= owned:
                call.answer(response)
                return await self._stopped(task, trace)
            if await self._stopped(task, trace):
                call.fail(503, "the rollout is over", "rollout_finished")
                return True
            turn = [dict(response.message)]
            reply = trace.last_message
            assert isinstance(reply, AssistantMessage) and reply.tool_calls
            for tool_call in reply.tool_calls:
                owner = owners[tool_call.name]
                verdict = boundary.verdict(tool_call.id) if boundary is not None else None
                try:
                    out = (
                        content_text(verdict.content)
                        if verdict is not None
                        else str(await owner.call(tool_call.name, tool_call.arguments, trace.state))
                    )
                except Exception as exc:
                    out = f"error: {type(exc).__name__}: {exc}"
                turn.append(
                    {
                        "role": "tool",
                        "tool_call_id": tool_call.id,
                        "name": tool_call.name,
                        "content": out,
                    }
                )
            at = len(call.messages)
            if at in hidden and hidden[at][0] == keys:
                hidden[at][1].extend(turn)
            else:
                hidden[at] = (keys, turn)
            prompt.extend(turn)

    @staticmethod
    async def _intercept(
        boundary: ProgramBoundary,
        prompt: list[dict[str, Any]],
        messages: list[Message],
        tools: list[Tool],
    ) -> tuple[list[dict[str, Any]], list[Message], str | None]:
        """The program's request after the boundary (pinned results, the task's request
        interceptors): its wire messages, its messages and the request stop that fired."""
        from verifiers.v1.dialects.chat import message_to_wire

        request, stopped = await boundary.request(Request(messages=messages, tools=tools or None))
        after = list(request.messages)
        if after != messages:
            prompt = [
                raw if new == old else message_to_wire(new)
                for raw, old, new in zip(prompt, messages, after, strict=True)
            ]
        return prompt, after, stopped

    async def _sample(
        self,
        call: InterceptedCall,
        trace: Trace,
        agent: Agent,
        prompt: list[dict[str, Any]],
        schemas: list[dict[str, Any]] | None,
        tools: list[Tool],
    ) -> Any:
        record = ModelCall(model=agent.model, time=TimeSpan(start=time.time()))
        trace.calls.append(record)
        sampling = {**call.sampling_args, **agent.sampling.as_args()}
        try:
            response = await agent.client.get_response(
                prompt, agent.model, sampling_args=sampling, tools=schemas
            )
        except Exception as exc:
            record.time.end = time.time()
            trace.timing.agent.model.duration += record.time.duration
            call.fail(502, f"the model call failed: {type(exc).__name__}")
            raise ModelError(f"model {agent.model!r} failed: {exc}") from exc
        record.time.end = time.time()
        trace.timing.agent.model.duration += record.time.duration
        raw = response.message
        reply = AssistantMessage(
            content=raw.get("content"),
            reasoning_content=raw.get("reasoning_content"),
            tool_calls=_tool_calls(raw.get("tool_calls")),
        )
        record.node = trace.append(
            reply,
            sampled=True,
            prompt_token_ids=response.prompt_token_ids,
            completion_token_ids=response.completion_token_ids,
            completion_logprobs=response.completion_logprobs,
        )
        trace.nodes[record.node].tools = tools
        record.finish_reason = response.finish_reason
        record.usage = Usage(
            input_tokens=response.usage.prompt_tokens,
            output_tokens=response.usage.completion_tokens,
        )
        trace.notify()
        return response

    @staticmethod
    async def _stopped(task: Task[Any, Any, Any], trace: Trace) -> bool:
        stops = trace_stops(task)
        available: dict[str | type, Any] = {
            "task": task.data,
            "trace": trace,
            "state": trace.state,
        }
        for fn, hit in zip(stops, await invoke_all(stops, available), strict=True):
            if hit:
                trace.stop(fn.__name__)
                return True
        return False


def program_input(trace: Trace, **extra: Any) -> bytes:
    """The JSON input of a built-in program: the trace's opening messages plus ``extra``."""
    from verifiers.v1.dialects.chat import message_to_wire

    return json.dumps({"messages": [message_to_wire(m) for m in trace.messages], **extra}).encode()
