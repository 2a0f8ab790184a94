"""Model clients: the Client interface and its implementations.

0.3.x's names of this package (``resolve_client``, the classic client classes) are the classic
room's (:mod:`verifiers.classic.clients`), served on first use: ``import verifiers`` registers
them with :mod:`verifiers.extension_points`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers.extension_points import forwarder as _forwarder

if TYPE_CHECKING:
    from verifiers.classic.clients import RendererClient as RendererClient
    from verifiers.classic.clients import resolve_client as resolve_client

# names 0.3.x's version of this package defined or imported, on first use
__getattr__ = _forwarder(__name__)
