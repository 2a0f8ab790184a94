"""The CLI's config file (``$XDG_CONFIG_HOME/verifiers/config.toml``, mode 0600): hub URL and
token. ``VF_HUB_URL`` and ``VF_HUB_TOKEN`` override what is stored."""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli._common import CLIError

DEFAULT_HUB_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "verifiers" / "config.toml"


def load_config() -> dict[str, Any]:
    path = config_path()
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as e:
        raise CLIError(f"cannot read {path}: {e}", f"fix or delete {path}") from None


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
    """Write the config with mode 0600 (it holds a token)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(dump_toml(data))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


@dataclass(frozen=True)
class HubTarget:
    url: str
    token: str | None


def hub_target() -> HubTarget:
    hub = load_config().get("hub", {})
    if not isinstance(hub, dict):
        raise CLIError(f"{config_path()}: [hub] must be a table", "log in again with `vf login`")
    url = str(os.environ.get("VF_HUB_URL") or hub.get("url") or DEFAULT_HUB_URL).strip()
    if not url.startswith(("http://", "https://")):
        source = "VF_HUB_URL" if os.environ.get("VF_HUB_URL") else str(config_path())
        raise CLIError(
            f"hub URL {url!r} (from {source}) must start with http:// or https://",
            "for example: http://127.0.0.1:8000",
        )
    token = os.environ.get("VF_HUB_TOKEN") or hub.get("token") or None
    return HubTarget(url=url.rstrip("/"), token=str(token) if token else None)
