"""Replaying a saved rollout: the environment runs again with the model's recorded answers.

A reward function may read what the rollout left in its state (a game's ``solved`` flag, a
sandbox where the program ran, the files an agent edited), which a saved record does not hold.
Re-scoring therefore does not rebuild a state from the record: it **replays** the rollout. The
environment starts the rollout afresh (its ``setup_state``, sandboxes, tools, agent programs),
and each model call is answered with the assistant message the record holds for that call (its
``trajectory``; the assistant messages of ``completion`` for records without one). The
environment's own turns run again, so every state field and sandbox artefact the rubric reads
is there, recomputed, never taken from the record; then the rubric scores it.

A replay is **exact** when the environment asked for exactly the recorded model calls: the
reward is then the rubric's verdict on the replayed rollout. The environment's own messages are
recomputed, not trusted: where they come out differently from the record (a tool's output with
timings in it, or a record whose environment messages were edited), the outcome notes where,
and the reward is still the replay's. Otherwise the record is *not re-scorable*, with the
reason: the environment asked for a call the record does not have (a timeout in the original
run, a non-deterministic environment), or stopped before using all of them. A record whose
rollout ended with an infrastructure error (an endpoint, a sandbox: not the model's answer)
replays to the same unscored end (reward ``None``), as the evaluation leaves such a rollout.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from verifiers.envs.environment import MODEL_OUTPUT_ERRORS
from verifiers.messages import as_message
from verifiers.results import _messages_out
from verifiers.testing.scripted import ScriptedClient
from verifiers.types import Messages, State

if TYPE_CHECKING:
    from verifiers.envs.environment import Environment

__all__ = ["ReplayOutcome", "replay_records"]


class ReplayExhausted(Exception):
    """The environment asked for a model call the record does not hold."""


@dataclass(slots=True)
class ReplayOutcome:
    """One record's replay. ``status`` is ``"exact"`` (``state`` holds the recomputed rollout,
    scored) or ``"not_rescorable"`` (``reason`` says why; ``state`` is ``None``)."""

    index: int
    status: Literal["exact", "not_rescorable"]
    reason: str | None = None
    state: State | None = None
    note: str | None = None
    """For an exact replay: where the environment's own messages came out differently (a tool's
    output with timings in it, say). The model's answers and the number of calls were the same,
    and the reward is the rubric's verdict on the replayed rollout, not on the record's text."""


def _replies(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The model's answers in call order: one per trajectory step, else the assistant
    messages of the completion."""
    steps = record.get("trajectory")
    replies: list[dict[str, Any]] = []
    # a v1 environment's rollout (verifiers.v1.bridge) calls the model through its own agents,
    # so its record's trajectory is empty: its calls are the completion's assistant messages
    if isinstance(steps, list) and steps:  # the calls as they were made
        for step in steps:
            completion = step.get("completion") if isinstance(step, Mapping) else None
            message = next(
                (
                    m
                    for m in completion or ()
                    if isinstance(m, Mapping) and m.get("role") == "assistant"
                ),
                None,
            )
            reply = dict(message) if message is not None else {"content": None}
            if isinstance(step, Mapping) and step.get("finish_reason"):
                reply["finish_reason"] = step["finish_reason"]
            replies.append(reply)
        return replies
    completion = record.get("completion")
    if isinstance(completion, list):
        replies = [
            dict(m) for m in completion if isinstance(m, Mapping) and m.get("role") == "assistant"
        ]
    elif isinstance(completion, str) and completion:
        replies = [{"content": completion}]
    return replies


def _reply_of(message: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"content": message.get("content")}
    for key in ("reasoning_content", "finish_reason"):
        if message.get(key) is not None:
            reply[key] = message[key]
    calls = message.get("tool_calls")
    if calls:
        out = []
        for call in calls:
            fn = call.get("function") if isinstance(call, Mapping) else None
            fn = fn if isinstance(fn, Mapping) else call
            out.append(
                {
                    "id": call.get("id") if isinstance(call, Mapping) else None,
                    "name": fn.get("name"),
                    "arguments": fn.get("arguments", {}),
                }
            )
        reply["tool_calls"] = out
    return reply


class _ReplayClient(ScriptedClient):
    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.recorded = len(replies)
        self.exhausted = False
        queue = [_reply_of(r) for r in replies]

        def answer(prompt: Messages | str) -> dict[str, Any]:
            if not queue:
                self.exhausted = True
                raise ReplayExhausted(
                    f"the environment asked for model call {self.recorded + 1}; "
                    f"the record holds {self.recorded}"
                )
            return queue.pop(0)

        super().__init__(responder=answer)


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _normal(messages: Any) -> Any:
    """Messages as comparable plain data: role, content, tool calls (name and parsed
    arguments), tool call id. Ids the model server made up are left out."""
    if not isinstance(messages, list):
        return messages
    out = []
    for m in _messages_out(messages) or []:
        if not isinstance(m, Mapping):
            out.append(m)
            continue
        calls = []
        for call in m.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call, Mapping) else None
            fn = fn if isinstance(fn, Mapping) else call
            calls.append((fn.get("name"), _args(fn.get("arguments"))))
        out.append((m.get("role"), m.get("content"), calls))
    return out


def _row(record: Mapping[str, Any]) -> dict[str, Any]:
    prompt = record.get("prompt")
    return {
        "prompt": [as_message(m) for m in prompt] if isinstance(prompt, list) else prompt,
        "answer": record.get("answer", ""),
        "info": record.get("info") or {},
        "task": record.get("task") or "default",
        "example_id": record.get("example_id"),
    }


def _first_difference(a: list[Any], b: list[Any]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _infra_error(record: Mapping[str, Any]) -> bool:
    """Whether the record's rollout ended on an error that is not the model's answer."""
    error = record.get("error")
    if not error:
        return False
    kind = error.get("type") if isinstance(error, Mapping) else type(error).__name__
    return kind not in MODEL_OUTPUT_ERRORS


def _judge(record: Mapping[str, Any], state: State, client: _ReplayClient) -> str | None:
    """Why the replay of ``record`` is not exact (``None`` when it is)."""
    used = len(client.calls) - (1 if client.exhausted else 0)
    if client.exhausted and not (_infra_error(record) and used == client.recorded):
        return (
            f"the environment asked for model call {client.recorded + 1}; the record holds "
            f"{client.recorded} (the original run may have stopped on a timeout, or the "
            "environment does not behave the same)"
        )
    if used < client.recorded:
        return f"the environment stopped after {used} of the {client.recorded} recorded model calls"
    return None


def _difference(record: Mapping[str, Any], state: State, exhausted: bool) -> str | None:
    """Where the replayed completion first differs from the record's, if it does."""
    replayed, saved = _normal(state.get("completion")), _normal(record.get("completion"))
    if exhausted and isinstance(replayed, list):  # the original ended after its last call
        replayed = replayed[: len(saved) if isinstance(saved, list) else 0]
    if replayed == saved:
        return None
    if isinstance(replayed, list) and isinstance(saved, list):
        at = _first_difference(replayed, saved)
        return f"the environment's messages differ from the record from completion message {at}"
    return "the environment's completion differs from the record"


async def replay_records(
    env: Environment,
    records: Sequence[Mapping[str, Any]],
    *,
    model: str = "replay",
    sampling_args: Mapping[str, Any] | None = None,
    max_concurrent: int = 32,
) -> list[ReplayOutcome]:
    """Replay and score every record (the rollouts of one example together, so that group
    rewards see the whole group). Returns one :class:`ReplayOutcome` per record, in order."""
    gate = asyncio.Semaphore(max(1, max_concurrent))
    groups: dict[str, list[int]] = {}
    for i, rec in enumerate(records):
        groups.setdefault(str(rec.get("example_id")), []).append(i)
    outcomes: list[ReplayOutcome | None] = [None] * len(records)

    async def replay_group(indices: list[int]) -> None:
        states: list[State] = []
        clients: list[_ReplayClient] = []
        for i in indices:
            rec = records[i]
            client = _ReplayClient(_replies(rec))
            state = await env.init_state(
                _row(rec),
                client,
                model,
                dict(sampling_args or {}),
                rollout_index=int(rec.get("rollout_index") or 0),
            )
            states.append(state)
            clients.append(client)
        await env._run_states(states, score=True, semaphore=gate, group=True)
        for i, state, client in zip(indices, states, clients, strict=True):
            reason = _judge(records[i], state, client)
            if reason is None and _infra_error(records[i]):
                # the original ended on an infrastructure error (an endpoint, a sandbox): the
                # evaluation leaves such a rollout unscored, and so does its replay, whether or
                # not the failure recurs (a claimed reward for it is not confirmed)
                state["error"] = records[i].get("error")
                state["reward"] = None
            if reason is None:
                note = _difference(records[i], state, client.exhausted)
                outcomes[i] = ReplayOutcome(i, "exact", state=state, note=note)
            else:
                outcomes[i] = ReplayOutcome(i, "not_rescorable", reason=reason)

    await asyncio.gather(*(replay_group(ix) for ix in groups.values()))
    return [o for o in outcomes if o is not None]
