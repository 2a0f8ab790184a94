"""The ``codex`` harness (:mod:`verifiers.v1.harnesses.codex.harness`)."""

from verifiers.v1.harnesses.codex.harness import CodexHarness, CodexHarnessConfig

__all__ = ["CodexHarness", "CodexHarnessConfig"]
