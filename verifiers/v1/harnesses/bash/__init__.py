"""The ``bash`` harness (0.4.0's default): a coding-agent program with ``bash`` and ``edit``
tools, run in the seat's runtime (``bwrap`` here unless a config names another)."""

from verifiers.v1.harnesses.bash.harness import BashHarness, BashHarnessConfig

__all__ = ["BashHarness", "BashHarnessConfig"]
