"""Required environment variables (the classic ``vf.ensure_keys``)."""

from __future__ import annotations

import os

from verifiers.errors import ConfigError

__all__ = ["MissingKeyError", "ensure_keys"]


class MissingKeyError(ConfigError):
    """Required environment variables are not set; ``keys`` lists every missing one."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = list(keys)
        super().__init__(
            f"missing required environment variable(s): {', '.join(self.keys)}; export them in "
            "the shell that runs the evaluation (e.g. `export OPENAI_API_KEY=...`)"
        )


def ensure_keys(keys: list[str]) -> None:
    """Raise :class:`MissingKeyError` naming every variable of ``keys`` that is unset or empty."""
    missing = [k for k in keys if not os.environ.get(k)]
    if missing:
        raise MissingKeyError(missing)


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
