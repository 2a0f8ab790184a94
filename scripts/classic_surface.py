"""Write the public names of upstream verifiers 0.3.1's classic surface, one ``module:name`` a
line, to ``tests/fixtures/classic_surface.txt``.

Usage: ``python scripts/classic_surface.py [WHEEL]``. Without ``WHEEL`` it runs
``pip download verifiers==0.3.1 --no-deps`` into a temporary directory. The wheel is read as a
zip and its sources are parsed (``ast``), never imported or executed; the committed list is what
``tests/acceptance/test_classic_surface.py`` checks against this package.

A module's public names are its ``__all__`` when it has one, else the names it defines at top
level (classes, functions, assignments) that do not start with ``_``, leaving out module
loggers and type variables. 0.3.1 keeps the classic API under ``verifiers/legacy/``; names are
written under the module paths environment code imports (``verifiers.types``, ...). The
top-level ``verifiers`` entries are the legacy package's ``__all__`` plus the names it forwards
from ``types`` and ``errors`` (``from .types import *``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "classic_surface.txt"
LEGACY = "verifiers/legacy/"

MODULES = [
    "types",
    "decorators",
    "errors",
    "parsers.parser",
    "parsers.xml_parser",
    "parsers.think_parser",
    "parsers.maybe_think_parser",
    "rubrics.rubric",
    "rubrics.rubric_group",
    "rubrics.judge_rubric",
    "rubrics.math_rubric",
    "envs.environment",
    "envs.multiturn_env",
    "envs.singleturn_env",
    "envs.tool_env",
    "envs.stateful_tool_env",
    "envs.env_group",
    "envs.sandbox_env",
    "envs.python_env",
    "utils.data_utils",
    "utils.async_utils",
    "utils.tool_utils",
    "utils.message_utils",
    "utils.config_utils",
    "utils.logging_utils",
]


def _is_skipped_value(value: ast.expr | None) -> bool:
    """``logging.getLogger(...)`` and ``TypeVar(...)`` bindings are not API."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("getLogger", "TypeVar")


def public_names(source: str) -> list[str]:
    tree = ast.parse(source)
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    continue
                if target.id == "__all__":
                    return sorted(set(ast.literal_eval(node.value)))
                if not _is_skipped_value(node.value):
                    names.append(target.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if not _is_skipped_value(node.value):
                names.append(node.target.id)
    return sorted({n for n in names if not n.startswith("_")})


def top_level_all(source: str) -> list[str]:
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise SystemExit("the legacy package has no __all__")


def surface(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:

        def read(module: str) -> str:
            return zf.read(LEGACY + module.replace(".", "/") + ".py").decode("utf-8")

        lines: set[str] = set()
        per_module = {m: public_names(read(m)) for m in MODULES}
        for module, names in per_module.items():
            lines.update(f"verifiers.{module}:{n}" for n in names)
        top = set(top_level_all(read("__init__")))
        top.update(per_module["types"], per_module["errors"])
        lines.update(f"verifiers:{n}" for n in top)
    return sorted(lines)


def main() -> None:
    if len(sys.argv) > 1:
        wheel = Path(sys.argv[1])
        OUT.write_text("\n".join(surface(wheel)) + "\n")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "verifiers==0.3.1",
                    "--no-deps",
                    "-q",
                    "-d",
                    tmp,
                ],
                check=True,
            )
            wheel = next(Path(tmp).glob("verifiers-0.3.1-*.whl"))
            OUT.write_text("\n".join(surface(wheel)) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
