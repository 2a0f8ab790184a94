"""What ``vf view`` shows of a training step's rollouts: a few of the groups consumed for the
batch, spread over the reward range, with their messages shortened
(:data:`PREVIEW_MESSAGES` messages of :data:`PREVIEW_CHARS` characters at most).

:class:`~verifiers.train.rollout_source.RolloutSource` picks them for
:attr:`~verifiers.train.rollout_source.Batch.rollouts`; the trainer writes them to
``rollouts.jsonl``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from verifiers.types import State

__all__ = ["PREVIEW_CHARS", "PREVIEW_MESSAGES", "ConsumedGroup", "pick_previews", "preview_rollout"]


class ConsumedGroup(Protocol):
    """A finished group as the rollout source holds it: its id and its rollouts' states."""

    group_id: int
    states: list[State]


PREVIEW_CHARS = 2000  # per message
PREVIEW_MESSAGES = 8  # per prompt or completion (the prompt's last, the completion's first)


def _preview_messages(value: Any, last: bool) -> list[dict[str, str]]:
    if isinstance(value, str):
        value = [{"role": "text", "content": value}]
    if not isinstance(value, list):
        return []
    chosen = value[-PREVIEW_MESSAGES:] if last else value[:PREVIEW_MESSAGES]
    out: list[dict[str, str]] = []
    for m in chosen:
        if not isinstance(m, Mapping):
            m = {"role": "?", "content": str(m)}
        content = m.get("content")
        if isinstance(content, list):  # content parts: their text, other parts named
            content = "\n".join(
                str(p.get("text", "")) if isinstance(p, Mapping) and p.get("type") == "text"
                else f"[{p.get('type', 'part') if isinstance(p, Mapping) else 'part'}]"
                for p in content
            )  # fmt: skip
        text = "" if content is None else str(content)
        calls = m.get("tool_calls")
        if calls:
            text += f"\n[{len(calls) if isinstance(calls, list) else 1} tool call(s)]"
        if len(text) > PREVIEW_CHARS:
            text = text[: PREVIEW_CHARS - 1] + "…"
        out.append({"role": str(m.get("role", "?"))[:40], "content": text})
    return out


def preview_rollout(state: Mapping[str, Any], group_id: int, used: bool) -> dict[str, Any]:
    """A rollout as ``vf view`` shows it: ids, reward, error, and its messages shortened
    (:data:`PREVIEW_MESSAGES` messages of :data:`PREVIEW_CHARS` characters at most)."""
    reward = state.get("reward")
    err = state.get("error")
    if err is not None and not isinstance(err, str):
        err = f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else str(err)
    ex = state.get("example_id")
    return {
        "group": group_id,
        "example_id": ex if isinstance(ex, int | str) and not isinstance(ex, bool) else str(ex),
        "task": str(state.get("task") or "")[:100],
        "reward": float(reward) if isinstance(reward, int | float) else None,
        "used": used,
        "error": None if err is None else str(err)[:PREVIEW_CHARS],
        "prompt": _preview_messages(state.get("prompt"), last=True),
        "completion": _preview_messages(state.get("completion"), last=False),
    }


def pick_previews(seen: Sequence[tuple[ConsumedGroup, bool]], k: int) -> list[dict[str, Any]]:
    """``k`` rollouts of the consumed groups, spread over the reward range (lowest and
    highest included), an errored one first when there is one."""
    if k <= 0:
        return []
    scored: list[tuple[float, ConsumedGroup, bool, State]] = []
    errored: list[tuple[ConsumedGroup, bool, State]] = []
    for group, used in seen:
        for st in group.states:
            r = st.get("reward")
            if st.get("error") is None and isinstance(r, int | float):
                scored.append((float(r), group, used, st))
            else:
                errored.append((group, used, st))
    out: list[dict[str, Any]] = []
    if errored:
        g, used, st = errored[0]
        out.append(preview_rollout(st, g.group_id, used))
    scored.sort(key=lambda t: (t[0], t[1].group_id))
    room = min(k - len(out), len(scored))
    if room == 1:
        picks = [len(scored) - 1]
    else:
        picks = sorted({round(i * (len(scored) - 1) / (room - 1)) for i in range(room)})
    for i in picks if room > 0 else []:
        _, g, used, st = scored[i]
        out.append(preview_rollout(st, g.group_id, used))
    return out
