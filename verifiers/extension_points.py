"""How the rooms above the core extend it without the core importing them.

The core (``verifiers.envs``, ``rubrics``, ``parsers``, ``clients``, ``types``, ``messages``)
imports nothing from the classic room (:mod:`verifiers.classic`) or the evaluation driver. What
those rooms add to the core, they register here; ``import verifiers`` registers the classic
room's additions (:func:`verifiers.classic.install.install`) before any core module runs.

Two extension points:

- :func:`extend_environment`: a provider returning a mixin class that becomes a base of
  :class:`verifiers.envs.environment.Environment`, between it and the core's
  ``EnvironmentCore`` (so every environment class, subclasses written by users included, has
  its methods, and its methods reach the core with ``super()``).
- :func:`register_name_resolver` and :func:`forwarder`: a core module ends with
  ``__getattr__ = forwarder(__name__)``; a name the module does not bind is asked of the
  registered resolvers (the classic room serves the names 0.3.x's module of that path
  imported, and those it defined that are classic-only here). :func:`add_exports` lists such
  names in the module's ``__all__`` (a core module writes ``__all__ = [..., *exports(__name__)]``),
  so that ``from module import *`` imports them too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "add_exports",
    "apply_environment_extensions",
    "exports",
    "extend_environment",
    "forwarder",
    "register_name_resolver",
]

MixinProvider = Callable[[], type]
NameResolver = Callable[[str, str], Any]

_providers: list[MixinProvider] = []
_environment: type | None = None
_resolvers: list[NameResolver] = []
_exports: dict[str, list[str]] = {}


def extend_environment(provider: MixinProvider) -> None:
    """Make the mixin class ``provider()`` returns a base of ``Environment``.

    ``provider`` is called once ``verifiers.envs.environment`` has defined the class (at once
    when it has), so that registering costs no import of the environment module."""
    if provider in _providers:
        return
    _providers.append(provider)
    if _environment is not None:
        _add_base(_environment, provider())


def apply_environment_extensions(environment: type) -> None:
    """Called by ``verifiers.envs.environment`` once, right after defining ``Environment``."""
    global _environment
    _environment = environment
    for provider in _providers:
        _add_base(environment, provider())


def _add_base(environment: type, mixin: type) -> None:
    if mixin not in environment.__mro__:
        environment.__bases__ = (mixin, *environment.__bases__)


def register_name_resolver(resolver: NameResolver) -> None:
    """Add ``resolver(module, name)``: the value of ``module.name`` for a name the module does
    not bind, or ``AttributeError``."""
    if resolver not in _resolvers:
        _resolvers.append(resolver)


def forwarder(module: str, fallback: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562): ``fallback`` (the module's own, if any) first, then
    the registered name resolvers."""

    def __getattr__(name: str) -> Any:
        if fallback is not None:
            try:
                return fallback(name)
            except AttributeError:
                pass
        if not name.startswith("__"):
            for resolve in _resolvers:
                try:
                    return resolve(module, name)
                except AttributeError:
                    continue
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def add_exports(module: str, names: Iterable[str]) -> None:
    """Add ``names`` (served by a registered resolver) to ``module``'s ``__all__``: now, when
    the module is imported already, and when it is imported (it reads :func:`exports`)."""
    listed = _exports.setdefault(module, [])
    new = [n for n in names if n not in listed]
    listed.extend(new)
    loaded = sys.modules.get(module)
    public = getattr(loaded, "__all__", None) if loaded is not None else None
    if isinstance(public, list):
        public.extend(n for n in new if n not in public)


def exports(module: str) -> list[str]:
    """The names registered with :func:`add_exports` for ``module``."""
    return list(_exports.get(module, ()))
