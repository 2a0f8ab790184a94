"""``load_toml`` (0.3.x's ``verifiers.utils.import_utils``)."""

from __future__ import annotations

import tomllib
from typing import IO, Any

__all__ = ["load_toml"]


def load_toml(file_obj: IO[bytes]) -> dict[str, Any]:
    """The TOML document read from a binary file object (``open(path, "rb")``)."""
    return tomllib.load(file_obj)


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
