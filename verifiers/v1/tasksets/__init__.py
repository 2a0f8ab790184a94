"""Tasksets built on other projects' task servers: NeMo Gym's resource servers
(:mod:`verifiers.v1.tasksets.nemo_gym`)."""

from verifiers.v1.tasksets.nemo_gym import NeMoGymConfig, NeMoGymTaskset

__all__ = ["NeMoGymConfig", "NeMoGymTaskset"]
