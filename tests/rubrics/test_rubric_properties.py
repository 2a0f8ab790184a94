"""Property tests: the reward is the weighted sum of the values, metrics hold every value."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

import verifiers as vf
from verifiers.types import State

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


def constant(name: str, value: float | None, is_async: bool) -> Callable[..., object]:
    def sync_fn(answer: str) -> float:
        if value is None:
            raise RuntimeError(f"{name} failed")
        return value

    async def async_fn(answer: str) -> float:
        return sync_fn(answer)

    fn = async_fn if is_async else sync_fn
    fn.__name__ = name
    return fn


@settings(max_examples=150, deadline=None)
@given(
    specs=st.lists(
        st.tuples(st.one_of(st.none(), finite), finite, st.booleans()), min_size=1, max_size=6
    ),
    score_on_error=st.booleans(),
)
def test_reward_is_weighted_sum_and_errors_null_it(
    specs: list[tuple[float | None, float, bool]], score_on_error: bool
) -> None:
    funcs = [constant(f"f{i}", v, a) for i, (v, _, a) in enumerate(specs)]
    rubric = vf.Rubric(funcs=funcs, weights=[w for _, w, _ in specs], score_on_error=score_on_error)
    state = State(prompt=[], completion=[], answer="")
    asyncio.run(rubric.score_rollout(state))

    values = [(0.0 if v is None and score_on_error else v) for v, _, _ in specs]
    assert state["metrics"] == {f"f{i}": v for i, v in enumerate(values)}
    assert len(state["reward_errors"]) == sum(v is None for v, _, _ in specs)
    if any(v is None and w != 0.0 for v, (_, w, _) in zip(values, specs, strict=True)):
        assert state["reward"] is None
    else:
        expected = sum((v or 0.0) * w for v, (_, w, _) in zip(values, specs, strict=True))
        assert math.isclose(state["reward"], expected, rel_tol=1e-9, abs_tol=1e-6)
