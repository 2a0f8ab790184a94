"""The hub's behaviour, independent of HTTP: every rule lives here and raises domain errors.

One module per concern, each a part of :class:`HubService`:

- ``accounts``: users, organisations, memberships, tokens, authentication
- ``publishing``: recording uploads, yank/unyank, admin deletes, blob garbage collection
- ``queries``: listing and search, project/release views, the simple index's data
- ``evals``: evaluation results pinned to a release's wheel
- ``journal``: the change serials and the audit log
- ``lookups``: namespace rules and the project/release lookups the parts share
- ``context``: the engine, sessions, storage and settings every part reads
"""

from __future__ import annotations

from hub_server.services.hub import HubService, open_service

__all__ = ["HubService", "open_service"]
