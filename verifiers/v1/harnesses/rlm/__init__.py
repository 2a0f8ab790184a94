"""The ``rlm`` harness (nano-rlm over ACP)."""

from verifiers.v1.harnesses.rlm.harness import RLMHarness, RLMHarnessConfig

__all__ = ["RLMHarness", "RLMHarnessConfig"]
