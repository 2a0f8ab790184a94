"""Classic (0.3.x) environment classes that depend on a vendor's service or a system verifiers
does not run: ``TextArenaEnv``, ``BrowserEnv``, ``HarborEnv``, ``OpenEnvEnv``.
(``CliAgentEnv`` runs here, on local sandboxes: :mod:`verifiers.agents.cli_agent_env`.)

They resolve (``vf.BrowserEnv``, ``from verifiers import HarborEnv``), so a module that imports
them loads; constructing one raises a :class:`~verifiers.ConfigError` that names what it needs
and what works here instead.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.errors import ConfigError
from verifiers.types import Messages, State

__all__ = ["BrowserEnv", "HarborEnv", "OpenEnvEnv", "TextArenaEnv"]


ModeType = Literal["dom", "cua"]  # BrowserEnv(mode=...) in 0.3.x


class _NeedsService(MultiTurnEnv):
    """Base of the classes above: construction explains the missing requirement."""

    needs: ClassVar[str] = ""
    instead: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(
            f"{type(self).__name__} cannot run here: it needs {self.needs}. {self.instead}"
        )

    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        raise NotImplementedError  # never reached: construction refuses


class TextArenaEnv(_NeedsService):
    needs = "the `textarena` package and its game registry (with `nltk` word lists downloaded)"
    instead = (
        "Wrap the game as a Gymnasium-style class with reset(seed=...) and step(action) and use "
        "vf.GymEnv, or write the game as a vf.MultiTurnEnv (see environments/wordle)."
    )


class BrowserEnv(_NeedsService):
    needs = (
        "a remote browser service (Browserbase: BROWSERBASE_API_KEY and a project id) driven "
        "through Stagehand, plus a model API key for the DOM mode"
    )
    instead = (
        "Expose the pages the task needs as tools of a vf.ToolEnv or an MCP server (vf.MCPEnv)."
    )


class HarborEnv(_NeedsService):
    needs = "Harbor task bundles executed in Prime Intellect's hosted sandboxes (a Prime API key)"
    instead = "Run the task's commands in local sandboxes with vf.SandboxEnv."


class OpenEnvEnv(_NeedsService):
    needs = (
        "an OpenEnv environment server (the `openenv-core` package and a Docker image built "
        "with `vf-build`)"
    )
    instead = (
        "Wrap a reset/step environment with vf.GymEnv, or serve its tools over MCP and use "
        "vf.MCPEnv."
    )


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
