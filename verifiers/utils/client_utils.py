"""Model clients from a classic :class:`~verifiers.ClientConfig` (the trainer's description of
an inference endpoint).

- :func:`resolve_client_config`: the concrete endpoint of a config (``endpoint_configs``
  picked by ``client_idx``, the parent's fields filling what the endpoint leaves unset).
- :func:`setup_openai_client`, :func:`setup_anthropic_client`: an ``openai.AsyncOpenAI`` /
  ``anthropic.AsyncAnthropic`` for a config (classic helpers that trainers use for their own
  calls).
- :func:`post_chat_completion_with_routed_experts_sidecar`: a chat completion through an
  ``AsyncOpenAI``, with vLLM's routed-experts data kept out of JSON parsing.
- :func:`client_from_config`: the project's lean :class:`~verifiers.NativeClient` for a config;
  rollouts run with it.
- :class:`ClientCache`: one client per resolved config (so one per ``client_idx`` of a
  trainer's pool), created on first use and reused for every later rollout.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from verifiers.errors import ConfigError

if TYPE_CHECKING:
    import httpx
    from anthropic import AsyncAnthropic
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

    from verifiers.classic.models import ClientConfig
    from verifiers.clients.base import Client

__all__ = [
    "ClientCache",
    "client_from_config",
    "load_prime_config",
    "post_chat_completion_with_routed_experts_sidecar",
    "resolve_client_config",
    "resolve_client_configs",
    "setup_anthropic_client",
    "setup_openai_client",
]

logger = logging.getLogger(__name__)

#: client types whose endpoint speaks the OpenAI chat or completions wire format
SUPPORTED_CLIENT_TYPES = frozenset(
    {"openai_chat_completions", "openai_chat_completions_token", "openai_completions"}
)


def _as_config(config: Any) -> ClientConfig:
    from verifiers.classic.models import ClientConfig

    if isinstance(config, ClientConfig):
        return config
    if isinstance(config, dict):
        return ClientConfig.model_validate(config)
    raise ConfigError(f"expected a verifiers.ClientConfig, got {type(config).__name__}")


def resolve_client_config(config: ClientConfig | dict[str, Any]) -> ClientConfig:
    """The endpoint a config names: without ``endpoint_configs`` a copy of the config itself,
    else endpoint ``client_idx % len(endpoint_configs)`` with the parent's fields filling the
    ones the endpoint does not set."""

    cfg = _as_config(config)
    if not cfg.endpoint_configs:
        return cfg.model_copy(deep=True)
    endpoint = cfg.endpoint_configs[cfg.client_idx % len(cfg.endpoint_configs)]
    return _merge(cfg, endpoint)


def resolve_client_configs(config: ClientConfig | dict[str, Any]) -> list[ClientConfig]:
    """Every endpoint of a config, each resolved as :func:`resolve_client_config` does."""
    cfg = _as_config(config)
    if not cfg.endpoint_configs:
        return [resolve_client_config(cfg)]
    return [_merge(cfg, e) for e in cfg.endpoint_configs]


def _merge(parent: ClientConfig, endpoint: Any) -> ClientConfig:
    from verifiers.classic.models import ClientConfig

    data = parent.model_dump(mode="python")
    data["endpoint_configs"] = []
    data.update(endpoint.model_dump(mode="python", exclude_unset=True))
    return ClientConfig.model_validate(data)


def load_prime_config() -> dict[str, Any]:
    """``~/.prime/config.json`` as a dict (empty when absent or unreadable)."""
    path = Path.home() / ".prime" / "config.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _headers_and_key(config: ClientConfig) -> tuple[dict[str, str], str | None]:
    headers = {str(k): str(v) for k, v in (config.extra_headers or {}).items()}
    api_key = os.getenv(config.api_key_var) or None
    if config.api_key_var == "PRIME_API_KEY":
        prime = load_prime_config()
        api_key = api_key or prime.get("api_key") or None
        team = os.getenv("PRIME_TEAM_ID") or prime.get("team_id")
        if team:
            headers["X-Prime-Team-ID"] = str(team)
    return headers, api_key


def _http_client(cfg: ClientConfig, headers: dict[str, str]) -> httpx.AsyncClient:
    """The HTTP client of a vendor SDK client: the config's connection limits and timeouts,
    its headers on every request."""
    import httpx

    limits = httpx.Limits(
        max_connections=int(getattr(cfg, "max_connections", 28000)),
        max_keepalive_connections=int(getattr(cfg, "max_keepalive_connections", 28000)),
    )
    timeout = httpx.Timeout(cfg.timeout, connect=float(getattr(cfg, "connect_timeout", 5.0)))
    return httpx.AsyncClient(limits=limits, timeout=timeout, headers=headers)


def setup_openai_client(config: ClientConfig | dict[str, Any]) -> AsyncOpenAI:
    """An ``openai.AsyncOpenAI`` for the endpoint a config names (API key from the
    ``api_key_var`` environment variable, ``"EMPTY"`` when unset)."""
    from openai import AsyncOpenAI

    cfg = resolve_client_config(config)
    headers, api_key = _headers_and_key(cfg)
    return AsyncOpenAI(
        api_key=api_key or "EMPTY",
        base_url=cfg.api_base_url,
        max_retries=cfg.max_retries,
        http_client=cast(Any, _http_client(cfg, headers)),
    )


def setup_anthropic_client(config: ClientConfig | dict[str, Any]) -> AsyncAnthropic:
    """An ``anthropic.AsyncAnthropic`` for a config's endpoint: its key (the variable
    ``api_key_var``; ``"EMPTY"`` when unset, so a missing key fails as the API's
    authentication error), headers, ``max_retries`` and ``timeout``. The config's default
    ``api_base_url`` (OpenAI's) means Anthropic's own endpoint. Needs the ``anthropic``
    package."""
    try:
        import anthropic
    except ImportError as e:
        raise ConfigError(
            "an Anthropic client needs the `anthropic` package: pip install 'verifiers[anthropic]'"
        ) from e
    cfg = resolve_client_config(config)
    headers, api_key = _headers_and_key(cfg)
    base_url = None if cfg.api_base_url == "https://api.openai.com/v1" else cfg.api_base_url
    # a number, not an httpx.Timeout: anthropic 2.x is built on httpx2 and refuses httpx's
    return anthropic.AsyncAnthropic(
        api_key=api_key or "EMPTY",
        base_url=base_url,
        max_retries=cfg.max_retries,
        timeout=float(cfg.timeout),
        default_headers=headers or None,
    )


async def post_chat_completion_with_routed_experts_sidecar(
    client: AsyncOpenAI,
    path: str,
    *,
    body: dict[str, Any],
    extra_headers: Mapping[str, str] | None = None,
) -> ChatCompletion:
    """POST ``body`` to ``path`` through ``client`` and parse the answer as a chat completion.

    vLLM can return each choice's routed experts as a large base64 string
    (``choices[0].routed_experts.data``); it is cut out of the raw body before the JSON is
    parsed and put back, as a ``memoryview`` of the body, in
    ``completion.choices[0].model_extra["routed_experts"]["data"]``.
    """
    import httpx
    from openai.types.chat import ChatCompletion

    from verifiers.utils.response_utils import strip_routed_experts_data

    raw = await client.post(
        path,
        body=body,
        cast_to=httpx.Response,
        options={"headers": dict(extra_headers)} if extra_headers else {},
    )
    content, routed = strip_routed_experts_data(raw.content)
    completion = ChatCompletion.model_validate_json(content)
    if routed is not None:
        extra = completion.choices[0].model_extra if completion.choices else None
        sidecar = (extra or {}).get("routed_experts")
        if not isinstance(sidecar, dict):
            raise ValueError(
                f"the answer of {path} carries routed-experts data outside "
                "choices[0].routed_experts; the endpoint's response format is not supported"
            )
        sidecar["data"] = routed
    return completion


def client_from_config(config: ClientConfig | dict[str, Any]) -> Client:
    """The :class:`~verifiers.NativeClient` rollouts use for a config's endpoint.

    ``max_retries`` bounds the client's retries of transient failures (429, 5xx, resets,
    timeouts); ``extra_headers`` go with every request; ``extra_headers_from_state`` names
    headers whose values the environment reads from each rollout's state.
    """
    from verifiers.clients.native import NativeClient
    from verifiers.clients.retry import RetryPolicy

    cfg = resolve_client_config(config)
    client_type = cfg.client_type
    if client_type not in SUPPORTED_CLIENT_TYPES:
        raise ConfigError(
            f"ClientConfig.client_type {client_type!r} is not supported by this verifiers; "
            f"use one of {sorted(SUPPORTED_CLIENT_TYPES)} (OpenAI-compatible endpoints such "
            "as vLLM)"
        )
    headers, api_key = _headers_and_key(cfg)
    client = NativeClient(
        cfg.api_base_url,
        api_key=api_key,
        timeout=float(cfg.timeout),
        retry=RetryPolicy(max_retries=max(int(cfg.max_retries), 0)),
        max_connections=int(getattr(cfg, "max_connections", 1024)),
        headers=headers,
    )
    client.headers_from_state = dict(getattr(cfg, "extra_headers_from_state", None) or {})
    client.return_token_ids = client_type == "openai_chat_completions_token"
    return client


class ClientCache:
    """One client per resolved :class:`~verifiers.ClientConfig`, created on first use."""

    def __init__(self) -> None:
        self._clients: dict[str, Client] = {}

    def get(self, config: ClientConfig | dict[str, Any]) -> Client:
        cfg = resolve_client_config(config)
        key = cfg.model_dump_json()
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = client_from_config(cfg)
        return client

    def __len__(self) -> int:
        return len(self._clients)

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            try:
                await c.close()
            except Exception:  # closing is best effort
                logger.debug("closing a model client failed", exc_info=True)


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
