"""What the harnesses of agent CLIs from npm (``claude_code``, ``codex``) share: a pinned
``version`` in their config, the CLI's cached install (:func:`verifiers.agents.npm_installs.npm_agent`:
made once from the npm registry), mounted read-only at a fixed path in sandboxed runtimes, and
the path the program is started from."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from pydantic import field_validator
from typing_extensions import TypeVar

from verifiers.v1.harnesses.program import ProgramHarness, ProgramHarnessConfig

if TYPE_CHECKING:
    from verifiers.agents.npm_installs import NpmInstall
    from verifiers.v1.agent import Agent

__all__ = ["NpmCliHarness", "NpmCliHarnessConfig"]


class NpmCliHarnessConfig(ProgramHarnessConfig):
    version: str = ""
    """The CLI's release on npm, exact (``X.Y.Z``); each harness pins its own default."""

    @field_validator("version")
    @classmethod
    def _pinned(cls, value: str) -> str:
        from verifiers.agents.npm_installs import unpinned_version

        problem = unpinned_version(value)
        if problem is not None:
            raise ValueError(problem)
        return value


NpmCliHarnessConfigT = TypeVar(
    "NpmCliHarnessConfigT", bound=NpmCliHarnessConfig, default=NpmCliHarnessConfig
)


class NpmCliHarness(ProgramHarness[NpmCliHarnessConfigT]):
    """A program harness running an npm agent CLI (``npm_key``: its entry in
    :mod:`verifiers.agents.npm_installs`), mounted at ``inside`` in sandboxed runtimes."""

    npm_key: ClassVar[str]
    inside: ClassVar[str]

    @cached_property
    def install(self) -> NpmInstall:
        """The CLI's cached install (made on first use)."""
        from verifiers.agents.npm_installs import known_agent, npm_agent

        return npm_agent(known_agent(self.npm_key), self.config.version)

    def binds(self) -> dict[str, str]:
        return {str(self.install.directory): self.inside}

    def executable(self, agent: Agent) -> str:
        """The CLI's path as the program sees it: under the read-only mount in a sandbox, the
        cache itself in the ``subprocess`` runtime."""
        sandboxed = self.runtime_config(agent).type != "subprocess"
        root = self.inside if sandboxed else str(self.install.directory)
        return f"{root}/{self.install.executable}"
