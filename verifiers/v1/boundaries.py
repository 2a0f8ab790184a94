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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from verifiers.v1.decorators import call_hook, hook_boundary
from verifiers.v1.errors import TaskError
from verifiers.v1.trace import InterceptRecord, Trace
from verifiers.v1.types import Request, Response, ToolMessage, UserMessage

if TYPE_CHECKING:
    from verifiers.v1.task import Task

__all__ = [
    "boundary_hooks",
    "intercept_request",
    "intercept_response",
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
) -> tuple[Request, list[InterceptRecord]]:
    """``request`` after the task's request interceptors, with a record per replacement.
    Messages from ``start`` on of the ``kinds`` given may be rewritten (same count, same
    types, same tools, a tool message keeping its call id and name); any other change raises
    :class:`TaskError`."""
    hooks = boundary_hooks(task, "intercept", Request)
    active = {
        i
        for i in range(start, len(request.messages))
        if isinstance(request.messages[i], tuple(kinds))
    }
    records: list[InterceptRecord] = []
    if not hooks or not active:
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
