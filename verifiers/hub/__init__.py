"""The hub, from the client side: the wire schemas shared with the hub server (so the two
cannot drift) and :class:`HubClient`, a Python client for training scripts and the ``vf`` CLI.

Names load lazily: ``import verifiers.hub`` imports neither httpx nor pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._lazy import lazy_exports

_EXPORTS = {
    "HubClient": "verifiers.hub.client",
    "Installed": "verifiers.hub.client",
    "parse_spec": "verifiers.hub.client",
    "pick_release": "verifiers.hub.client",
    "HubSettings": "verifiers.hub.config",
    "HubClientError": "verifiers.errors",
    "SCOPES": "verifiers.hub.schemas",
    "ErrorBody": "verifiers.hub.schemas",
    "EvalResultIn": "verifiers.hub.schemas",
    "EvalResultOut": "verifiers.hub.schemas",
    "FileOut": "verifiers.hub.schemas",
    "JournalEntryOut": "verifiers.hub.schemas",
    "MemberAdd": "verifiers.hub.schemas",
    "ProjectList": "verifiers.hub.schemas",
    "ProjectOut": "verifiers.hub.schemas",
    "ReleaseOut": "verifiers.hub.schemas",
    "TokenCreate": "verifiers.hub.schemas",
    "TokenCreated": "verifiers.hub.schemas",
    "TokenOut": "verifiers.hub.schemas",
    "UploadResult": "verifiers.hub.schemas",
    "UserCreate": "verifiers.hub.schemas",
    "UserCreated": "verifiers.hub.schemas",
    "WhoAmI": "verifiers.hub.schemas",
    "YankRequest": "verifiers.hub.schemas",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, submodules=("schemas",))

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from verifiers.errors import HubClientError as HubClientError
    from verifiers.hub.client import HubClient as HubClient
    from verifiers.hub.client import Installed as Installed
    from verifiers.hub.client import parse_spec as parse_spec
    from verifiers.hub.client import pick_release as pick_release
    from verifiers.hub.config import HubSettings as HubSettings
    from verifiers.hub.schemas import SCOPES as SCOPES
    from verifiers.hub.schemas import ErrorBody as ErrorBody
    from verifiers.hub.schemas import EvalResultIn as EvalResultIn
    from verifiers.hub.schemas import EvalResultOut as EvalResultOut
    from verifiers.hub.schemas import FileOut as FileOut
    from verifiers.hub.schemas import JournalEntryOut as JournalEntryOut
    from verifiers.hub.schemas import MemberAdd as MemberAdd
    from verifiers.hub.schemas import ProjectList as ProjectList
    from verifiers.hub.schemas import ProjectOut as ProjectOut
    from verifiers.hub.schemas import ReleaseOut as ReleaseOut
    from verifiers.hub.schemas import TokenCreate as TokenCreate
    from verifiers.hub.schemas import TokenCreated as TokenCreated
    from verifiers.hub.schemas import TokenOut as TokenOut
    from verifiers.hub.schemas import UploadResult as UploadResult
    from verifiers.hub.schemas import UserCreate as UserCreate
    from verifiers.hub.schemas import UserCreated as UserCreated
    from verifiers.hub.schemas import WhoAmI as WhoAmI
    from verifiers.hub.schemas import YankRequest as YankRequest
