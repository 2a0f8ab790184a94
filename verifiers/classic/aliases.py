"""The import hook behind ``verifiers.legacy.<module>``: an alias of ``verifiers.<module>``.

It also answers ``verifiers.<path>`` (and ``verifiers.legacy.<path>``) for the 0.3.x module
paths whose modules live elsewhere here (:data:`MOVED`); ``import verifiers`` installs it.

A finder placed first on ``sys.meta_path`` answers ``verifiers.legacy.*`` names (before the path
finder could execute a module file a second time under the alias) with a loader that hands back
the already-imported target module unchanged.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from importlib import import_module
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from importlib.util import find_spec

from verifiers.extension_points import forwarder

__all__ = ["LegacyAliasFinder", "install"]

PREFIX = "verifiers.legacy."

# 0.3.x module paths (under verifiers.legacy.) whose modules live elsewhere here;
# ``None``: a package that only groups modules (an empty namespace)
MOVED: dict[str, str | None] = {
    "envs.experimental": None,
    "envs.integrations": None,
    "envs.experimental.gym_env": "verifiers.envs.gym_env",
    "envs.experimental.mcp_env": "verifiers.envs.mcp_env",
    "envs.experimental.cli_agent_env": "verifiers.agents.cli_agent_env",
    "envs.cli_agent_env": "verifiers.agents.cli_agent_env",  # its path here before 0.9
    "envs.experimental.harbor_env": "verifiers.envs.vendor_envs",
    "envs.integrations.reasoninggym_env": "verifiers.envs.reasoning_gym_env",
    "envs.integrations.textarena_env": "verifiers.envs.vendor_envs",
    "envs.integrations.browser_env": "verifiers.envs.vendor_envs",
    "envs.integrations.openenv_env": "verifiers.envs.vendor_envs",
    "clients.openai_chat_completions_client": "verifiers.classic.clients",
    "clients.openai_completions_client": "verifiers.classic.clients",
    "clients.openai_responses_client": "verifiers.classic.clients",
    "clients.anthropic_messages_client": "verifiers.classic.clients",
    "clients.renderer_client": "verifiers.classic.clients",
    "clients.client": "verifiers.classic.client",  # the classic client base class
    "utils.env_utils": "verifiers.loading",
}


def _target(fullname: str) -> tuple[bool, str | None]:
    """(known, target module) for an alias name."""
    if not fullname.startswith(PREFIX):  # verifiers.<0.3.x path of a module living elsewhere>
        rest = fullname[len("verifiers.") :]
        return (True, MOVED[rest]) if rest in MOVED else (False, None)
    rest = fullname[len(PREFIX) :]
    if rest in MOVED:
        return True, MOVED[rest]
    target = "verifiers." + rest
    if target.startswith("verifiers.legacy"):
        return False, None
    try:
        return find_spec(target) is not None, target
    except ModuleNotFoundError:
        return False, None


class LegacyAliasFinder(MetaPathFinder, Loader):
    def __init__(self) -> None:
        self._real: dict[str, tuple[ModuleSpec | None, Loader | None]] = {}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> ModuleSpec | None:
        if not fullname.startswith("verifiers."):
            return None
        known, module = _target(fullname)
        if not known:
            return None
        is_package = module is None or find_spec(module).submodule_search_locations is not None  # type: ignore[union-attr]
        spec = ModuleSpec(fullname, self, is_package=is_package)
        spec.loader_state = module
        return spec

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        if spec.loader_state is None:
            namespace = types.ModuleType(spec.name, "0.3.x module path kept for compatibility")
            namespace.__path__ = []
            namespace.__getattr__ = forwarder(  # type: ignore[method-assign]
                "verifiers." + spec.name.removeprefix(PREFIX).removeprefix("verifiers.")
            )
            return namespace
        module = import_module(spec.loader_state)
        public = "verifiers." + spec.name.removeprefix(PREFIX).removeprefix("verifiers.")
        if not hasattr(module, "__path__") and _was_package(public):
            # 0.3.x's package (harbor_env, browser_env) whose classes live in a module here:
            # its submodules are answered by verifiers.classic.unavailable's finder
            module.__path__ = []
        # the import system is about to stamp the alias spec onto the shared module object;
        # keep its own spec and loader for exec_module to put back
        self._real[spec.name] = (module.__spec__, getattr(module, "__loader__", None))
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run (the target module is imported already); the module keeps its own
        ``__spec__`` and ``__loader__`` (the alias lives only in ``sys.modules``)."""
        alias = module.__spec__.name if module.__spec__ is not None else None
        real = self._real.pop(alias, None) if alias is not None else None
        if real is not None:
            module.__spec__, module.__loader__ = real


def _was_package(path: str) -> bool:
    from verifiers.classic.unavailable_names import UNAVAILABLE

    return path in UNAVAILABLE and UNAVAILABLE[path][1]


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once), and the finder of 0.3.x modules that
    are not available here last."""
    from verifiers.classic.unavailable import install as install_unavailable

    if not any(isinstance(f, LegacyAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, LegacyAliasFinder())
    install_unavailable()
