"""Serving v1 envs to trainers: ``serve_env`` hosts an env (a pool of worker processes or one),
``EnvClient`` runs episodes on it from the trainer's side.

The wire: ZeroMQ, the server binds ROUTER, each client connects a DEALER and sends
``[request_id, method, payload]`` (``health``, ``run``, ``cancel``; payload a msgpack map,
:mod:`verifiers.v1.serve.types`). The server answers ``[request_id, b"reply", data]`` once per
request; a run's traces stream before that as ``[request_id, b"delta", data]`` frames
(:mod:`verifiers.v1.serve.delta`), so the reply carries only the episode head and sizes. A
client of verifiers a60a606 (prime-rl 559b447) reads ``[request_id, data]`` replies with the
whole episode instead; the server answers each client in its own protocol
(:mod:`verifiers.v1.serve.wire`). The trainer owns the taskset: each run ships its task's
data, and the server runs it statelessly.
"""

from verifiers.v1.serve.client import EnvClient, EnvServerError
from verifiers.v1.serve.delta import EpisodeAssembly
from verifiers.v1.serve.pool import EnvServerPool, env_config_data, serve_env
from verifiers.v1.serve.server import EnvServer, build_env
from verifiers.v1.serve.types import (
    CancelRequest,
    CancelResponse,
    HealthRequest,
    HealthResponse,
    RunRequest,
    RunResponse,
)

__all__ = [
    "CancelRequest",
    "CancelResponse",
    "EnvClient",
    "EnvServer",
    "EnvServerError",
    "EnvServerPool",
    "EpisodeAssembly",
    "HealthRequest",
    "HealthResponse",
    "RunRequest",
    "RunResponse",
    "build_env",
    "env_config_data",
    "serve_env",
]
