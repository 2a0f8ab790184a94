"""Numeric problems that are easy to compute and hard to do in one's head.

Each problem has an exact integer answer (computed here) and a two-cell reference solution: the
first cell defines a function, the second calls it, so a correct run needs the REPL's state to
persist between calls.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

__all__ = ["FAMILIES", "Problem", "generate"]

Problem = dict[str, object]
Family = Callable[[random.Random], tuple[str, int, list[str]]]


def _sum_primes(r: random.Random) -> tuple[str, int, list[str]]:
    n = r.randint(20, 200) * 1000
    sieve = bytearray([1]) * n
    sieve[0:2] = b"\x00\x00"
    for p in range(2, math.isqrt(n - 1) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytearray(len(range(p * p, n, p)))
    answer = sum(i for i in range(n) if sieve[i])
    cells = [
        "def primes_below(n):\n"
        "    sieve = bytearray([1]) * n\n"
        "    sieve[0:2] = b'\\x00\\x00'\n"
        "    for p in range(2, int(n ** 0.5) + 1):\n"
        "        if sieve[p]:\n"
        "            sieve[p * p::p] = bytearray(len(range(p * p, n, p)))\n"
        "    return [i for i in range(n) if sieve[i]]",
        f"print(sum(primes_below({n})))",
    ]
    return f"What is the sum of all prime numbers below {n}?", answer, cells


def _fib_mod(r: random.Random) -> tuple[str, int, list[str]]:
    n = r.randint(1000, 50000)
    m = r.choice([1_000_000_007, 998_244_353, 10**9, 65_537])
    a, b = 0, 1
    for _ in range(n):
        a, b = b, (a + b) % m
    cells = [
        "def fib_mod(n, m):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, (a + b) % m\n"
        "    return a",
        f"print(fib_mod({n}, {m}))",
    ]
    return (
        f"Let F(0) = 0, F(1) = 1 and F(k) = F(k-1) + F(k-2). What is F({n}) modulo {m}?",
        a,
        cells,
    )


def _digit_sum(r: random.Random) -> tuple[str, int, list[str]]:
    n = r.randint(10, 100) * 1000
    k = r.randint(3, 13)
    answer = sum(1 for x in range(1, n + 1) if sum(map(int, str(x))) % k == 0)
    cells = [
        "def digit_sum(x):\n    return sum(int(c) for c in str(x))",
        f"print(sum(1 for x in range(1, {n} + 1) if digit_sum(x) % {k} == 0))",
    ]
    return (
        f"How many integers from 1 to {n} (inclusive) have a digit sum divisible by {k}?",
        answer,
        cells,
    )


def _collatz(r: random.Random) -> tuple[str, int, list[str]]:
    n = r.randint(5, 40) * 1000
    best, best_len = 1, 1
    cache = {1: 1}
    for start in range(1, n):
        x, path = start, []
        while x not in cache:
            path.append(x)
            x = x // 2 if x % 2 == 0 else 3 * x + 1
        length = cache[x]
        for y in reversed(path):
            length += 1
            cache[y] = length
        if cache[start] > best_len:
            best, best_len = start, cache[start]
    cells = [
        "def chain_length(x, cache={1: 1}):\n"
        "    path = []\n"
        "    while x not in cache:\n"
        "        path.append(x)\n"
        "        x = x // 2 if x % 2 == 0 else 3 * x + 1\n"
        "    n = cache[x]\n"
        "    for y in reversed(path):\n"
        "        n += 1\n"
        "        cache[y] = n\n"
        "    return n",
        f"print(max(range(1, {n}), key=lambda s: (chain_length(s), -s)))",
    ]
    return (
        f"Which starting number below {n} produces the longest Collatz sequence "
        f"(n -> n/2 if even, 3n+1 if odd, until 1)? If several tie, give the smallest.",
        best,
        cells,
    )


def _triples(r: random.Random) -> tuple[str, int, list[str]]:
    p = r.randint(30, 150) * 10
    count = 0
    for a in range(1, p // 3 + 1):
        for b in range(a, (p - a) // 2 + 1):
            c2 = a * a + b * b
            c = math.isqrt(c2)
            if c * c == c2 and a + b + c <= p:
                count += 1
    cells = [
        "import math\n"
        "def count_triples(p):\n"
        "    count = 0\n"
        "    for a in range(1, p // 3 + 1):\n"
        "        for b in range(a, (p - a) // 2 + 1):\n"
        "            c = math.isqrt(a * a + b * b)\n"
        "            if c * c == a * a + b * b and a + b + c <= p:\n"
        "                count += 1\n"
        "    return count",
        f"print(count_triples({p}))",
    ]
    return (
        f"How many right triangles with integer sides a <= b < c have perimeter at most {p}?",
        count,
        cells,
    )


def _divisor_sum(r: random.Random) -> tuple[str, int, list[str]]:
    n = r.randint(10, 500) * 1000
    answer = sum(n // k for k in range(1, n + 1))
    cells = [
        "def total_divisors(n):\n    return sum(n // k for k in range(1, n + 1))",
        f"print(total_divisors({n}))",
    ]
    return (
        f"Let d(k) be the number of positive divisors of k. What is d(1) + d(2) + ... + d({n})?",
        answer,
        cells,
    )


def _binomial_mod(r: random.Random) -> tuple[str, int, list[str]]:
    n = r.randint(200, 3000)
    k = r.randint(2, n // 2)
    m = r.choice([1_000_000_007, 998_244_353])
    answer = math.comb(n, k) % m
    cells = ["from math import comb", f"print(comb({n}, {k}) % {m})"]
    return (
        f"In how many ways can {k} items be chosen from {n} distinct items? Give the count "
        f"modulo {m}.",
        answer,
        cells,
    )


_MAX_REPEATS = 50
"""Draws in a row that may repeat earlier problems before a family counts as exhausted."""

FAMILIES: list[Family] = [
    _sum_primes,
    _fib_mod,
    _digit_sum,
    _collatz,
    _triples,
    _divisor_sum,
    _binomial_mod,
]


def generate(n: int, seed: int = 0) -> list[Problem]:
    """``n`` distinct problems, cycling through the families. A family that keeps repeating
    itself (it has few distinct problems, like ``collatz``) is dropped from the cycle, so a
    large ``n`` is served by the others."""
    r = random.Random(seed)
    out: list[Problem] = []
    seen: set[str] = set()
    exhausted: set[int] = set()
    slot = 0
    while len(out) < n:
        if len(exhausted) == len(FAMILIES):
            raise RuntimeError(f"could not generate {n} distinct problems (made {len(out)})")
        index = slot % len(FAMILIES)
        if index in exhausted:
            slot += 1
            continue
        family = FAMILIES[index]
        for _ in range(_MAX_REPEATS):
            question, answer, cells = family(r)
            if question not in seen:
                break
        else:
            exhausted.add(index)
            continue
        seen.add(question)
        out.append(
            {
                "question": question,
                "answer": str(answer),
                "cells": cells,
                "family": family.__name__.lstrip("_"),
            }
        )
        slot += 1
    return out
