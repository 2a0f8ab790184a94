"""The ``claude_code`` harness (:mod:`verifiers.v1.harnesses.claude_code.harness`)."""

from verifiers.v1.harnesses.claude_code.harness import ClaudeCodeHarness, ClaudeCodeHarnessConfig

__all__ = ["ClaudeCodeHarness", "ClaudeCodeHarnessConfig"]
