"""0.3.x modules and names that need a service or program this verifiers does not have.

Upstream verifiers 0.3.1 ships modules that drive Prime Intellect's hosted sandboxes and
tunnels, vendor services (Browserbase, OpenEnv, Anthropic, OpenAI's Responses API, token-level
inference servers), its own command-line programs and GEPA, and ``vf-eval``'s internals. Their
module paths and names resolve here, so environment code that imports them loads:

* a missing module path (``verifiers.envs.experimental.sandbox_mixin``, and its
  ``verifiers.legacy.`` alias) is answered by :class:`UnavailableFinder`, which sits last on
  ``sys.meta_path`` (consulted only when no real module exists) and makes a module whose
  ``__getattr__`` serves its names;
* a name 0.3.x's module imported is served from where it came from
  (:mod:`verifiers.classic.forward`);
* a name it defined is made from its kind, recorded from 0.3.1's source by
  ``scripts/classic_surface.py`` in :mod:`verifiers.classic.unavailable_names`: literal
  constants, enums, exception classes, loggers and type variables are real; a class can be named and subclassed
  but constructing it raises :class:`~verifiers.ConfigError`, and so does calling a function or
  using any other object; the message names what it needs and what to use instead
  (:data:`GROUPS`).
"""

from __future__ import annotations

import enum
import logging
import sys
import types
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from typing import Any, NoReturn, TypeVar

from verifiers.errors import ConfigError
from verifiers.extension_points import forwarder

__all__ = ["GROUPS", "UnavailableFinder", "install", "stand_in"]

# group -> (what it needs, what to use instead)
GROUPS: dict[str, tuple[str, str]] = {
    "sandbox": (
        "Prime Intellect's hosted sandboxes, tunnels or interception server (0.3.1's composable "
        "tasksets and harnesses, OpenCode, Harbor, CLI agents, sandbox mixin)",
        "Run commands in local sandboxes with vf.SandboxEnv or vf.PythonEnv.",
    ),
    "vendor": (
        "a vendor service (Browserbase/Stagehand, an OpenEnv server, Anthropic's or OpenAI's "
        "Responses API, or a token-in/token-out inference server)",
        "Use an OpenAI-compatible chat endpoint (vf.OpenAIChatCompletionsClient), tools in a "
        "vf.ToolEnv or an MCP server (vf.MCPEnv), or vf.GymEnv.",
    ),
    "cli": (
        "0.3.1's own command-line programs (vf-eval, vf-init, vf-install, vf-build, vf-setup, "
        "vf-tui, vf-gepa) and its GEPA optimizer",
        "Use this verifiers' `vf` command (`vf eval`, `vf init`, `vf install`, ...; `vf --help`) "
        "or verifiers.evaluation from Python.",
    ),
    "eval": (
        "0.3.1's vf-eval internals (its results layout, display, pricing and resume helpers)",
        "Use this verifiers' evaluator: `vf eval` or verifiers.evaluation (results are saved "
        "and resumed by verifiers.utils.save_utils).",
    ),
}


def _message(module: str, name: str, group: str) -> str:
    needs, instead = GROUPS[group]
    return f"{module}.{name} is not available here: it needs {needs}. {instead}"


class _UnavailableClass:
    """Base of the stand-in classes: naming and subclassing work, constructing raises."""

    _unavailable_message = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(self._unavailable_message)


class _UnavailableObject:
    """Stand-in for a module-level object of a kind that cannot be rebuilt here."""

    def __init__(self, message: str) -> None:
        self._unavailable_message = message

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ConfigError(self._unavailable_message)

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):
            raise AttributeError(name)
        raise ConfigError(self._unavailable_message)

    def __repr__(self) -> str:
        return f"<not available here: {self._unavailable_message}>"


def _function(module: str, name: str, message: str) -> Any:
    def unavailable(*args: Any, **kwargs: Any) -> NoReturn:
        raise ConfigError(message)

    unavailable.__name__ = unavailable.__qualname__ = name
    unavailable.__module__ = module
    unavailable.__doc__ = message
    return unavailable


def _table() -> dict[str, tuple[str, bool, dict[str, Any]]]:
    from verifiers.classic.unavailable_names import UNAVAILABLE

    return UNAVAILABLE


# names 0.3.x's "not available here" modules define that exist here as real objects
# (which say themselves what they need): ``(module path, name) -> "module:attribute"``
REAL: dict[tuple[str, str], str] = {
    (
        "verifiers.envs.experimental.harbor_env.env",
        "HarborEnv",
    ): "verifiers.envs.vendor_envs:HarborEnv",
}


def stand_in(paths: Sequence[str], name: str) -> Any:
    """The stand-in for ``name`` as defined by 0.3.x's module at one of ``paths``;
    ``AttributeError`` when none of them defined it in a "not available here" module."""
    for module in paths:
        real = REAL.get((module, name))
        if real is not None:
            from importlib import import_module

            source, _, attr = real.partition(":")
            return getattr(import_module(source), attr)
    table = _table()
    for module in paths:
        entry = table.get(module)
        if entry is None or name not in entry[2]:
            continue
        group, _, names = entry
        kind = names[name]
        message = _message(module, name, group)
        if kind == "class":
            return type(
                name,
                (_UnavailableClass,),
                {"__module__": module, "__doc__": message, "_unavailable_message": message},
            )
        if kind == "exception":
            return type(name, (Exception,), {"__module__": module, "__doc__": message})
        if kind == "function":
            return _function(module, name, message)
        if kind == "logger":
            return logging.getLogger(module)
        if kind == "typevar":
            return TypeVar(name)
        if isinstance(kind, dict) and "value" in kind:
            return kind["value"]
        if isinstance(kind, dict) and "enum" in kind:
            members = list(kind["enum"].items())
            if kind.get("str"):
                return enum.Enum(name, members, module=module, type=str)
            return enum.Enum(name, members, module=module)
        return _UnavailableObject(message)
    raise AttributeError(f"module {paths[0]!r} has no attribute {name!r}")


class UnavailableFinder(MetaPathFinder, Loader):
    """Answers ``verifiers.<path>`` for 0.3.x modules listed in
    :mod:`verifiers.classic.unavailable_names` that do not exist here (it is last on
    ``sys.meta_path``, so a real module always wins)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> ModuleSpec | None:
        if not fullname.startswith("verifiers.") or fullname.startswith("verifiers.legacy"):
            return None
        entry = _table().get(fullname)
        if entry is None:
            return None
        return ModuleSpec(fullname, self, is_package=entry[1])

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        group = _table()[spec.name][0]
        module = types.ModuleType(
            spec.name,
            f"0.3.x module kept as a path for compatibility; {GROUPS[group][0]} is not "
            f"available here. {GROUPS[group][1]}",
        )
        if spec.submodule_search_locations is not None:
            module.__path__ = []
        # its names: 0.3.x's imported names, then the stand-ins (verifiers.classic.forward.resolve)
        module.__getattr__ = forwarder(spec.name)  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: names are made on first use."""


def install() -> None:
    """Put the finder last on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, UnavailableFinder) for f in sys.meta_path):
        sys.meta_path.append(UnavailableFinder())
