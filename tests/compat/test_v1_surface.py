"""The public surface of upstream verifiers 0.4.0's ``verifiers.v1`` resolves here.

The 0.4.0 sdist is downloaded at test time (sha256-pinned, :mod:`tests.compat.upstream_sdist`)
and its ``verifiers/v1`` tree parsed with :mod:`ast`; nothing of upstream is imported or kept.
A public module is one whose dotted path has no part starting with ``_``; its public names are
its ``__all__`` where it has one, else the classes, functions and assigned names it defines
whose names do not start with ``_``. Every such module must import here and every such name
resolve, except:

- :data:`EXCLUDED`: what only works against Prime Intellect's hosted platform (documented in
  ``docs/compat.md``, section "The v1 API", which must name each entry);
- :data:`NOT_YET` (``tests/fixtures/v1_surface_not_yet.txt``): what is not built yet. The test
  requires that list to be exactly what is missing, so a name built later must leave the list,
  and nothing that resolves today can stop resolving unnoticed.

Regenerate the not-yet list after building more with
``python -m tests.compat.test_v1_surface > tests/fixtures/v1_surface_not_yet.txt``.
"""

from __future__ import annotations

import ast
import importlib
import tarfile
from functools import cache
from pathlib import Path

from tests.compat.upstream_sdist import sdist

VERSION = "0.4.0"
SDIST_SHA256 = "66cbb1e2c1ff3fd2da8e4470d4468f2cf8464852cb2f6e9a123c1254d2960aab"
REPO = Path(__file__).resolve().parents[2]
NOT_YET_FILE = REPO / "tests" / "fixtures" / "v1_surface_not_yet.txt"
COMPAT_DOC = REPO / "docs" / "compat.md"

#: Prime-hosted only (a module, or ``module:name``), each named in docs/compat.md.
EXCLUDED: dict[str, str] = {
    "verifiers.v1.utils.prime": "Prime CLI login and API keys",
    "verifiers.v1.runtimes.prime": "Prime's hosted sandboxes",
    "verifiers.v1:PrimeConfig": "Prime's hosted sandboxes",
    "verifiers.v1.runtimes:PrimeConfig": "Prime's hosted sandboxes",
    "verifiers.v1.interception.tunnel.prime": "Prime's hosted tunnels",
    "verifiers.v1.runtimes:PrimeRuntime": "Prime's hosted sandboxes",
    "verifiers.v1.runtimes:PrimeRuntimeInfo": "Prime's hosted sandboxes",
    "verifiers.v1.configs.client:DEFAULT_PRIME_INFERENCE_URL": "Prime's hosted inference",
    "verifiers.v1.configs.client:PRIME_INFERENCE_HOST": "Prime's hosted inference",
    "verifiers.v1.configs.client:PRIME_TEAM_ID_HEADER": "Prime's hosted inference",
    "verifiers.v1.utils.platform:PushState": "Prime's hosted run tracking",
    "verifiers.v1.utils.platform:open_run": "Prime's hosted run tracking",
    "verifiers.v1.utils.platform:log_episodes": "Prime's hosted run tracking",
    "verifiers.v1.utils.platform:finish_run": "Prime's hosted run tracking",
    "verifiers.v1.utils.platform:abort_run": "Prime's hosted run tracking",
    "verifiers.v1.utils.platform:logger": "Prime's hosted run tracking",
}


def _public_names(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            return [str(v) for v in value]
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


@cache
def upstream_surface() -> dict[str, list[str]]:
    """Module path -> its public names, for every public module of 0.4.0's verifiers.v1."""
    prefix = f"verifiers-{VERSION}/"
    surface: dict[str, list[str]] = {}
    with tarfile.open(sdist(VERSION, SDIST_SHA256)) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix(prefix)
            if not (name.startswith("verifiers/v1/") and name.endswith(".py")):
                continue
            parts = name.removesuffix(".py").split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if any(p.startswith("_") for p in parts):
                continue
            handle = tar.extractfile(member)
            assert handle is not None
            tree = ast.parse(handle.read().decode("utf-8"))
            surface[".".join(parts)] = _public_names(tree)
    return surface


def _excluded(module: str, name: str | None = None) -> bool:
    if any(module == m or module.startswith(m + ".") for m in EXCLUDED if ":" not in m):
        return True
    return name is not None and f"{module}:{name}" in EXCLUDED


def missing() -> list[str]:
    """Every public module (``module``) and name (``module:name``) of 0.4.0's verifiers.v1
    that does not resolve here, exclusions left out."""
    out: list[str] = []
    for module, names in sorted(upstream_surface().items()):
        if _excluded(module):
            continue
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            out.append(module)
            continue
        for name in names:
            if _excluded(module, name):
                continue
            try:
                getattr(loaded, name)
            except AttributeError:
                out.append(f"{module}:{name}")
            except ImportError:  # a name asking for a package that is not installed
                continue
    return out


def not_yet() -> list[str]:
    lines = NOT_YET_FILE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_parsed_surface_is_0_4_0s() -> None:
    surface = upstream_surface()
    assert "Request" in surface["verifiers.v1"] and "intercept" in surface["verifiers.v1"]
    assert "image_data_url" in surface["verifiers.v1.utils.image"]
    assert len(surface) == 193 and len(surface["verifiers.v1"]) == 173


def test_every_public_name_resolves_or_is_listed() -> None:
    # exactly the not-yet list is missing: nothing else, and nothing listed resolves already
    assert missing() == not_yet()


def test_top_level_names_the_example_environments_use_resolve() -> None:
    top = {entry.partition(":")[2] for entry in not_yet() if entry.startswith("verifiers.v1:")}
    for name in (
        "Request", "Response", "ContentPart", "TextContentPart", "ImageUrlContentPart",
        "ImageUrlSource", "ID", "intercept", "SharedToolsetConfig", "Runtime", "Toolset",
        "ToolsetConfig", "tool", "State", "Env", "Agents", "Episode", "Judge", "JudgeConfig",
        "ReferenceJudge", "ReferenceJudgeConfig", "Judges", "parse_judge_choice",
    ):  # fmt: skip
        assert name not in top
    for module in ("verifiers.v1.utils.image", "verifiers.v1.clients"):
        assert module not in not_yet()


def test_every_exclusion_is_documented() -> None:
    doc = COMPAT_DOC.read_text()
    for entry in EXCLUDED:
        assert f"`{entry}`" in doc, f"docs/compat.md does not name the exclusion {entry}"


if __name__ == "__main__":
    print("# 0.4.0 verifiers.v1 modules (module) and names (module:name) not built here yet;")
    print("# written by `python -m tests.compat.test_v1_surface`, checked by that test.")
    for entry in missing():
        print(entry)
