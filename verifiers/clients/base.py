"""What a user may pass as ``client`` (a :class:`Client`, an ``openai`` client, a base URL),
made into a :class:`Client` by :func:`as_client`.

The interface itself is :mod:`verifiers.clients.interface` (re-exported here, where it has
always been importable from).
"""

from __future__ import annotations

from typing import Any

from verifiers.clients.interface import Client

__all__ = ["Client", "as_client"]


def as_client(obj: Any) -> Client:
    """Turn what a user passes as ``client`` into a :class:`Client`.

    Accepts a :class:`Client`, an ``openai.AsyncOpenAI`` (or sync ``OpenAI``: its settings are
    reused for an async client), or a base URL string (a :class:`NativeClient`).
    """
    if isinstance(obj, Client):
        return obj
    if isinstance(obj, str):
        from verifiers.clients.native import NativeClient

        return NativeClient(base_url=obj)
    try:
        import openai
    except ImportError:  # pragma: no cover
        openai = None  # type: ignore[assignment]
    if openai is not None and isinstance(obj, openai.AsyncOpenAI | openai.OpenAI):
        from verifiers.clients.openai_client import OpenAIClient

        return OpenAIClient(obj)
    from verifiers.errors import ConfigError

    raise ConfigError(
        f"client must be a verifiers.Client, an openai.AsyncOpenAI or a base URL, "
        f"not {type(obj).__name__}"
    )
