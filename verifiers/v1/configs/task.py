"""The per-task configs (defined with the other base configs in :mod:`verifiers.v1.configs`)."""

from verifiers.v1.configs import DecoratedFunctionConfig, RewardFunctionConfig, TaskConfig

__all__ = ["DecoratedFunctionConfig", "RewardFunctionConfig", "TaskConfig"]
