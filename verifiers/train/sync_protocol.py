"""What every weight-push method shares: the :class:`WeightSync` protocol the trainer calls,
the shape of the tensors it hands over, and the server address the pushes go to.

The methods themselves live in :mod:`verifiers.train.weight_sync` (HTTP reloads, and the
factory) and :mod:`verifiers.train.nccl_sync` (GPU-to-GPU over NCCL); both build on this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

__all__ = ["NamedTensors", "WeightSync", "server_root"]

#: a callable that yields ``(parameter name, tensor)`` pairs of the new weights
NamedTensors = Callable[[], Iterator[tuple[str, Any]]]


def server_root(base_url: str) -> str:
    """``http://host:port`` of an OpenAI-style base URL (``.../v1`` removed)."""
    return base_url.rstrip("/").removesuffix("/v1")


class WeightSync(Protocol):
    """How new weights reach the servers."""

    #: True when :meth:`push` needs the weights saved to a directory first
    needs_directory: bool

    def setup(self) -> None:
        """Called once before the first push (e.g. to join a transfer group)."""

    def push(self, step: int, directory: Path | None, tensors: NamedTensors | None) -> float:
        """Make every server serve the new weights; returns the seconds it took."""

    def close(self) -> None:
        """Release what :meth:`setup` acquired."""
