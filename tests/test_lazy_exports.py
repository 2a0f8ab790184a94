"""Every package that exports lazily does it through ``verifiers._lazy.lazy_exports``: its
``__all__`` is its export map, every name resolves to the object its module defines, and the
names type checkers see (the ``if TYPE_CHECKING:`` imports) are the same names from the same
modules."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
import types

import pytest

from verifiers._lazy import lazy_exports

PACKAGES = ["verifiers", "verifiers.train", "verifiers.testing", "verifiers.hub", "hub_server"]


def _package(name: str) -> types.ModuleType:
    if name == "verifiers.train":
        pytest.importorskip("torch")  # resolving its names imports the trainer
        pytest.importorskip("transformers")
    return importlib.import_module(name)


def _type_checking_imports(module: types.ModuleType) -> dict[str, str]:
    """``name -> module`` for the imports under the module's ``if TYPE_CHECKING:``."""
    tree = ast.parse(inspect.getsource(module))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    for alias in stmt.names:
                        found[alias.asname or alias.name] = stmt.module
    return found


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_the_export_map_and_every_name_resolves(name: str) -> None:
    pkg = _package(name)
    exports: dict[str, str] = pkg._EXPORTS
    assert pkg.__all__ == sorted(exports)
    for export, module in exports.items():
        value = getattr(pkg, export)
        assert value is getattr(importlib.import_module(module), export), export
    assert set(exports) <= set(dir(pkg))


@pytest.mark.parametrize("name", PACKAGES)
def test_type_checkers_see_the_same_names_from_the_same_modules(name: str) -> None:
    pkg = importlib.import_module(name)
    submodules = {sub: name for sub in getattr(pkg, "_SUBMODULES", ())}
    expected = {**pkg._EXPORTS, **submodules}
    seen = _type_checking_imports(pkg)
    assert {n: seen.get(n) for n in expected} == expected  # every export is typed
    # and nothing else is typed, apart from compatibility aliases that also resolve
    resolvable = {**getattr(pkg, "_CLASSIC_FORWARDS", {}), **expected}
    assert {n: m for n, m in seen.items() if resolvable.get(n) != m} == {}


@pytest.mark.parametrize("name", PACKAGES)
def test_unknown_names_are_attribute_errors_naming_the_package(name: str) -> None:
    pkg = importlib.import_module(name)
    with pytest.raises(AttributeError, match=rf"module '{name}' has no attribute 'NoSuchThing'"):
        pkg.NoSuchThing  # noqa: B018


def test_lazy_exports_loads_on_first_use_and_caches() -> None:
    pkg = types.ModuleType("lazy_probe")
    sys.modules["lazy_probe"] = pkg
    try:
        pkg.__getattr__, pkg.__dir__ = lazy_exports(  # type: ignore[method-assign]
            "lazy_probe", {"dumps": "json"}, submodules=("decoder",)
        )
        assert "dumps" not in vars(pkg)
        assert "dumps" in dir(pkg) and "decoder" in dir(pkg)
        import json

        assert pkg.dumps is json.dumps
        assert vars(pkg)["dumps"] is json.dumps  # cached: __getattr__ is not asked again
        with pytest.raises(ModuleNotFoundError, match=r"lazy_probe\.decoder"):
            pkg.decoder  # noqa: B018  (a submodule is imported under the package's name)
    finally:
        del sys.modules["lazy_probe"]


def test_importing_the_hub_client_package_loads_no_http_stack() -> None:
    code = (
        "import sys, verifiers.hub; "
        "print([m for m in ('httpx', 'pydantic', 'fastapi') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
