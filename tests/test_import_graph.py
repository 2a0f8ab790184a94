"""The rooms of the package import each other in one direction (docs/architecture.md).

The import graph is built statically from the source (``ast``): every ``import`` statement,
at module level and inside functions alike; only those under ``if TYPE_CHECKING:`` are left
out (they never run). Checked:

- the core (``verifiers.envs``, ``rubrics``, ``parsers``, ``clients``, ``types``,
  ``messages``) imports no higher room: not the classic room, the evaluation driver, v1, the
  env servers, the agents, the trainer, the web UI or the hub client;
- no import circle among the core and driver modules, in the classic room (with
  ``verifiers.errors`` and ``verifiers.utils``), or in ``cli/``.

The classic methods of ``Environment`` reach it through :mod:`verifiers.extension_points`:
``import verifiers`` registers them, the core never imports them. Nor may the core reach the
classic room by a detour: an import of a 0.3.x module path that the classic room serves
(``verifiers.clients.client``, :data:`verifiers.classic.aliases.MOVED`) counts as an import of
the module behind it, and ``from verifiers.types import ClientConfig`` (a name the classic room
serves, :data:`verifiers.classic.served.SERVED`) as an import of the module defining it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import verifiers
from verifiers.classic.aliases import MOVED
from verifiers.classic.served import SERVED

ROOT = Path(verifiers.__file__).parent
REPO = ROOT.parent

DRIVER = ["verifiers.evaluation", "verifiers.eval_run", "verifiers.eval_plan"]

#: the core: it may import only itself and the shared lower layers (errors, decorators,
#: utils, sandbox, extension_points, ...)
CORE_ROOMS = [
    "verifiers.envs",
    "verifiers.rubrics",
    "verifiers.parsers",
    "verifiers.clients",
    "verifiers.types",
    "verifiers.messages",
]

#: the rooms above the core
HIGHER_ROOMS = [
    "verifiers.classic",
    *DRIVER,
    "verifiers.v1",
    "verifiers.serve",
    "verifiers.agents",
    "verifiers.train",
    "verifiers.web",
    "verifiers.hub",
]

#: the modules among which no import circle is allowed
ACYCLIC = [*CORE_ROOMS, *DRIVER, "verifiers.loading"]

#: module paths the classic room serves (an import of one is an import of its target)
ALIASES = {f"verifiers.{old}": new for old, new in MOVED.items() if new is not None}


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Imports(ast.NodeVisitor):
    """Every module an ``import`` statement names, wherever it stands (functions, classes,
    ``try``), except under ``if TYPE_CHECKING:``."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.found: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            for child in node.body:
                self.visit(child)
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.update(alias.name for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.module.split(".")
            base = parts if self.is_package else parts[:-1]
            base = base[: len(base) - node.level + 1]
            target = ".".join([*base, node.module] if node.module else base)
        else:
            target = node.module or ""
        self.found.add(target)
        self.found.update(f"{target}.{alias.name}" for alias in node.names)
        served = SERVED.get(target, {})
        self.found.update(served[a.name] for a in node.names if a.name in served)


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the modules of ``package`` it imports (statically, see the module doc)."""
    modules = {_module_name(p, package.parent): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        visitor = _Imports(name, path.name == "__init__.py")
        visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
        found = {ALIASES.get(m, m) for m in visitor.found}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _in(module: str, rooms: list[str]) -> bool:
    return any(module == room or module.startswith(room + ".") for room in rooms)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def strongconnect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in graph:
                continue
            if succ not in index:
                strongconnect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strongconnect(node)
    return components


def _subgraph(graph: dict[str, set[str]], rooms: list[str]) -> dict[str, set[str]]:
    return {m: {s for s in succ if _in(s, rooms)} for m, succ in graph.items() if _in(m, rooms)}


GRAPH = import_graph(ROOT)
CORE_MODULES = sorted(m for m in GRAPH if _in(m, CORE_ROOMS))


def _higher_imports(module: str) -> list[str]:
    return sorted(m for m in GRAPH[module] if _in(m, HIGHER_ROOMS))


@pytest.mark.parametrize("module", CORE_MODULES)
def test_a_core_module_imports_no_higher_room(module: str) -> None:
    assert _higher_imports(module) == [], f"{module} imports a room above the core"


def test_core_and_driver_modules_import_each_other_without_cycles() -> None:
    assert cycles(_subgraph(GRAPH, ACYCLIC)) == []


def test_the_classic_room_imports_itself_without_cycles() -> None:
    rooms = [
        "verifiers.classic",
        "verifiers.errors",
        "verifiers.utils",
        "verifiers.extension_points",
    ]
    assert cycles(_subgraph(GRAPH, rooms)) == []


def test_the_cli_modules_import_each_other_without_cycles() -> None:
    found = cycles(import_graph(REPO / "cli"))
    if found == [["cli.eval_cmd", "cli.eval_v1"]]:
        # being fixed by another change of issue 35
        pytest.xfail("cli.eval_cmd <-> cli.eval_v1")
    assert found == []


def test_the_graph_sees_imports_inside_functions_and_skips_type_checking() -> None:
    # verifiers.envs.environment imports the parsers inside __init__ ...
    assert "verifiers.parsers.parser" in GRAPH["verifiers.envs.environment"]
    # ... and the clients only under TYPE_CHECKING at module level, in functions otherwise
    assert "verifiers.clients.base" in GRAPH["verifiers.envs.environment"]
    assert "verifiers.envs.environment" in GRAPH["verifiers.envs.multiturn_env"]
    # the driver names Environment only for its annotations
    assert "verifiers.envs.environment" not in GRAPH["verifiers.evaluation"]
    # the classic room imports the core (the other direction)
    assert "verifiers.envs.environment" in GRAPH["verifiers.classic.env_mixin"]


def test_the_higher_room_check_finds_an_upward_import(tmp_path: Path) -> None:
    package = tmp_path / "verifiers"
    (package / "envs").mkdir(parents=True)
    (package / "classic").mkdir()
    for init in (package, package / "envs", package / "classic"):
        (init / "__init__.py").write_text("")
    (package / "classic" / "mixin.py").write_text("X = 1\n")
    (package / "envs" / "env.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from verifiers.classic import mixin\n"
        "def f():\n    from ..classic.mixin import X\n    return X\n"
    )
    graph = import_graph(package)
    assert graph["verifiers.envs.env"] == {"verifiers.classic.mixin"}


def test_the_higher_room_check_sees_through_served_paths_and_names(tmp_path: Path) -> None:
    # a core module reaching the classic room through a 0.3.x path it serves
    # (verifiers.clients.client) or a name it serves (verifiers.types.ClientConfig)
    package = tmp_path / "verifiers"
    for folder in ("envs", "classic", "clients"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "types.py").write_text("")
    (package / "classic" / "client.py").write_text("class Client: ...\n")
    (package / "classic" / "models.py").write_text("class ClientConfig: ...\n")
    (package / "envs" / "env.py").write_text(
        "from verifiers.types import ClientConfig\n"
        "def f():\n    import verifiers.clients.client\n    return verifiers.clients.client\n"
    )
    graph = import_graph(package)
    assert graph["verifiers.envs.env"] == {
        "verifiers.types",
        "verifiers.classic.client",
        "verifiers.classic.models",
    }


def test_the_classic_names_of_core_modules_are_served_on_first_use() -> None:
    # verifiers.types imported first (the package's __init__ registers the classic room anyway):
    # the classic names resolve, join ``import *``, and cost no import until asked for
    code = (
        "import sys, json; import verifiers.types as t; "
        "before = [m for m in ('pydantic', 'verifiers.classic.models', 'verifiers.classic.types',"
        " 'verifiers.classic.clients') if m in sys.modules]; "
        "from verifiers.types import ClientConfig, RolloutOutput; "
        "from verifiers.clients import resolve_client; "
        "import verifiers.clients.client as cc; import verifiers.classic.client as real; "
        "ns = {}; exec('from verifiers.types import *', ns); "
        "print(json.dumps([before, ClientConfig.__module__, RolloutOutput.__module__, "
        "resolve_client.__module__, cc is real, 'GenerateOutputs' in ns and 'Tool' in ns, "
        "t.ClientConfig is ClientConfig]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [
        [],
        "verifiers.classic.models",
        "verifiers.classic.types",
        "verifiers.classic.clients",
        True,
        True,
        True,
    ]
    assert not (ROOT / "clients" / "client.py").exists()  # the classic client lives in classic/


def test_added_exports_join_a_loaded_module_and_one_imported_later() -> None:
    import types

    from verifiers import extension_points

    loaded = types.ModuleType("vf_test_loaded")
    loaded.__all__ = ["a"]  # type: ignore[attr-defined]
    sys.modules["vf_test_loaded"] = loaded
    try:
        extension_points.add_exports("vf_test_loaded", ["b", "a"])
        extension_points.add_exports("vf_test_loaded", ["b", "c"])
    finally:
        del sys.modules["vf_test_loaded"]
    assert loaded.__all__ == ["a", "b", "c"]  # type: ignore[attr-defined]
    assert extension_points.exports("vf_test_loaded") == ["b", "a", "c"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    "module",
    [
        "verifiers.envs.environment",
        "verifiers.envs.singleturn_env",
        "verifiers.envs.multiturn_env",
        "verifiers.envs.tool_env",
        "verifiers.envs.env_group",
        "verifiers.rubrics",
        "verifiers.parsers",
        "verifiers.classic.env_mixin",
        "verifiers.classic.extras",
        "verifiers.types",
    ],
)
def test_importing_a_core_module_does_not_import_the_evaluation_driver(module: str) -> None:
    code = (
        f"import sys, json; import {module}; "
        f"print(json.dumps([m for m in {DRIVER!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [], f"{module} imports the evaluation driver at import time"


def test_the_classic_evaluate_method_still_reaches_the_driver() -> None:
    code = (
        "import sys, json; import verifiers.envs.singleturn_env as m; "
        "env = m.SingleTurnEnv(dataset=[{'question': 'q', 'answer': 'a'}]); "
        "before = 'verifiers.evaluation' in sys.modules; "
        "result = env.evaluate_sync(None, 'oracle'); "
        "print(json.dumps([before, 'verifiers.evaluation' in sys.modules, len(result['outputs'])]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, True, 1]


def test_the_classic_methods_are_a_registered_base_of_every_environment() -> None:
    from verifiers.classic.env_mixin import ClassicEnvironmentMixin
    from verifiers.envs.environment import Environment, EnvironmentCore

    mro = Environment.__mro__
    assert mro.index(ClassicEnvironmentMixin) < mro.index(EnvironmentCore)

    class UserEnv(verifiers.MultiTurnEnv):
        async def env_response(self, messages: object, state: object, **kwargs: object) -> list:
            return []

    env = UserEnv(dataset=[{"question": "q", "answer": "a"}])
    assert isinstance(env, verifiers.Environment) and isinstance(env, EnvironmentCore)
    assert UserEnv.evaluate is ClassicEnvironmentMixin.evaluate
