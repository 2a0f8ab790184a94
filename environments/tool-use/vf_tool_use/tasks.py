"""Procedural questions that need the tools, each with the tool-call plan that solves it.

A plan is a list of ``(tool name, arguments)``; the gold answer is what running the plan with
the real tools gives (rounded to 2 decimals), so the oracle's play and the gold answer agree.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from vf_tool_use.tools import calculator, convert_units, load_tables, lookup

__all__ = ["FAMILIES", "Task", "generate"]

Step = tuple[str, dict[str, Any]]
Task = dict[str, Any]

_TOOLS: dict[str, Callable[..., str]] = {
    "calculator": calculator,
    "convert_units": convert_units,
    "lookup": lookup,
}


class _Plan:
    """Runs tool calls as the oracle would, recording them."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def __call__(self, tool: str, **args: Any) -> str:
        self.steps.append((tool, args))
        return _TOOLS[tool](**args)


def _product(r: random.Random) -> str:
    return str(r.choice(load_tables()["products"])["name"])


def _city(r: random.Random) -> str:
    return str(r.choice(load_tables()["cities"])["name"])


def _weight_lb(r: random.Random, p: _Plan) -> tuple[str, str]:
    name, n = _product(r), r.randint(2, 40)
    w = p("lookup", table="products", name=name, column="weight_kg")
    total = p("calculator", expression=f"{n} * {w}")
    return (
        f"What is the total weight, in pounds, of {n} units of {name}?",
        p("convert_units", value=float(total), from_unit="kg", to_unit="lb"),
    )


def _order_cost(r: random.Random, p: _Plan) -> tuple[str, str]:
    a, b = r.sample(load_tables()["products"], 2)
    n, m = r.randint(1, 12), r.randint(1, 12)
    pa = p("lookup", table="products", name=a["name"], column="price_usd")
    pb = p("lookup", table="products", name=b["name"], column="price_usd")
    return (
        f"How many dollars do {n} {a['name']} and {m} {b['name']} cost together?",
        p("calculator", expression=f"{n} * {pa} + {m} * {pb}"),
    )


def _stock_value(r: random.Random, p: _Plan) -> tuple[str, str]:
    name = _product(r)
    price = p("lookup", table="products", name=name, column="price_usd")
    stock = p("lookup", table="products", name=name, column="stock")
    return (
        f"What is the total value, in dollars, of all {name} units in stock?",
        p("calculator", expression=f"{price} * {stock}"),
    )


def _density(r: random.Random, p: _Plan) -> tuple[str, str]:
    name = _city(r)
    pop = p("lookup", table="cities", name=name, column="population")
    area = p("lookup", table="cities", name=name, column="area_km2")
    return (
        f"What is the population density of {name}, in people per square kilometre?",
        p("calculator", expression=f"{pop} / {area}"),
    )


def _density_mi2(r: random.Random, p: _Plan) -> tuple[str, str]:
    name = _city(r)
    pop = p("lookup", table="cities", name=name, column="population")
    area = p("lookup", table="cities", name=name, column="area_km2")
    area_mi2 = p("convert_units", value=float(area), from_unit="km2", to_unit="mi2")
    return (
        f"What is the population density of {name}, in people per square mile?",
        p("calculator", expression=f"{pop} / {area_mi2}"),
    )


def _elevation_ft(r: random.Random, p: _Plan) -> tuple[str, str]:
    a, b = r.sample(load_tables()["cities"], 2)
    ea = p("lookup", table="cities", name=a["name"], column="elevation_m")
    eb = p("lookup", table="cities", name=b["name"], column="elevation_m")
    diff = p("calculator", expression=f"abs({ea} - {eb})")
    return (
        f"How many feet higher is the higher of {a['name']} and {b['name']} than the other?",
        p("convert_units", value=float(diff), from_unit="m", to_unit="ft"),
    )


def _age(r: random.Random, p: _Plan) -> tuple[str, str]:
    name, year = _city(r), r.randint(1960, 2030)
    founded = p("lookup", table="cities", name=name, column="founded")
    return (
        f"How many years had passed between the founding of {name} and the year {year}?",
        p("calculator", expression=f"{year} - {founded}"),
    )


def _trip_km(r: random.Random, p: _Plan) -> tuple[str, str]:
    mph, hours = r.randint(25, 80), r.choice([0.5, 1.25, 1.5, 2, 2.75, 3, 4.5])
    miles = p("calculator", expression=f"{mph} * {hours}")
    return (
        f"A train travels at {mph} miles per hour for {hours} hours. How many kilometres "
        f"does it cover?",
        p("convert_units", value=float(miles), from_unit="mi", to_unit="km"),
    )


def _temperature(r: random.Random, p: _Plan) -> tuple[str, str]:
    f = r.randint(-20, 110)
    return (
        f"An oven thermometer reads {f} degrees Fahrenheit. What is that in degrees Celsius?",
        p("convert_units", value=float(f), from_unit="F", to_unit="C"),
    )


FAMILIES: list[Callable[[random.Random, _Plan], tuple[str, str]]] = [
    _weight_lb,
    _order_cost,
    _stock_value,
    _density,
    _density_mi2,
    _elevation_ft,
    _age,
    _trip_km,
    _temperature,
]


def generate(n: int, seed: int = 0) -> list[Task]:
    """``n`` distinct tasks: question, gold answer (2 decimals), plan and family."""
    r = random.Random(seed)
    out: list[Task] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 50 * n + 100:
            raise RuntimeError("could not generate enough distinct tasks")
        family = (
            FAMILIES[len(out) % len(FAMILIES)] if len(out) < len(FAMILIES) else r.choice(FAMILIES)
        )
        plan = _Plan()
        question, raw = family(r, plan)
        if question in seen:
            continue
        seen.add(question)
        out.append(
            {
                "question": question,
                "answer": f"{float(raw):.2f}",
                "plan": [[tool, args] for tool, args in plan.steps],
                "family": family.__name__.lstrip("_"),
            }
        )
    return out
