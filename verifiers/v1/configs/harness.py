"""The harness config: which program plays a seat (``id``) and the knobs every harness has.
A harness's own knobs live on its ``HarnessConfig`` subclass (``Harness[MyConfig]``); the
seat's ``harness`` field narrows to it by ``id`` (see ``verifiers.v1.utils.loaders``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from verifiers.v1.configs import Config

__all__ = [
    "HarnessConfig",
    "PinnedVersion",
    "SkillSource",
    "WireHarnessConfig",
    "skill_destination",
]

PinnedVersion = Annotated[str, Field(pattern=r"^[A-Za-z0-9._+-]+$")]
"""A release or tag a harness pins its program's install to: letters, digits and ``._+-``
(nothing a shell or a package spec would read as more than a version)."""

SkillSource = Path | Annotated[dict[Literal["runtime"], str], Field(min_length=1)]
"""Where a skill comes from: a folder on the host, or ``{"runtime": path}``, a root of skills
already inside the runtime."""


def skill_destination(skill: SkillSource, dest: str) -> str:
    """Where a skill source is installed under ``dest``: a runtime root merges into ``dest``
    itself, a host folder lands in ``dest/<its resolved name>``."""
    if isinstance(skill, dict):
        return dest
    return f"{dest}/{Path(skill).resolve().name}"


class HarnessConfig(Config):
    id: str = "null"
    """The harness: a built-in id (``null``) or an installed package exporting a Harness
    subclass in ``__all__``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra variables for the harness program; the harness's own take precedence."""
    forward_env: list[str] = Field(default_factory=list)
    """Host variables forwarded to the program (an explicit ``env`` entry wins)."""
    tool_timeout: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    """Seconds one tool call may take."""
    disabled_tools: list[str] | None = None

    @property
    def name(self) -> str:
        return self.id

    @property
    def resolved_env(self) -> dict[str, str]:
        forwarded = {k: os.environ[k] for k in self.forward_env if k in os.environ}
        return {**forwarded, **self.env}


class WireHarnessConfig(HarnessConfig):
    """A harness config read back from a record: its harness-specific knobs are kept as extra
    keys, so reading needs no harness installed."""

    model_config = ConfigDict(extra="allow")
