"""The taskset configs (defined with the other base configs in :mod:`verifiers.v1.configs`)."""

from verifiers.v1.configs import SharedTasksetConfig, TasksetConfig

__all__ = ["SharedTasksetConfig", "TasksetConfig"]
