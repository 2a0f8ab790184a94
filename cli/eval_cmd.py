"""``vf eval`` / ``vf-eval``."""

from __future__ import annotations

HELP = "Evaluate an environment against a model."


def eval_command() -> None:
    raise SystemExit("vf eval: not built yet")
