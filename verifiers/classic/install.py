"""What ``import verifiers`` does for the classic room: registers its additions to the core
with :mod:`verifiers.extension_points` (the core imports nothing from here).

- the 0.3.x module paths (:mod:`verifiers.classic.aliases`);
- the names 0.3.x's core modules defined that are classic-only here (``ClientConfig``,
  ``RolloutOutput`` of ``verifiers.types``, ``resolve_client`` of ``verifiers.clients``;
  :mod:`verifiers.classic.served`), and the names 0.3.x's modules imported
  (:func:`verifiers.classic.forward.resolve`), served by each core module's ``__getattr__``;
- the classic methods of every environment (:class:`verifiers.classic.env_mixin.
  ClassicEnvironmentMixin`, a base of ``verifiers.Environment`` once that module is imported).

Registering imports neither the environment module nor the mixin.
"""

from __future__ import annotations

from verifiers.classic import served
from verifiers.classic.aliases import install as install_paths
from verifiers.classic.forward import resolve
from verifiers.extension_points import add_exports, extend_environment, register_name_resolver

__all__ = ["environment_mixin", "install"]


def environment_mixin() -> type:
    """The classic methods of ``Environment`` (imported when the environment module is)."""
    from verifiers.classic.env_mixin import ClassicEnvironmentMixin

    return ClassicEnvironmentMixin


def install() -> None:
    install_paths()
    register_name_resolver(served.resolve)
    for module, names in served.EXPORTS.items():
        add_exports(module, names)
    register_name_resolver(resolve)
    extend_environment(environment_mixin)
