"""``vf env ...`` (owned by the hub work: init, build, push, install, info, list, search, yank)."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True)
