"""Model clients: the Client interface and its implementations."""

from __future__ import annotations

from typing import Any

# client_type of a classic ClientConfig -> the class here that serves it
_CLASSIC_CLIENT_TYPES = {
    "openai_chat_completions": "OpenAIChatCompletionsClient",
    "openai_completions": "OpenAICompletionsClient",
    "openai_responses": "OpenAIResponsesClient",
    "anthropic_messages": "AnthropicMessagesClient",
    "renderer": "RendererClient",
}


def resolve_client(client_or_config: Any) -> Any:
    """0.3.x's ``resolve_client``: a client is returned as is; a ``vf.ClientConfig`` becomes
    the client its ``client_type`` names (the types this verifiers cannot serve raise a
    ``ConfigError`` saying so)."""
    from verifiers.classic import clients
    from verifiers.classic.models import ClientConfig
    from verifiers.clients.base import Client
    from verifiers.errors import ConfigError

    if isinstance(client_or_config, Client):
        return client_or_config
    if not isinstance(client_or_config, ClientConfig):
        raise ConfigError(
            f"resolve_client takes a client or a vf.ClientConfig, not "
            f"{type(client_or_config).__name__}"
        )
    name = _CLASSIC_CLIENT_TYPES.get(client_or_config.client_type)
    if name is None:
        raise ConfigError(
            f"client_type {client_or_config.client_type!r} is not available here; use one of "
            f"{sorted(_CLASSIC_CLIENT_TYPES)}"
        )
    return getattr(clients, name)(client_or_config)


def _classic_client_class(name: str) -> Any:
    if name == "RendererClient":  # 0.3.x serves it lazily from this package
        from verifiers.classic.clients import RendererClient

        return RendererClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__, _classic_client_class)
