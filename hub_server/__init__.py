"""The verifiers Environments Hub: a standards-based index of environment wheels.

``create_app(settings)`` builds the FastAPI app; ``Settings.from_env()`` reads ``VF_HUB_*``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._lazy import lazy_exports

_EXPORTS = {
    "create_app": "hub_server.app",
    "Settings": "hub_server.settings",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from hub_server.app import create_app as create_app
    from hub_server.settings import Settings as Settings
