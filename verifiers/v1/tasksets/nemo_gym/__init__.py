"""NeMo Gym resource servers as a v1 taskset: each JSONL row (``responses_create_params`` plus
verifier metadata) is a task; a rollout opens a session on the resource server
(``/seed_session``), its tools reach the model through a shared toolset (the server's MCP
endpoint, or its plain HTTP tools), and ``/verify`` scores the finished conversation, sent as a
Responses-API object."""

from verifiers.v1.tasksets.nemo_gym.taskset import (
    NeMoGymConfig,
    NeMoGymData,
    NeMoGymEnv,
    NeMoGymTask,
    NeMoGymTaskConfig,
    NeMoGymTaskset,
)

__all__ = [
    "NeMoGymConfig",
    "NeMoGymData",
    "NeMoGymEnv",
    "NeMoGymTask",
    "NeMoGymTaskConfig",
    "NeMoGymTaskset",
]
