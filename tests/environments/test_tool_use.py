from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vf_tool_use import parse_number
from vf_tool_use.tasks import generate
from vf_tool_use.tools import calculator, convert_units, lookup

import verifiers as vf
from verifiers.testing import ScriptedClient


def test_calculator_evaluates_arithmetic_without_eval() -> None:
    assert calculator("3 * (4.5 + 2) / 7") == "2.785714286"
    assert calculator("2^10 + sqrt(16)") == "1028"
    for bad, why in [
        ("__import__('os').system('true')", "unsupported"),
        ("1/0", "division by zero"),
        ("2 ** 99999", "too large"),
        ("3 +", "cannot parse"),
    ]:
        with pytest.raises(ValueError, match=why):
            calculator(bad)


def test_convert_units_across_dimensions_and_temperatures() -> None:
    assert float(convert_units(1, "mi", "km")) == pytest.approx(1.609344)
    assert float(convert_units(212, "F", "C")) == pytest.approx(100)
    assert float(convert_units(2, "kilograms", "lbs")) == pytest.approx(4.40924524)
    with pytest.raises(ValueError, match="cannot convert mass"):
        convert_units(1, "kg", "km")
    with pytest.raises(ValueError, match="unknown unit 'furlong'"):
        convert_units(1, "furlong", "m")


def test_lookup_reads_the_bundled_tables() -> None:
    row = json.loads(lookup("products", "black lantern"))
    assert row["name"] == "Black Lantern"
    assert lookup("products", "Black Lantern", "sku") == row["sku"]
    with pytest.raises(ValueError, match="unknown table"):
        lookup("planets", "Mars")
    with pytest.raises(ValueError, match="unknown column"):
        lookup("cities", "West Avel", "mayor")


def test_tasks_are_reproducible_and_cover_every_family() -> None:
    a, b = generate(30, seed=5), generate(30, seed=5)
    assert a == b
    assert a != generate(30, seed=6)
    assert len({t["family"] for t in a}) == 9
    assert len({t["question"] for t in a}) == 30


def test_parse_number() -> None:
    assert parse_number("about 1,234.5 kg") == 1234.5
    assert parse_number("-6.67") == -6.67
    assert parse_number("none") is None and parse_number(None) is None


async def test_tool_errors_go_back_to_the_model_and_the_answer_is_scored() -> None:
    env = vf.load_environment("tool-use", num_examples=1, seed=1)
    row = env.get_rows("eval", 1)[0]

    def call(name: str, args: dict[str, object]) -> dict[str, object]:
        return {"tool_calls": [{"name": name, "arguments": args}]}

    client = ScriptedClient(
        [
            call("convert_units", {"value": 1, "from_unit": "kg", "to_unit": "km"}),
            call("calculator", {"expression": "1 +"}),
            f"<answer>{row['answer']}</answer>",
        ]
    )
    result = await vf.evaluate_async(
        env, client=client, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    (state,) = result.states
    tool_replies = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert "cannot convert mass" in tool_replies[0]
    assert "cannot parse" in tool_replies[1]
    assert state["reward"] == 1.0
    assert state["metrics"]["total_tool_calls"] == 2.0


async def test_wrong_number_scores_zero() -> None:
    env = vf.load_environment("tool-use", num_examples=1)
    answer = float(env.get_rows("eval", 1)[0]["answer"])
    client = ScriptedClient([f"<answer>{answer * 1.01 + 1:.2f}</answer>"])
    result = await vf.evaluate_async(
        env, client=client, model="m", num_examples=-1, rollouts_per_example=1
    )
    assert result.records[0]["reward"] == 0.0


async def test_oracle_issues_independent_lookups_as_parallel_calls() -> None:
    env = vf.load_environment("tool-use", num_examples=9)
    row = next(r for r in env.get_rows("eval") if r["info"]["family"] == "order_cost")
    result = await vf.evaluate_async(
        env, model="oracle", num_examples=-1, keep_states=True, rollouts_per_example=1
    )
    state = next(s for s in result.states if s["example_id"] == row["example_id"])
    first = state["completion"][0]
    assert [c["function"]["name"] for c in first["tool_calls"]] == ["lookup", "lookup"]
    replies = state["completion"][1:3]
    assert [m["tool_call_id"] for m in replies] == [c["id"] for c in first["tool_calls"]]
    assert state["reward"] == 1.0 and state["turn"] == 3


_exprs = st.recursive(
    st.integers(min_value=-50, max_value=50).map(str)
    | st.floats(min_value=0.5, max_value=99, allow_nan=False).map(lambda f: f"{f:.3f}"),
    lambda inner: st.tuples(inner, st.sampled_from(["+", "-", "*", "/"]), inner).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})"
    ),
    max_leaves=8,
)


@given(_exprs)
def test_calculator_agrees_with_python_arithmetic(expression: str) -> None:
    from vf_tool_use.tools import evaluate

    try:
        expected = float(eval(expression))  # the reference: Python itself, on safe input
    except ZeroDivisionError:
        with pytest.raises(ValueError, match="division by zero"):
            evaluate(expression)
        return
    assert evaluate(expression) == pytest.approx(expected, rel=1e-12, abs=1e-12)
