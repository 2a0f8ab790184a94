"""Procedural bug injection into the bundled ``minilib`` repository.

A bug is a one-line mutation of the library's source (never of its tests), found by walking
the AST and editing the text of that line only, so the diff a model must find is one line:

- ``compare``: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``
- ``arith``: ``+`` <-> ``-``, ``//`` <-> ``/``, ``*`` -> ``+``
- ``const``: an integer constant ``k`` -> ``k + 1`` or ``k - 1``
- ``boolop``: ``and`` <-> ``or``
- ``negate``: ``not x`` -> ``x``
- ``return``: ``return True`` <-> ``return False``

:func:`find_bugs` keeps the mutations that make the test suite fail (within a time limit) and
whose buggy and original lines each occur once in their file (as text). ``python -m vf_swe_lite.inject``
regenerates ``data/bugs.jsonl``.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

__all__ = ["Bug", "apply_bug", "candidate_bugs", "find_bugs", "repo_files"]

_SWAPS: dict[type[ast.AST], tuple[str, str]] = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.FloorDiv: ("//", "/"),
    ast.Mult: ("*", "+"),
}


@dataclass(frozen=True, slots=True)
class Bug:
    """One injected bug: ``file`` (repository path), 1-based ``line``, the two line texts."""

    bug_id: str
    file: str
    line: int
    kind: str
    original: str
    buggy: str
    failing_tests: tuple[str, ...] = ()


def repo_files() -> dict[str, str]:
    """The pristine repository: path (``minilib/text.py``, ``tests/...``) -> text."""
    root = resources.files("vf_swe_lite").joinpath("repo")
    out: dict[str, str] = {}

    def walk(node: object, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):  # type: ignore[attr-defined]
            name = f"{prefix}{child.name}"
            if child.is_dir():
                if child.name != "__pycache__":
                    walk(child, name + "/")
            elif child.name.endswith(".py"):
                out[name] = child.read_text("utf-8")

    walk(root, "")
    return out


def _replace_between(line: str, start: int, end: int, old: str, new: str) -> str | None:
    """``line`` with the single occurrence of token ``old`` in ``line[start:end]`` replaced."""
    segment = line[start:end]
    pattern = r"(?<![<>=!/*+\-])" + re.escape(old) + r"(?![<>=/*+\-])"
    hits = [m for m in re.finditer(pattern, segment)]
    if len(hits) != 1:
        return None
    m = hits[0]
    return line[: start + m.start()] + new + line[start + m.end() :]


def _mutations(tree: ast.AST, lines: list[str]) -> Iterator[tuple[int, str, str]]:
    """(0-based line index, kind, mutated line) for every candidate in the module."""
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) is None or node.lineno != getattr(
            node, "end_lineno", None
        ):
            continue
        i = node.lineno - 1
        line = lines[i]
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0])
            if op in _SWAPS:
                old, new = _SWAPS[op]
                out = _replace_between(
                    line, node.left.end_col_offset or 0, node.comparators[0].col_offset, old, new
                )
                if out:
                    yield i, "compare", out
        elif isinstance(node, ast.BinOp) and type(node.op) in _SWAPS:
            old, new = _SWAPS[type(node.op)]
            out = _replace_between(
                line, node.left.end_col_offset or 0, node.right.col_offset, old, new
            )
            if out:
                yield i, "arith", out
        elif isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
            old, new = _SWAPS[type(node.op)]
            out = _replace_between(
                line, node.target.end_col_offset or 0, node.value.col_offset, old + "=", new + "="
            )
            if out:
                yield i, "arith", out
        elif (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and line[node.col_offset : node.end_col_offset] == str(node.value)
        ):
            for delta in (1, -1):
                value = node.value + delta
                if value < 0:
                    continue
                yield i, "const", line[: node.col_offset] + str(value) + line[node.end_col_offset :]
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            start = node.values[0].end_col_offset or 0
            seg = line[start : node.values[1].col_offset]
            if seg.count(f" {old} ") == 1:
                yield (
                    i,
                    "boolop",
                    line[:start]
                    + seg.replace(f" {old} ", f" {new} ")
                    + line[node.values[1].col_offset :],
                )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            text = line[node.col_offset : node.end_col_offset]
            if text.startswith("not "):
                yield i, "negate", line[: node.col_offset] + text[4:] + line[node.end_col_offset :]
        elif (
            isinstance(node, ast.Return)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, bool)
        ):
            flipped = "False" if node.value.value else "True"
            yield i, "return", line.replace(str(node.value.value), flipped, 1)


def candidate_bugs(files: dict[str, str]) -> list[Bug]:
    """Every one-line mutation of the library modules whose lines are unique in their file."""
    bugs: list[Bug] = []
    for path, source in sorted(files.items()):
        if not path.startswith("minilib/") or path.endswith("__init__.py"):
            continue
        lines = source.splitlines()
        per_line: dict[int, set[str]] = {}
        stem = path.removeprefix("minilib/").removesuffix(".py")
        for i, kind, buggy in _mutations(ast.parse(source), lines):
            original = lines[i]
            seen = per_line.setdefault(i, set())
            if buggy == original or buggy in seen:
                continue
            # unique as text, not just as a line: an edit tool can find it without ambiguity
            if source.count(original) != 1 or source.count(buggy) != 0:
                continue
            seen.add(buggy)
            bug_id = f"{stem}-L{i + 1}-{kind}-{len(seen)}"
            bugs.append(Bug(bug_id, path, i + 1, kind, original, buggy))
    return bugs


def apply_bug(files: dict[str, str], bug: Bug) -> dict[str, str]:
    """A copy of ``files`` with ``bug`` injected."""
    lines = files[bug.file].split("\n")
    if lines[bug.line - 1] != bug.original:
        raise ValueError(f"{bug.bug_id}: line {bug.line} of {bug.file} is not the expected text")
    lines[bug.line - 1] = bug.buggy
    return {**files, bug.file: "\n".join(lines)}


_FAILED = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", re.M)


def _run_tests(files: dict[str, str], timeout: float) -> tuple[bool, tuple[str, ...]] | None:
    """(passed, failing test ids), or ``None`` on timeout."""
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in files.items():
            dest = Path(tmp, path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "unittest", "-q"],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return None
        failing = tuple(
            sorted(
                {
                    where if where.endswith("." + name) else f"{where}.{name}"
                    for name, where in _FAILED.findall(proc.stderr)
                }
            )
        )
        return proc.returncode == 0, failing


def find_bugs(timeout: float = 10.0, per_line: int = 2) -> list[Bug]:
    """The candidate bugs that make the suite fail (and do not hang it), at most ``per_line``
    for any one line, so that lines full of constants do not crowd out the rest."""
    files = repo_files()
    clean = _run_tests(files, timeout)
    if clean is None or not clean[0]:
        raise RuntimeError("the pristine repository's tests do not pass")
    kept: list[Bug] = []
    count: dict[tuple[str, int], int] = {}
    for bug in candidate_bugs(files):
        key = (bug.file, bug.line)
        if count.get(key, 0) >= per_line:
            continue
        result = _run_tests(apply_bug(files, bug), timeout)
        if result is not None and not result[0] and result[1]:
            kept.append(Bug(**{**asdict(bug), "failing_tests": result[1]}))
            count[key] = count.get(key, 0) + 1
    return kept


def main() -> None:
    target = Path(__file__).with_name("data") / "bugs.jsonl"
    bugs = find_bugs()
    with target.open("w") as f:
        for bug in bugs:
            f.write(json.dumps(asdict(bug)) + "\n")
    print(f"{len(bugs)} bugs written to {target}")
    shutil.rmtree(Path(__file__).with_name("repo") / "__pycache__", ignore_errors=True)


if __name__ == "__main__":
    main()
