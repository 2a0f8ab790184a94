"""Size rules for the hand-written code in ``verifiers/``, ``hub_server/`` and ``cli/``: no
module over 700 lines and no function over 120 lines (from its first decorator to its last
line, as ``scripts/size_report.py`` counts).

Tables a script writes (marked "do not edit") are exempt, by name in :data:`GENERATED`; each
must say it is generated and name a script of the repository that writes it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("verifiers", "hub_server", "cli")
MODULE_LIMIT = 700
FUNCTION_LIMIT = 120

#: generated tables: path -> the script that writes them
GENERATED: dict[str, str] = {
    "verifiers/classic/imported_names.py": "scripts/classic_surface.py",
    "verifiers/classic/unavailable_names.py": "scripts/classic_surface.py",
}


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _function_lengths(tree: ast.Module) -> dict[str, int]:
    """``qualified.name`` -> lines, for every function and method (nested ones too)."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    end = child.end_lineno or child.lineno
                    # two definitions of one name (overloads, conditional ones): the longest
                    lengths[name] = max(lengths.get(name, 0), end - start + 1)
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return lengths


def _oversized() -> dict[str, int]:
    """Every module and function over its limit, generated tables left out: name -> lines."""
    found: dict[str, int] = {}
    for path in _sources():
        rel = _rel(path)
        if rel in GENERATED:
            continue
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LIMIT:
            found[rel] = lines
        for name, length in _function_lengths(ast.parse(text, filename=rel)).items():
            if length > FUNCTION_LIMIT:
                found[f"{rel}::{name}"] = length
    return found


def _describe(found: dict[str, int]) -> str:
    return "\n".join(
        f"  {name}: {lines} lines (limit {FUNCTION_LIMIT if '::' in name else MODULE_LIMIT})"
        for name, lines in sorted(found.items())
    )


def test_no_hand_written_module_or_function_is_over_its_limit() -> None:
    over = _oversized()
    assert not over, "split these by concern (names that say what each part does):\n" + _describe(
        over
    )


@pytest.mark.parametrize("table", sorted(GENERATED))
def test_an_exempt_table_is_generated_by_a_script_of_the_repository(table: str) -> None:
    script = GENERATED[table]
    head = (REPO / table).read_text(encoding="utf-8")[:2000]
    assert "do not edit" in head.lower(), f"{table} does not say it is generated (do not edit)"
    assert f"scripts/{Path(script).name}" in head, f"{table} does not name {script}"
    assert (REPO / script).is_file(), f"{script}, which writes {table}, is missing"
    assert _rel(REPO / table).split("/")[-1] in (REPO / script).read_text(encoding="utf-8"), (
        f"{script} does not write {table}"
    )


def test_the_function_measure_counts_decorators_and_nested_functions() -> None:
    tree = ast.parse(
        "@a\n@b\ndef f():\n    def g():\n        pass\n    return g\n"
        "class C:\n    async def m(self):\n        return 1\n"
    )
    assert _function_lengths(tree) == {"f": 6, "f.g": 2, "C.m": 2}
