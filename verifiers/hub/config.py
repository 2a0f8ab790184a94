"""Where the hub is and who we are on it: the config file
(``$XDG_CONFIG_HOME/verifiers/config.toml``, mode 0600) with a ``[hub]`` table holding ``url``
and ``token``; ``VF_HUB_URL`` and ``VF_HUB_TOKEN`` override what is stored.

``vf login`` writes this file; :class:`~verifiers.hub.client.HubClient` reads it, so a training
script sees the same hub as the command line.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers.errors import HubClientError

__all__ = [
    "DEFAULT_HUB_URL",
    "HubSettings",
    "config_path",
    "dump_toml",
    "forget_token",
    "load_config",
    "save_config",
    "save_login",
]

DEFAULT_HUB_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "verifiers" / "config.toml"


def load_config() -> dict[str, Any]:
    """The whole config file as a dict (empty when there is none)."""
    path = config_path()
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as e:
        raise HubClientError(f"cannot read {path}: {e}", hint=f"fix or delete {path}") from None


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to the config file")


def dump_toml(data: dict[str, Any]) -> str:
    """TOML for a config of top-level values and one level of tables."""
    top = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    out = ["\n".join(top)] if top else []
    for section, values in data.items():
        if isinstance(values, dict):
            lines = [f"[{section}]"] + [
                f"{k} = {_toml_value(v)}" for k, v in values.items() if not isinstance(v, dict)
            ]
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def save_config(data: dict[str, Any]) -> Path:
    """Write the config with mode 0600 (it holds a token), atomically."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(dump_toml(data))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def _hub_table(config: dict[str, Any]) -> dict[str, Any]:
    hub = config.get("hub", {})
    if not isinstance(hub, dict):
        raise HubClientError(
            f"{config_path()}: [hub] must be a table", hint="log in again with `vf login`"
        )
    return hub


def save_login(url: str, token: str) -> Path:
    """Store ``url`` and ``token`` as the default hub, keeping the rest of the file."""
    config = load_config()
    config["hub"] = {**_hub_table(config), "url": url.rstrip("/"), "token": token}
    return save_config(config)


def forget_token() -> bool:
    """Remove the stored token; False when there was none."""
    config = load_config()
    hub = _hub_table(config)
    if "token" not in hub:
        return False
    hub.pop("token")
    config["hub"] = hub
    save_config(config)
    return True


@dataclass(frozen=True)
class HubSettings:
    """A hub's base URL (no trailing slash) and the API token to use there, if any."""

    url: str
    token: str | None = None

    def __post_init__(self) -> None:
        url = self.url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise HubClientError(
                f"hub URL {self.url!r} must start with http:// or https://",
                hint=f"for example: {DEFAULT_HUB_URL}",
            )
        object.__setattr__(self, "url", url)

    @classmethod
    def load(cls) -> HubSettings:
        """The configured hub: ``VF_HUB_URL``/``VF_HUB_TOKEN``, else the config file, else
        :data:`DEFAULT_HUB_URL` without a token."""
        hub = _hub_table(load_config())
        from_env = bool(os.environ.get("VF_HUB_URL"))
        url = str(os.environ.get("VF_HUB_URL") or hub.get("url") or DEFAULT_HUB_URL).strip()
        if not url.startswith(("http://", "https://")):
            source = "VF_HUB_URL" if from_env else str(config_path())
            raise HubClientError(
                f"hub URL {url!r} (from {source}) must start with http:// or https://",
                hint=f"for example: {DEFAULT_HUB_URL}",
            )
        token = os.environ.get("VF_HUB_TOKEN") or hub.get("token") or None
        return cls(url=url, token=str(token) if token else None)
