"""Per-rollout scratch state (not serialised with the trace)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar

__all__ = ["State", "StateT", "state_cls"]


class State(BaseModel):
    """Mutable per-rollout state; subclass with typed fields, extra keys are allowed."""

    model_config = ConfigDict(extra="allow")
    artifacts: dict[str, bytes | None] = Field(default_factory=dict)
    """The solver's collected artifacts (``{path: tar bytes}``), when its run collects them
    (``agent.run(task, collect_artifacts=True)``)."""


StateT = TypeVar("StateT", bound=State, default=State)


def state_cls(cls: type) -> type[State]:
    """The ``State`` subclass ``cls`` is parametrised with (``Task[MyData, MyState]``,
    looked up through its MRO), else ``State``."""
    from verifiers.v1.utils.generic import concrete_type

    return concrete_type(cls, State) or State
