"""The tools offered to the model: a calculator, a unit converter and a table lookup.

Plain typed functions with Google docstrings: :class:`verifiers.ToolEnv` builds their JSON
schemas. Each raises ``ValueError`` with a message the model can act on; the environment sends
that message back as the tool result.
"""

from __future__ import annotations

import ast
import json
import math
import operator
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["UNITS", "calculator", "convert", "convert_units", "evaluate", "load_tables", "lookup"]

_BINARY: dict[type[ast.operator], Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Any] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS: dict[str, Any] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "log": math.log,
    "exp": math.exp,
}
_CONSTS = {"pi": math.pi, "e": math.e}
_MAX_EXPONENT = 1000


def evaluate(expression: str) -> float:
    """Evaluate an arithmetic expression without ``eval``: numbers, ``+ - * / // % **``,
    parentheses, ``pi``, ``e`` and the functions sqrt, abs, round, min, max, log, exp."""
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"cannot parse {expression!r}: {e.msg}") from None

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name) and node.id in _CONSTS:
            return _CONSTS[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
                raise ValueError(f"exponent {right} is too large (limit {_MAX_EXPONENT})")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS
            and not node.keywords
        ):
            return _FUNCS[node.func.id](*[walk(a) for a in node.args])
        raise ValueError(
            f"unsupported element {ast.unparse(node)!r}: use numbers, + - * / // % **, "
            f"parentheses, pi, e and {', '.join(_FUNCS)}"
        )

    try:
        value = walk(tree)
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except OverflowError:
        raise ValueError("the result is too large") from None
    if isinstance(value, complex):
        raise ValueError("the result is not a real number")
    return float(value)


def _fmt(value: float) -> str:
    return f"{value:.10g}"


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: e.g. "3 * (4.5 + 2) / 7"; supports + - * / // % ** (or ^), parentheses,
            pi, e, sqrt, abs, round, min, max, log, exp.

    Returns:
        The value, with up to 10 significant digits.
    """
    return _fmt(evaluate(expression))


# unit -> (dimension, factor to the base unit); temperatures are handled separately
UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "mg": ("mass", 1e-6),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "t": ("mass", 1000.0),
    "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
    "ml": ("volume", 0.001),
    "l": ("volume", 1.0),
    "gal": ("volume", 3.785411784),
    "s": ("time", 1.0),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "day": ("time", 86400.0),
    "km2": ("area", 1e6),
    "m2": ("area", 1.0),
    "mi2": ("area", 1609.344**2),
    "ha": ("area", 1e4),
    "c": ("temperature", 1.0),
    "f": ("temperature", 1.0),
    "k": ("temperature", 1.0),
}
_ALIASES = {
    "meter": "m",
    "meters": "m",
    "metre": "m",
    "metres": "m",
    "kilometer": "km",
    "kilometers": "km",
    "kilometre": "km",
    "kilometres": "km",
    "mile": "mi",
    "miles": "mi",
    "foot": "ft",
    "feet": "ft",
    "inch": "in",
    "inches": "in",
    "yard": "yd",
    "yards": "yd",
    "gram": "g",
    "grams": "g",
    "kilogram": "kg",
    "kilograms": "kg",
    "kgs": "kg",
    "pound": "lb",
    "pounds": "lb",
    "lbs": "lb",
    "ounce": "oz",
    "ounces": "oz",
    "liter": "l",
    "liters": "l",
    "litre": "l",
    "litres": "l",
    "gallon": "gal",
    "gallons": "gal",
    "second": "s",
    "seconds": "s",
    "minute": "min",
    "minutes": "min",
    "hour": "h",
    "hours": "h",
    "days": "day",
    "celsius": "c",
    "fahrenheit": "f",
    "kelvin": "k",
    "km^2": "km2",
    "m^2": "m2",
    "mi^2": "mi2",
    "hectare": "ha",
    "hectares": "ha",
    "°c": "c",
    "°f": "f",
}


def _unit(name: str) -> str:
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in UNITS:
        raise ValueError(f"unknown unit {name!r}; known units: {', '.join(UNITS)}")
    return key


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit``."""
    src, dst = _unit(from_unit), _unit(to_unit)
    (dim_a, fa), (dim_b, fb) = UNITS[src], UNITS[dst]
    if dim_a != dim_b:
        raise ValueError(f"cannot convert {dim_a} ({from_unit}) to {dim_b} ({to_unit})")
    if dim_a == "temperature":
        kelvin = {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[src]
        return {"c": kelvin - 273.15, "f": (kelvin - 273.15) * 9 / 5 + 32, "k": kelvin}[dst]
    return value * fa / fb


def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, volume, time, area or temperature.

    Args:
        value: the amount to convert.
        from_unit: its unit, e.g. "km", "mi", "kg", "lb", "l", "gal", "h", "km2", "C", "F".
        to_unit: the unit wanted (same kind of quantity).

    Returns:
        The converted amount, with up to 10 significant digits.
    """
    return _fmt(convert(float(value), from_unit, to_unit))


@cache
def load_tables() -> dict[str, list[dict[str, Any]]]:
    """The bundled tables (``products``, ``cities``): fictional data made for this package."""
    text = resources.files("vf_tool_use").joinpath("data/tables.json").read_text("utf-8")
    tables: dict[str, list[dict[str, Any]]] = json.loads(text)
    return tables


def lookup(table: str, name: str, column: str | None = None) -> str:
    """Look up one row of a reference table by its name.

    Args:
        table: "products" (columns: name, sku, price_usd, weight_kg, stock) or "cities"
            (columns: name, population, area_km2, elevation_m, founded).
        name: the row's name, e.g. "Blue Widget" or "Port Avel" (case-insensitive).
        column: one column to return; omit it to get the whole row.

    Returns:
        The value, or the whole row as JSON.
    """
    tables = load_tables()
    rows = tables.get(table.strip().lower())
    if rows is None:
        raise ValueError(f"unknown table {table!r}; tables: {', '.join(tables)}")
    wanted = name.strip().lower()
    row = next((r for r in rows if r["name"].lower() == wanted), None)
    if row is None:
        names = ", ".join(r["name"] for r in rows[:5])
        raise ValueError(f"no row named {name!r} in {table}; names look like: {names}, ...")
    if column is None:
        return json.dumps(row)
    if column not in row:
        raise ValueError(f"unknown column {column!r} in {table}; columns: {', '.join(row)}")
    return str(row[column])
