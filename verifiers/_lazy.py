"""Lazy exports: a package lists ``name -> defining module`` once, and its names load on first
use, so importing the package imports none of the modules behind them.

Usage in a package's ``__init__.py``::

    _EXPORTS = {"Thing": "pkg.things", ...}
    __all__ = sorted(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

with the same names imported under ``if TYPE_CHECKING:`` so that type checkers and IDEs see
their real types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    submodules: Iterable[str] = (),
    unlisted: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (PEP 562).

    ``exports`` maps each public name to the module that defines it; ``submodules`` are
    subpackages reachable as attributes without importing them first; ``unlisted`` maps names
    that resolve the same way but stay out of ``__all__`` (compatibility aliases). A resolved name is
    cached in the package's namespace, so later lookups do not come back here.
    """
    namespace = vars(import_module(package))
    subs = frozenset(submodules)
    every = {**(unlisted or {}), **exports}

    def __getattr__(name: str) -> Any:
        if name in subs:
            return import_module(f"{package}.{name}")
        module = every.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(every) | subs)

    return __getattr__, __dir__
