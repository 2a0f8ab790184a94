"""``vf login|logout|whoami`` and ``vf token ...``."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the auth commands to the root app."""
