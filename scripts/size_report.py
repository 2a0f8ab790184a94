"""Print the longest functions and modules under the given packages (default: the three
that carry the size rules): ``python scripts/size_report.py [DIR ...] [--top N]``.

A function's length counts from its first decorator to its last line; the rules are no
function over 120 lines and no module over 700 lines."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

FUNCTION_LIMIT, MODULE_LIMIT = 120, 700


def functions(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            found.append((end - start + 1, f"{path}:{node.lineno} {node.name}"))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", default=["verifiers", "hub_server", "cli"])
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    files = sorted(p for d in args.dirs for p in Path(d).rglob("*.py"))
    funcs = sorted((f for p in files for f in functions(p)), reverse=True)
    modules = sorted(
        ((len(p.read_text(encoding="utf-8").splitlines()), str(p)) for p in files), reverse=True
    )
    print(f"longest functions (limit {FUNCTION_LIMIT}):")
    for n, where in funcs[: args.top]:
        print(f"  {n:5d}  {where}")
    print(f"longest modules (limit {MODULE_LIMIT}):")
    for n, where in modules[: args.top]:
        print(f"  {n:5d}  {where}")
    over = [f for f in funcs if f[0] > FUNCTION_LIMIT] + [m for m in modules if m[0] > MODULE_LIMIT]
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
