"""The endpoints registry: model aliases mapped to endpoints, with replicas used round-robin.

``endpoints.toml`` may use either shape (both may not be mixed in one file)::

    # one table per alias
    [qwen3-8b]
    model = "Qwen/Qwen3-8B"
    base_url = ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]   # or one string
    api_key_var = "VLLM_API_KEY"                                          # optional

    # the classic array of tables: entries with the same endpoint_id are replicas
    [[endpoint]]
    endpoint_id = "gpt-4.1-mini"
    model = "gpt-4.1-mini"
    url = "https://api.openai.com/v1"
    key = "OPENAI_API_KEY"

The classic ``endpoints.py`` (a module defining ``ENDPOINTS = {alias: {"model", "url", "key"}}``)
is read too.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.clients.interface import Client
from verifiers.clients.retry import RetryPolicy
from verifiers.errors import ConfigError

__all__ = ["EndpointConfig", "EndpointPool", "load_endpoints"]

_URL_KEYS = ("base_url", "base_urls", "url", "api_base_url")
_KEY_KEYS = ("api_key_var", "key")
_HEADER_KEYS = ("headers", "extra_headers")
_TYPE_KEYS = ("type", "api_client_type")
_CLIENT_TYPES = ("openai_chat_completions", "openai_completions")
_KNOWN = {"endpoint_id", "model", *_URL_KEYS, *_KEY_KEYS, *_HEADER_KEYS, *_TYPE_KEYS}


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    """One alias of the registry.

    ``base_urls`` holds one URL per replica; ``api_key_var`` names the environment variable
    holding the key (``None``: no key is sent).
    """

    model: str
    base_urls: list[str]
    api_key_var: str | None = None
    alias: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.base_urls:
            raise ConfigError(f"endpoint {self.alias or self.model!r} has no base URL")

    @property
    def base_url(self) -> str:
        """The first replica's URL (the classic single-URL field)."""
        return self.base_urls[0]

    def api_key(self) -> str | None:
        """The key from ``$api_key_var``, or ``None`` when unset."""
        return os.environ.get(self.api_key_var) if self.api_key_var else None

    def pool(
        self,
        *,
        timeout: float = 600.0,
        retry: RetryPolicy | None = None,
        client_type: str = "native",
    ) -> EndpointPool:
        """One client per replica (``"native"``: :class:`NativeClient`; ``"openai"``:
        :class:`OpenAIClient` over ``openai.AsyncOpenAI``), used round-robin. An
        ``api_key_var`` that is not set is an error, not a request without a key."""
        key = self.api_key()
        if self.api_key_var and key is None:
            raise ConfigError(
                f"endpoint {self.alias or self.model!r} takes its API key from "
                f"${self.api_key_var}, which is not set: export {self.api_key_var}=..., or "
                "leave api_key_var out if the server needs no key"
            )
        clients: list[Client] = []
        for url in self.base_urls:
            if client_type == "native":
                from verifiers.clients.native import NativeClient

                clients.append(
                    NativeClient(url, key, timeout=timeout, retry=retry, headers=self.headers)
                )
            elif client_type == "openai":
                import openai

                from verifiers.clients.openai_client import OpenAIClient

                oc = openai.AsyncOpenAI(
                    base_url=url,
                    api_key=key or "EMPTY",
                    timeout=timeout,
                    default_headers=self.headers or None,
                )
                clients.append(OpenAIClient(oc, retry=retry, owns_client=True))
            else:
                raise ConfigError(f"client_type must be 'native' or 'openai', not {client_type!r}")
        return EndpointPool(clients)


class EndpointPool:
    """Replica clients handed out round-robin, one per group of rollouts (so that a group's
    prompts hit one server's prefix cache). Pass it as ``client`` to ``vf.evaluate``."""

    def __init__(self, clients: list[Client]) -> None:
        if not clients:
            raise ConfigError("an endpoint pool needs at least one client")
        self.clients = clients
        self._next = 0

    def for_group(self) -> Client:
        """The client for the next group: replicas in turn."""
        client = self.clients[self._next % len(self.clients)]
        self._next += 1
        return client

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


def _fail(source: str, message: str, fix: str) -> ConfigError:
    return ConfigError(f"{source}: {message}. {fix}")


def _pick(entry: dict[str, Any], keys: tuple[str, ...], source: str) -> Any:
    present = [k for k in keys if k in entry]
    if len(present) > 1:
        raise _fail(source, f"both {present[0]!r} and {present[1]!r} are set", "Keep one of them")
    return entry[present[0]] if present else None


def _entry(alias: str, entry: Any, source: str) -> EndpointConfig:
    if not isinstance(entry, dict):
        raise _fail(source, "an endpoint must be a table", 'Write model = "..." and base_url = ...')
    unknown = sorted(set(entry) - _KNOWN)
    if unknown:
        raise _fail(
            source,
            f"unknown key(s) {unknown}",
            "Known keys: model, base_url (string or list), api_key_var, headers",
        )
    model = entry.get("model")
    if not isinstance(model, str) or not model:
        raise _fail(source, "'model' is missing or not a string", 'Add model = "<served name>"')
    urls = _pick(entry, _URL_KEYS, source)
    if isinstance(urls, str):
        urls = [urls]
    if (
        not isinstance(urls, list)
        or not urls
        or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in urls)
    ):
        raise _fail(
            source,
            "'base_url' is missing or not an http(s) URL (or a list of them)",
            'Add base_url = "http://host:port/v1"',
        )
    key_var = _pick(entry, _KEY_KEYS, source)
    if key_var is not None and (not isinstance(key_var, str) or not key_var):
        raise _fail(
            source,
            "'api_key_var' must be the name of an environment variable",
            'Write api_key_var = "OPENAI_API_KEY"',
        )
    headers = _pick(entry, _HEADER_KEYS, source) or {}
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise _fail(source, "'headers' must map strings to strings", 'Write headers = {X = "y"}')
    client_type = _pick(entry, _TYPE_KEYS, source)
    if client_type is not None and client_type not in _CLIENT_TYPES:
        raise _fail(
            source,
            f"client type {client_type!r} is not supported",
            f"Use one of {list(_CLIENT_TYPES)} or drop the key",
        )
    return EndpointConfig(model, list(urls), key_var, alias, dict(headers))


def _from_mapping(data: dict[str, Any], path: Path) -> dict[str, EndpointConfig]:
    out: dict[str, EndpointConfig] = {}
    if "endpoint" in data:
        extra = sorted(k for k in data if k != "endpoint")
        if extra:
            raise _fail(
                str(path),
                f"[[endpoint]] entries are mixed with alias tables {extra}",
                "Use one shape per file",
            )
        entries = data["endpoint"]
        if not isinstance(entries, list):
            raise _fail(str(path), "'endpoint' must be an array of tables", "Write [[endpoint]]")
        for i, raw in enumerate(entries):
            source = f"{path} ([[endpoint]] #{i + 1})"
            alias = raw.get("endpoint_id") if isinstance(raw, dict) else None
            if not isinstance(alias, str) or not alias:
                raise _fail(source, "'endpoint_id' is missing", 'Add endpoint_id = "<alias>"')
            cfg = _entry(alias, raw, f"{source} endpoint_id={alias!r}")
            prev = out.get(alias)
            if prev is None:
                out[alias] = cfg
            elif prev.model != cfg.model or prev.api_key_var != cfg.api_key_var:
                raise _fail(
                    source,
                    f"replicas of {alias!r} disagree on model or key variable",
                    "Give every replica of an alias the same model and key",
                )
            else:
                prev.base_urls.extend(cfg.base_urls)
        return out
    for alias, raw in data.items():
        if "endpoint_id" in (raw if isinstance(raw, dict) else {}):
            raise _fail(
                f"{path} [{alias}]",
                "'endpoint_id' belongs to the [[endpoint]] shape",
                "Drop it: the table name is the alias",
            )
        out[alias] = _entry(alias, raw, f"{path} [{alias}]")
    return out


def load_endpoints(path: str | os.PathLike[str]) -> dict[str, EndpointConfig]:
    """Read an ``endpoints.toml`` (or classic ``endpoints.py``) registry: alias -> config.

    ``path`` may be the file or a directory holding one. Raises :class:`ConfigError` naming the
    file, the entry and the fix.
    """
    p = Path(path)
    if p.is_dir():
        for name in ("endpoints.toml", "endpoints.py"):
            if (p / name).is_file():
                p = p / name
                break
        else:
            raise ConfigError(
                f"{p}: no endpoints.toml in this directory. Create one or pass a file"
            )
    if not p.is_file():
        raise ConfigError(f"{p}: the endpoints file does not exist. Check the path")
    if p.suffix == ".toml":
        try:
            data: Any = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{p}: not valid TOML: {e}. Fix the syntax") from None
    elif p.suffix == ".py":
        import runpy

        try:
            namespace = runpy.run_path(str(p))
        except Exception as e:
            raise ConfigError(f"{p}: the module raised {type(e).__name__}: {e}") from None
        data = namespace.get("ENDPOINTS")
        if not isinstance(data, dict):
            raise ConfigError(
                f"{p}: defines no ENDPOINTS dict. Write ENDPOINTS = "
                '{"alias": {"model": ..., "url": ..., "key": ...}} or use endpoints.toml'
            )
    else:
        raise ConfigError(f"{p}: endpoints registries are .toml files (or a classic .py)")
    return _from_mapping(data, p)
