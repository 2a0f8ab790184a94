"""The verifiers Environments Hub: a standards-based index of environment wheels.

``create_app(settings)`` builds the FastAPI app; ``Settings.from_env()`` reads ``VF_HUB_*``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Settings", "create_app"]

if TYPE_CHECKING:
    from hub_server.app import create_app
    from hub_server.settings import Settings


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from hub_server.app import create_app

        return create_app
    if name == "Settings":
        from hub_server.settings import Settings

        return Settings
    raise AttributeError(name)
