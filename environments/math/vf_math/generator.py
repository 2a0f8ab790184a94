"""Procedural math problems with exact answers.

Two kinds: ``word`` (grade-school word problems, integer answers) and ``competition``
(number theory, counting, algebra, series; integer or reduced-fraction answers). Every problem
is built from a seeded :class:`random.Random`, so ``generate(n, seed)`` is reproducible.

Answers are strings that math-verify parses: integers (``"42"``) or LaTeX fractions
(``"\\frac{3}{4}"``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from fractions import Fraction
from itertools import combinations
from typing import Literal

Kind = Literal["word", "competition", "mixed"]
Problem = dict[str, str]

_NAMES = [
    "Ava",
    "Ben",
    "Chloe",
    "Dev",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonah",
    "Kira",
    "Liam",
    "Maya",
    "Nico",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
    "Tara",
]
_ITEMS = [
    "notebooks",
    "pencils",
    "apples",
    "tickets",
    "stickers",
    "marbles",
    "cupcakes",
    "bottles of juice",
]


def fmt(value: Fraction | int) -> str:
    """Canonical answer string: an integer or ``\\frac{p}{q}`` (sign in front)."""
    v = Fraction(value)
    if v.denominator == 1:
        return str(v.numerator)
    sign = "-" if v < 0 else ""
    return f"{sign}\\frac{{{abs(v.numerator)}}}{{{v.denominator}}}"


# ---------------------------------------------------------------- word problems


def _shopping(r: random.Random) -> tuple[str, Fraction | int]:
    name = r.choice(_NAMES)
    many_a, many_b = r.sample(_ITEMS, 2)
    na, nb = r.randint(2, 9), r.randint(2, 9)
    pa, pb = r.randint(2, 15), r.randint(2, 15)
    paid = (na * pa + nb * pb) // 10 * 10 + r.choice([10, 20, 50])
    q = (
        f"{name} buys {na} {many_a} at ${pa} each and {nb} {many_b} at ${pb} each, "
        f"paying with ${paid}. How many dollars of change does {name} get back?"
    )
    return q, paid - na * pa - nb * pb


def _speed(r: random.Random) -> tuple[str, Fraction | int]:
    name = r.choice(_NAMES)
    v1, t1 = r.randint(30, 90), r.randint(1, 4)
    v2, t2 = r.randint(20, 70), r.randint(1, 3)
    q = (
        f"{name} drives for {t1} hours at {v1} km/h, then for {t2} hours at {v2} km/h. "
        f"How many kilometres does {name} drive in total?"
    )
    return q, v1 * t1 + v2 * t2


def _ages(r: random.Random) -> tuple[str, Fraction | int]:
    a, b = r.sample(_NAMES, 2)
    young = r.randint(3, 15)
    k = r.randint(2, 4)
    years = r.randint(2, 12)
    q = (
        f"{a} is {k} times as old as {b}. {b} is {young} years old now. "
        f"How old will {a} be in {years} years?"
    )
    return q, k * young + years


def _work(r: random.Random) -> tuple[str, Fraction | int]:
    name = r.choice(_NAMES)
    per_hour = r.randint(8, 30)
    hours = r.randint(3, 9)
    days = r.randint(2, 6)
    bonus = r.randint(1, 5) * 10
    q = (
        f"{name} earns ${per_hour} per hour and works {hours} hours a day for {days} days, "
        f"then receives a ${bonus} bonus. How many dollars does {name} earn in total?"
    )
    return q, per_hour * hours * days + bonus


def _percent(r: random.Random) -> tuple[str, Fraction | int]:
    price = r.randint(4, 40) * 10
    pct = r.choice([10, 15, 20, 25, 30, 40, 50])
    qty = r.randint(2, 6)
    q = (
        f"A jacket costs ${price}. It is on sale for {pct}% off. "
        f"How many dollars do {qty} jackets cost at the sale price?"
    )
    return q, Fraction(price * (100 - pct) * qty, 100)


def _sharing(r: random.Random) -> tuple[str, Fraction | int]:
    name = r.choice(_NAMES)
    many = r.choice(_ITEMS)
    friends = r.randint(2, 8)
    each = r.randint(3, 12)
    left = r.randint(0, friends - 1)
    total = friends * each + left
    q = (
        f"{name} has {total} {many} and shares them equally among {friends} friends, "
        f"giving each friend as many as possible. How many {many} does each friend get?"
    )
    return q, each


# ---------------------------------------------------------------- competition-style


def _modular(r: random.Random) -> tuple[str, Fraction | int]:
    base, exp, mod = r.randint(2, 19), r.randint(20, 400), r.choice([7, 9, 11, 13, 17, 100])
    return f"What is the remainder when ${base}^{{{exp}}}$ is divided by ${mod}$?", pow(
        base, exp, mod
    )


def _gcd_lcm(r: random.Random) -> tuple[str, Fraction | int]:
    g = r.randint(2, 15)
    a, b = g * r.randint(2, 20), g * r.randint(2, 20)
    if r.random() < 0.5:
        return f"Find $\\gcd({a}, {b}) + \\operatorname{{lcm}}({a}, {b})$.", math.gcd(
            a, b
        ) + math.lcm(a, b)
    return f"What is the least common multiple of ${a}$ and ${b}$?", math.lcm(a, b)


def _arith_series(r: random.Random) -> tuple[str, Fraction | int]:
    a, d, n = r.randint(-10, 20), r.randint(2, 9), r.randint(10, 60)
    last = a + (n - 1) * d
    q = f"Compute the sum of the arithmetic sequence ${a}, {a + d}, {a + 2 * d}, \\ldots, {last}$."
    return q, n * (a + last) // 2


def _choose(r: random.Random) -> tuple[str, Fraction | int]:
    n = r.randint(6, 14)
    k = r.randint(2, 4)
    m = r.randint(1, n - k)
    q = (
        f"A club has ${n}$ members, ${m}$ of whom are seniors. In how many ways can a committee "
        f"of ${k}$ members be chosen that includes at least one senior?"
    )
    return q, math.comb(n, k) - math.comb(n - m, k)


def _quadratic(r: random.Random) -> tuple[str, Fraction | int]:
    a = r.randint(1, 4)
    p, q_ = r.sample(range(-9, 10), 2)
    b, c = -a * (p + q_), a * p * q_
    poly = f"{a if a > 1 else ''}x^2 {'+' if b >= 0 else '-'} {abs(b)}x {'+' if c >= 0 else '-'} {abs(c)}"
    if r.random() < 0.5:
        return f"Find the sum of the squares of the roots of ${poly} = 0$.", p * p + q_ * q_
    return f"Find the product of the roots of ${poly} = 0$.", p * q_


def _divisors(r: random.Random) -> tuple[str, Fraction | int]:
    primes = r.sample([2, 3, 5, 7, 11], r.randint(2, 3))
    n = 1
    exps = []
    for p in primes:
        e = r.randint(1, 4)
        exps.append(e)
        n *= p**e
    return f"How many positive divisors does ${n}$ have?", math.prod(e + 1 for e in exps)


def _probability(r: random.Random) -> tuple[str, Fraction | int]:
    red, blue = r.randint(2, 9), r.randint(2, 9)
    total = red + blue
    q = (
        f"A bag holds ${red}$ red and ${blue}$ blue marbles. Two marbles are drawn without "
        f"replacement. What is the probability that both are red? Express your answer as a "
        f"common fraction."
    )
    return q, Fraction(red * (red - 1), total * (total - 1))


def _fraction_sum(r: random.Random) -> tuple[str, Fraction | int]:
    n = r.randint(3, 30)
    q = (
        f"Evaluate $\\sum_{{k=1}}^{{{n}}} \\frac{{1}}{{k(k+1)}}$. Express your answer as a "
        f"common fraction."
    )
    return q, Fraction(n, n + 1)


def _digit_sum_count(r: random.Random) -> tuple[str, Fraction | int]:
    lo = r.randint(1, 50) * 10
    hi = lo + r.randint(50, 400)
    s = r.randint(5, 15)
    count = sum(1 for x in range(lo, hi + 1) if sum(map(int, str(x))) == s)
    return (
        f"How many integers $n$ with ${lo} \\le n \\le {hi}$ have digits summing to ${s}$?",
        count,
    )


def _lattice(r: random.Random) -> tuple[str, Fraction | int]:
    rad = r.randint(2, 7)
    count = sum(
        1 for x in range(-rad, rad + 1) for y in range(-rad, rad + 1) if x * x + y * y <= rad * rad
    )
    return (
        f"How many points $(x, y)$ with integer coordinates satisfy $x^2 + y^2 \\le {rad**2}$?",
        count,
    )


def _subset_sum(r: random.Random) -> tuple[str, Fraction | int]:
    n = r.randint(5, 8)
    target = r.randint(n, n * (n + 1) // 2 - 1)
    count = sum(
        1 for k in range(1, n + 1) for c in combinations(range(1, n + 1), k) if sum(c) == target
    )
    return (
        f"How many non-empty subsets of $\\{{1, 2, \\ldots, {n}\\}}$ have elements summing "
        f"to ${target}$?",
        count,
    )


WORD: list[Callable[[random.Random], tuple[str, Fraction | int]]] = [
    _shopping,
    _speed,
    _ages,
    _work,
    _percent,
    _sharing,
]
COMPETITION: list[Callable[[random.Random], tuple[str, Fraction | int]]] = [
    _modular,
    _gcd_lcm,
    _arith_series,
    _choose,
    _quadratic,
    _divisors,
    _probability,
    _fraction_sum,
    _digit_sum_count,
    _lattice,
    _subset_sum,
]


def generate(n: int, seed: int = 0, kind: Kind = "mixed") -> list[Problem]:
    """``n`` problems; ``kind`` picks word, competition or both (alternating)."""
    if kind not in ("word", "competition", "mixed"):
        raise ValueError(f"kind must be 'word', 'competition' or 'mixed', not {kind!r}")
    r = random.Random(seed)
    out: list[Problem] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 50 * n + 100:
            raise RuntimeError("could not generate enough distinct problems")
        k = kind if kind != "mixed" else ("word" if len(out) % 2 == 0 else "competition")
        family = r.choice(WORD if k == "word" else COMPETITION)
        question, answer = family(r)
        if question in seen:
            continue
        seen.add(question)
        out.append(
            {
                "question": question,
                "answer": fmt(answer),
                "task": f"math-{k}",
                "family": family.__name__.lstrip("_"),
            }
        )
    return out
