"""The task's ``@vf.intercept`` and ``@vf.stop`` hooks at the model boundaries of a rollout.

A hook watches one boundary, named by its annotated parameter (:func:`hook_boundary`): a
``vf.Request`` (the conversation about to reach the model; only its new user and tool
messages may be rewritten) or a ``vf.Response`` (the model's reply before the harness gets
it; only its assistant message may be replaced, by an inert text-only one). A stop may also
watch the ``vf.Trace`` (checked after each turn, as before). Each hook gets a deep copy of the
boundary (and the trace, by its ``Trace`` annotation or its name); an interceptor returns the
replacement or None, a stop a bool. Replacements are recorded on the trace
(``request_rewrites`` / ``response_rewrites``); a response stop that fires stops the rollout
with the hook's name as the stop condition.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from verifiers.v1.decorators import call_hook, hook_boundary
from verifiers.v1.errors import TaskError
from verifiers.v1.trace import InterceptRecord, Trace
from verifiers.v1.types import (
    AssistantMessage,
    Message,
    Request,
    Response,
    ToolMessage,
    UserMessage,
    content_text,
)

if TYPE_CHECKING:
    from verifiers.v1.task import Task

__all__ = [
    "ProgramBoundary",
    "boundary_hooks",
    "intercept_request",
    "intercept_response",
    "prefix_len",
    "response_stop",
    "trace_stops",
]


def boundary_hooks(
    task: Task[Any, Any, Any], kind: str, boundary: type
) -> list[Callable[..., Any]]:
    """The task's ``kind`` hooks (``stop`` or ``intercept``) that watch ``boundary``."""
    allow_trace = kind == "stop"
    return list(
        task.memo(
            f"boundary:{kind}:{boundary.__name__}",
            lambda: [
                fn
                for fn in task.hooks(kind)
                if hook_boundary(fn, allow_trace=allow_trace) is boundary
            ],
        )
    )


def trace_stops(task: Task[Any, Any, Any]) -> list[Callable[..., Any]]:
    """The task's stops over the trace (checked after each turn)."""
    return boundary_hooks(task, "stop", Trace)


async def intercept_request(
    task: Task[Any, Any, Any],
    trace: Trace,
    request: Request,
    *,
    start: int,
    kinds: Sequence[type] = (UserMessage, ToolMessage),
    prepared: frozenset[int] = frozenset(),
    always: bool = False,
) -> tuple[Request, list[InterceptRecord]]:
    """``request`` after the task's request interceptors, with a record per replacement.
    Messages from ``start`` on of the ``kinds`` given may be rewritten (same count, same
    types, same tools, a tool message keeping its call id and name); any other change raises
    :class:`TaskError`. ``prepared``: positions an interceptor already saw (a tool result
    rewritten before the program recorded it): left as they are, and when every new message
    is prepared the interceptors are not run again. ``always``: run them even over a request
    with no new message (they may then change nothing)."""
    hooks = boundary_hooks(task, "intercept", Request)
    candidates = {
        i
        for i in range(start, len(request.messages))
        if isinstance(request.messages[i], tuple(kinds))
    }
    active = candidates - prepared
    records: list[InterceptRecord] = []
    if not hooks or (candidates and not active) or (not candidates and not always):
        return request, records
    current = request
    try:
        for hook in hooks:
            result = await call_hook(
                hook, {"request": current.model_copy(deep=True), "trace": trace,
                       Request: current.model_copy(deep=True), Trace: trace}
            )  # fmt: skip
            if result is None:
                continue
            if not isinstance(result, Request):
                raise TypeError(f"expected Request, got {type(result).__name__}")
            _check_request(current, result, active)
            if result != current:
                current = result
                records.append(InterceptRecord(handler=hook.__name__))
    except TaskError:
        raise
    except Exception as exc:
        raise TaskError(f"request interception failed: {type(exc).__name__}: {exc}") from exc
    return current, records


def _check_request(before: Request, after: Request, active: set[int]) -> None:
    if len(after.messages) != len(before.messages):
        raise ValueError("request interceptors cannot add or remove messages")
    if after.tools != before.tools:
        raise ValueError("request interceptors cannot rewrite tools")
    for i, (old, new) in enumerate(zip(before.messages, after.messages, strict=True)):
        if old == new:
            continue
        if i not in active:
            raise ValueError("request interceptors can only rewrite new user or tool messages")
        if type(new) is not type(old):
            raise TypeError(f"expected {type(old).__name__}, got {type(new).__name__}")
        if isinstance(old, ToolMessage) and isinstance(new, ToolMessage):
            if (new.tool_call_id, new.name) != (old.tool_call_id, old.name):
                raise ValueError("request interceptors cannot change a tool-call ID or name")


def watches_responses(task: Task[Any, Any, Any]) -> bool:
    """Whether the task has a response interceptor or a response stop (else a reply need
    not pass through :func:`intercept_response`)."""
    return bool(
        boundary_hooks(task, "intercept", Response) or boundary_hooks(task, "stop", Response)
    )


async def intercept_response(
    task: Task[Any, Any, Any], trace: Trace, response: Response
) -> tuple[Response, list[InterceptRecord], str | None]:
    """``response`` after the task's response interceptors, the records of its replacements,
    and the name of the first response stop that fired (None: none did)."""
    records: list[InterceptRecord] = []
    try:
        for hook in boundary_hooks(task, "intercept", Response):
            result = await call_hook(
                hook, {"response": response.model_copy(deep=True), "trace": trace,
                       Response: response.model_copy(deep=True), Trace: trace}
            )  # fmt: skip
            if result is None:
                continue
            if not isinstance(result, Response):
                raise TypeError(f"expected Response, got {type(result).__name__}")
            if result == response:
                continue
            same = result.model_copy(
                update={"message": response.message, "finish_reason": response.finish_reason}
            )
            if same != response:
                raise ValueError("response interceptors can only replace the assistant message")
            message = result.message
            if message.reasoning_content or message.tool_calls or message.provider_state:
                raise ValueError("response interceptors must return an inert text-only message")
            response = result
            records.append(InterceptRecord(handler=hook.__name__))
        for stop in boundary_hooks(task, "stop", Response):
            hit = await call_hook(
                stop, {"response": response.model_copy(deep=True), "trace": trace,
                       Response: response.model_copy(deep=True), Trace: trace}
            )  # fmt: skip
            if not isinstance(hit, bool):
                raise TypeError(f"@stop must return bool, got {type(hit).__name__}")
            if hit:
                return response, records, stop.__name__
    except TaskError:
        raise
    except Exception as exc:
        raise TaskError(f"response interception failed: {type(exc).__name__}: {exc}") from exc
    return response, records, None


async def response_stop(task: Task[Any, Any, Any], trace: Trace, model: str) -> str | None:
    """The name of the first of the task's response stops that fires on the trace's last
    reply (a program harness asks before handing the reply to its program), else None."""
    from verifiers.v1.types import AssistantMessage

    if not boundary_hooks(task, "stop", Response) or not trace.nodes:
        return None
    last = trace.last_message
    if not isinstance(last, AssistantMessage):
        return None
    boundary = Response(id="", created=0, model=model, message=last, finish_reason=None)
    _, _, stopped = await _stops_only(task, trace, boundary)
    return stopped


async def _stops_only(
    task: Task[Any, Any, Any], trace: Trace, response: Response
) -> tuple[Response, list[InterceptRecord], str | None]:
    try:
        for stop in boundary_hooks(task, "stop", Response):
            hit = await call_hook(
                stop, {"response": response.model_copy(deep=True), "trace": trace,
                       Response: response.model_copy(deep=True), Trace: trace}
            )  # fmt: skip
            if not isinstance(hit, bool):
                raise TypeError(f"@stop must return bool, got {type(hit).__name__}")
            if hit:
                return response, [], stop.__name__
    except Exception as exc:
        raise TaskError(f"response interception failed: {type(exc).__name__}: {exc}") from exc
    return response, [], None


def _user_key(message: Message) -> tuple[str, str]:
    return (message.role, content_text(message.content))


def _digest(message: Message) -> bytes:
    from verifiers.v1.harnesses.program import message_key

    return repr(message_key(message)).encode()


def prefix_len(trace: Trace, messages: Sequence[Message]) -> int:
    """How many of ``messages``, from the first, follow a path of the trace's graph (any
    branch): the rest is the request's new tail."""
    children: dict[int | None, list[int]] = {}
    for index, node in enumerate(trace.nodes):
        children.setdefault(node.parent, []).append(index)
    parents: list[int | None] = [None]
    matched = 0
    for message in messages:
        key = _digest(message)
        parents = [
            child
            for parent in parents
            for child in children.get(parent, [])
            if _digest(trace.nodes[child].message) == key
        ]
        if not parents:
            break
        matched += 1
    return matched


ToolKey = tuple[str, str]
"""A tool result's occurrence: the digest of the conversation before the reply that made the
call, and the call's id."""


class ProgramBoundary:
    """A program harness's rollout at its model boundary, as 0.4.0 polices it.

    - Every request the program makes passes the task's request interceptors and request
      stops (:meth:`request`): its new user and tool messages may be rewritten, each tool
      result seen on its own (the hooks get the request cut just after it); a rewritten tool
      result is pinned, put back into every later request that carries the program's copy.
    - Every reply with tool calls, before the program gets it (:meth:`gate_calls`): the
      request hooks see the conversation plus an empty result for each call; a stop ends the
      rollout, a rewrite is that call's verdict: a program that asks before running a tool
      (``SUPPORTS_TOOL_INTERCEPTION``, :meth:`decide`) records the rewrite instead of running
      it; with any other program the rollout ends there (the call would run regardless),
      its stop condition the interceptor's name.

    User messages the trace holds when the boundary opens were intercepted already (the
    rollout did it before seeding the trace) and are not shown again."""

    def __init__(
        self, task: Task[Any, Any, Any], trace: Trace, *, gates_tools: bool = False
    ) -> None:
        self.task = task
        self.trace = trace
        self.gates_tools = gates_tools
        self.prepared_users: Counter[tuple[str, str]] = Counter(
            _user_key(m) for m in trace.messages if isinstance(m, UserMessage)
        )
        self.decisions: dict[ToolKey, ToolMessage | None] = {}
        self.pinned: dict[ToolKey, ToolMessage] = {}
        self.gated: set[ToolKey] = set()
        self.error: Exception | None = None
        """A failure at :meth:`decide` (the program only sees an HTTP error): the rollout's
        error once the program ends."""
        self.interceptors = boundary_hooks(task, "intercept", Request)
        self.stops = boundary_hooks(task, "stop", Request)

    @property
    def watching(self) -> bool:
        """Whether the task has request interceptors or request stops at all."""
        return bool(self.interceptors or self.stops)

    def result_keys(self, messages: Sequence[Message]) -> dict[int, ToolKey]:
        """The occurrence key of each tool result in ``messages`` that answers a call of an
        earlier reply there (pinned results stand in for the program's copies)."""
        import hashlib

        prefix = hashlib.blake2b(digest_size=16)
        calls: dict[str, ToolKey] = {}
        keys: dict[int, ToolKey] = {}
        for position, message in enumerate(messages):
            if isinstance(message, ToolMessage) and message.tool_call_id in calls:
                key = calls[message.tool_call_id]
                keys[position] = key
                message = self.pinned.get(key, message)
            prefix.update(_digest(message))
            if isinstance(message, AssistantMessage):
                calls.update(
                    (call.id, (prefix.hexdigest(), call.id)) for call in message.tool_calls or []
                )
        return keys

    def pin(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with the pinned results in place of the program's copies. A result
        for a call the boundary blocked that the program never asked about means the call
        ran anyway: that fails the rollout."""
        from verifiers.v1.errors import HarnessError

        out = list(messages)
        for position, key in self.result_keys(messages).items():
            pinned = self.pinned.get(key)
            if pinned is None:
                continue
            if self.decisions.get(key) is not None and key not in self.gated:
                raise HarnessError(
                    f"tool call {key[1]!r} ran although a request interceptor blocked it: "
                    "the program never asked the tool gate"
                )
            out[position] = pinned
        return out

    async def request(
        self, request: Request, *, run_stops: bool = True
    ) -> tuple[Request, str | None]:
        """``request`` with pinned results put back, after the task's request interceptors
        (their records go on the trace), and the name of the first request stop that fired
        (None: none did)."""
        messages = self.pin(request.messages)
        request = request.model_copy(update={"messages": messages})
        keys = self.result_keys(messages)
        if not self.interceptors and (not run_stops or not self.stops):
            return request, None
        start = prefix_len(self.trace, messages)
        candidates: set[int] = set()
        if self.interceptors:
            users = self.prepared_users.copy()
            for position in range(start, len(messages)):
                message = messages[position]
                if isinstance(message, UserMessage):
                    key = _user_key(message)
                    if users[key]:
                        users[key] -= 1
                        continue
                    candidates.add(position)
                elif isinstance(message, ToolMessage) and keys.get(position) not in self.pinned:
                    candidates.add(position)
        ends = [
            position + 1
            for position in range(start, len(messages))
            if isinstance(messages[position], ToolMessage) and keys.get(position) not in self.pinned
        ]
        if not ends or ends[-1] != len(messages):
            ends.append(len(messages))
        current = list(messages)
        previous = 0
        for end in ends:
            active = {p for p in candidates if previous <= p < end}
            part = request.model_copy(update={"messages": current[:end]})
            if active:
                part, records = await intercept_request(
                    self.task, self.trace, part, start=0, prepared=frozenset(
                        p for p in range(end) if p not in active
                    ), kinds=(UserMessage, ToolMessage),
                )  # fmt: skip
                self.trace.request_rewrites.extend(records)
                current[:end] = part.messages
            if run_stops:
                stopped = await _request_stops(self.task, self.trace, part)
                if stopped is not None:
                    return request.model_copy(update={"messages": current}), stopped
            previous = end
        rewritten = request.model_copy(update={"messages": current})
        keys = self.result_keys(current)
        for position in candidates:
            after = current[position]
            if isinstance(after, ToolMessage) and after != messages[position] and position in keys:
                self.pinned[keys[position]] = after
        return rewritten, None

    def consume(self, messages: Sequence[Message]) -> None:
        """Forget the intercepted user messages a recorded request carried."""
        for message in messages[prefix_len(self.trace, messages) :]:
            if isinstance(message, UserMessage):
                key = _user_key(message)
                if self.prepared_users[key]:
                    self.prepared_users[key] -= 1

    async def gate_calls(self) -> str | None:
        """Judge the tool calls of the trace's last reply before the program gets it; the
        name of the stop that ends the rollout, if one does."""
        from verifiers.v1.errors import HarnessError

        branch = self.trace.messages
        reply = branch[-1] if branch else None
        if not self.watching or not (isinstance(reply, AssistantMessage) and reply.tool_calls):
            return None
        for call in reply.tool_calls:
            probe = ToolMessage(tool_call_id=call.id, content="", name=call.name)
            request = Request(messages=[*branch, probe], tools=self.trace.tools or None)
            key = self.result_keys(request.messages)[len(branch)]
            if key in self.decisions:
                raise HarnessError(f"tool call id {call.id!r} was reused in the same reply")
            request, stopped = await self.request(request)
            if stopped is not None:
                return stopped
            verdict = request.messages[-1]
            assert isinstance(verdict, ToolMessage)
            if verdict == probe:
                self.decisions[key] = None
                continue
            if not self.gates_tools:
                records = self.trace.request_rewrites
                return records[-1].handler if records else "tool_blocked"
            self.decisions[key] = verdict
        return None

    def verdict(self, tool_call_id: str) -> ToolMessage | None:
        """The result standing in for a call of the trace's last reply (the call must not
        run), or None: run it. Counts as the program having asked."""
        branch = self.trace.messages
        probe = ToolMessage(tool_call_id=tool_call_id, content="")
        key = self.result_keys([*branch, probe]).get(len(branch))
        if key is None:
            return None
        self.gated.add(key)
        return self.decisions.get(key)

    def decide(self, tool_call_id: str, name: str | None, arguments: object) -> dict[str, Any]:
        """The program's question before running a call (``{tool_call_id, name,
        arguments}``): ``allow``, ``deny`` with the result to record instead, or ``stop``."""
        from verifiers.v1.errors import HarnessError

        if self.trace.stop_condition is not None:
            return {"action": "stop", "reason": self.trace.stop_condition}
        branch = self.trace.messages
        reply = branch[-1] if branch else None
        calls = reply.tool_calls or [] if isinstance(reply, AssistantMessage) else []
        ids = {tool_call_id}
        if isinstance(arguments, dict):
            ids.update(
                arguments[k]
                for k in ("tool_call_id", "call_id", "toolCallId")
                if isinstance(arguments.get(k), str)
            )
        matches = [
            call
            for call in calls
            if any(i == call.id or i.startswith(f"{call.id}|") or i.endswith(f":{call.id}")
                   for i in ids)
        ] or [
            call
            for call in calls
            if (name is None or call.name == name) and _same_arguments(call.arguments, arguments)
        ]  # fmt: skip
        if len(matches) != 1:
            raise HarnessError(
                f"the tool gate was asked about {tool_call_id!r}, which matches "
                f"{len(matches)} calls of the last reply"
            )
        verdict = self.verdict(matches[0].id)
        if verdict is None:
            return {"action": "allow"}
        return {"action": "deny", "message": verdict.model_dump(exclude_none=True)}


def _same_arguments(arguments: str, other: object) -> bool:
    import json

    try:
        return json.dumps(json.loads(arguments), sort_keys=True) == json.dumps(
            other, sort_keys=True
        )
    except (ValueError, TypeError):
        return arguments == other


async def _request_stops(task: Task[Any, Any, Any], trace: Trace, request: Request) -> str | None:
    try:
        for stop in boundary_hooks(task, "stop", Request):
            hit = await call_hook(
                stop, {"request": request.model_copy(deep=True), "trace": trace,
                       Request: request.model_copy(deep=True), Trace: trace}
            )  # fmt: skip
            if not isinstance(hit, bool):
                raise TypeError(f"@stop must return bool, got {type(hit).__name__}")
            if hit:
                return stop.__name__
    except Exception as exc:
        raise TaskError(f"request interception failed: {type(exc).__name__}: {exc}") from exc
    return None
