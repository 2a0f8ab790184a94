"""Names that 0.3.x's modules make importable by importing them, served on first use.

0.3.x environment code imports names from the module it saw them in, not only from the module
that defines them (``from verifiers.utils.message_utils import Messages``, ``from
verifiers.envs.tool_env import convert_func_to_tool_def``). :data:`IMPORTED
<verifiers.classic.imported_names.IMPORTED>` lists, for each 0.3.1 module path, the names it
imports and where from; a module here that does not bind such a name itself serves it through
the ``__getattr__`` made by :func:`forwarder` (the object comes from the source module, so
it is the real implementation; nothing is imported before a name is asked for).

A name 0.3.x's module defined itself, in a module of a "not available here" group, is served by
:func:`verifiers.classic.unavailable.stand_in`.

A name from a package that is not installed (``anthropic``, ``prime_sandboxes``, ...) raises an
``ImportError`` that says which package it needs.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

from verifiers.extension_points import forwarder

__all__ = ["forwarder", "resolve"]  # forwarder: verifiers.extension_points's, re-exported


def resolve(module: str, name: str) -> Any:
    """The object 0.3.x's ``module`` makes importable as ``name``; ``AttributeError`` when it
    makes no such name importable."""
    from verifiers.classic import extras
    from verifiers.classic.aliases import MOVED
    from verifiers.classic.imported_names import IMPORTED

    if name in extras.SERVED.get(module, ()):  # a 0.3.x module-level name kept in classic.extras
        return _keep(module, name, getattr(extras, name))

    # this module's own 0.3.x path, and the 0.3.x paths of modules that live in it here
    paths = [module] + [f"verifiers.{old}" for old, new in MOVED.items() if new == module]
    source = next((IMPORTED[p][name] for p in paths if name in IMPORTED.get(p, {})), None)
    source_module, _, attr = (source or "").partition(":")
    if source is None or source_module in paths:  # defined by this module in 0.3.x, not here
        from verifiers.classic.unavailable import stand_in

        # AttributeError unless it needs what is not here
        return _keep(module, name, stand_in(paths, name))
    try:
        source_object = import_module(source_module)
        try:
            value = getattr(source_object, attr)
        except AttributeError:  # ``from package import submodule``
            value = import_module(f"{source_module}.{attr}")
    except ModuleNotFoundError as e:
        package = (e.name or source_module).split(".")[0]
        if package == "verifiers":
            raise AttributeError(
                f"module {module!r} has no attribute {name!r} (0.3.x imported it from "
                f"{source_module}, which this verifiers does not have)"
            ) from None
        raise ImportError(
            f"{module}.{name} is {source_module}.{attr}, which needs the {package!r} package; "
            f"install it (pip install {package}) or import the name from where it is defined",
            name=module,
        ) from e
    return _keep(module, name, value)


def _keep(module: str, name: str, value: Any) -> Any:
    owner = sys.modules.get(module)
    if owner is not None:
        setattr(owner, name, value)  # later lookups do not come back here
    return value
