"""``EnvClient``: the base of env clients (classic ``verifiers.serve.client.env_client``).

A subclass implements the transport: :meth:`EnvClient.handle_health_request`,
:meth:`~EnvClient.handle_run_rollout_request`, :meth:`~EnvClient.handle_run_group_request`
(each takes a request model of :mod:`verifiers.serve.types` and returns the response model),
:meth:`~EnvClient.wait_for_server_startup` and :meth:`~EnvClient.close`. The base turns
``run_rollout``/``run_group``/``health`` calls into those requests, so an environment given
any such client (``env.run_group(..., env_client=client)``) runs its rollouts through it.
:class:`~verifiers.serve.ZMQEnvClient` is the one that talks to an env server.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from verifiers.serve.protocol import EnvServerError

if TYPE_CHECKING:
    from verifiers.classic.types import RolloutOutput
    from verifiers.serve.types import (
        HealthRequest,
        HealthResponse,
        RunGroupRequest,
        RunGroupResponse,
        RunRolloutRequest,
        RunRolloutResponse,
    )

__all__ = ["EnvClient", "wire_input"]


def wire_input(row: Mapping[str, Any]) -> dict[str, Any]:
    """A rollout input as sent: the default ``task`` name is left out (a missing task means
    the same here, and classic 0.3.x servers take a ``task`` value for a task payload)."""
    out = dict(row)
    if out.get("task") == "default":
        del out["task"]
    return out


class EnvClient(ABC):
    """Base class of env clients (see the module docstring).

    Args:
        address: where the server is (``tcp://host:port``, ``ipc://path``).
        name: shown in logs and errors (with the address).
        health_check_interval: seconds between health checks.
        startup_timeout: default wait of :meth:`wait_for_server_startup`.
        recovery_timeout: how long a request may wait for a server that became unhealthy.
    """

    def __init__(
        self,
        address: str,
        name: str | None = None,
        health_check_interval: float = 1.0,
        startup_timeout: float = 600.0,
        recovery_timeout: float = 600.0,
    ) -> None:
        self.logger = logging.getLogger(f"{__name__}.{type(self).__name__}")
        self.address = address
        self.name = f"{name} ({address})" if name is not None else address
        self.health_check_interval = health_check_interval
        self.startup_timeout = startup_timeout
        self.recovery_timeout = recovery_timeout

    async def health(self, timeout: float | None = 1) -> bool:  # noqa: ASYNC109
        """True when the server answers healthy (within ``timeout`` seconds)."""
        from verifiers.serve.types import HealthRequest

        response = await self.handle_health_request(HealthRequest(), timeout=timeout)
        return response.success

    async def run_rollout(
        self,
        input: Mapping[str, Any],
        client_config: Any,
        model: str,
        sampling_args: Mapping[str, Any] | None = None,
        max_retries: int = 0,
        state_columns: list[str] | None = None,
    ) -> RolloutOutput:
        """Run one rollout in the server; its output."""
        from verifiers.classic.types import RolloutOutput

        request = self._request_map(
            "run_rollout", client_config, model, sampling_args, max_retries, state_columns
        )
        request["input"] = wire_input(input)
        response = await self.send_request_map(request)
        if response.get("output") is None:
            raise EnvServerError(f"env server {self.name} answered a rollout without its output")
        return RolloutOutput(response["output"])

    async def run_group(
        self,
        group_inputs: Sequence[Mapping[str, Any]],
        client_config: Any,
        model: str,
        sampling_args: Mapping[str, Any] | None = None,
        max_retries: int = 0,
        state_columns: list[str] | None = None,
    ) -> list[RolloutOutput]:
        """Run a group of rollouts (one per input) in the server, scored together."""
        from verifiers.classic.types import RolloutOutput

        request = self._request_map(
            "run_group", client_config, model, sampling_args, max_retries, state_columns
        )
        request["group_inputs"] = [wire_input(i) for i in group_inputs]
        response = await self.send_request_map(request)
        if response.get("outputs") is None:
            raise EnvServerError(f"env server {self.name} answered a group without its outputs")
        return [RolloutOutput(o) for o in response["outputs"]]

    def _request_map(
        self,
        kind: str,
        client_config: Any,
        model: str,
        sampling_args: Mapping[str, Any] | None,
        max_retries: int,
        state_columns: list[str] | None,
    ) -> dict[str, Any]:
        return {
            "request_type": kind,
            "client_config": self.wire_client_config(client_config),
            "model": model,
            "sampling_args": dict(sampling_args or {}),
            "max_retries": int(max_retries),
            "state_columns": list(state_columns) if state_columns is not None else None,
        }

    def wire_client_config(self, config: Any) -> dict[str, Any]:
        """A ClientConfig as the map the wire carries (resolved)."""
        from verifiers.utils.client_utils import resolve_client_config

        data: dict[str, Any] = resolve_client_config(config).model_dump(mode="json")
        return data

    async def send_request_map(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run a request map (:mod:`verifiers.serve.protocol`); the response map. This base
        goes through the request models and ``handle_*_request``; a transport may send the
        map as it is."""
        from verifiers.serve.types import RunGroupRequest, RunRolloutRequest

        if request["request_type"] == "run_rollout":
            one = await self.handle_run_rollout_request(
                RunRolloutRequest.model_validate(request), timeout=None
            )
            return {"output": one.output}
        group = await self.handle_run_group_request(
            RunGroupRequest.model_validate(request), timeout=None
        )
        return {"outputs": group.outputs}

    @abstractmethod
    async def wait_for_server_startup(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Wait until the server answers health checks (``timeout``: default
        ``startup_timeout``)."""

    @abstractmethod
    async def handle_health_request(
        self,
        request: HealthRequest,
        timeout: float | None,  # noqa: ASYNC109
    ) -> HealthResponse:
        """Answer a health request (from the server, or from what the client knows)."""

    @abstractmethod
    async def handle_run_rollout_request(
        self,
        request: RunRolloutRequest,
        timeout: float | None,  # noqa: ASYNC109
    ) -> RunRolloutResponse:
        """Run a rollout request in the server."""

    @abstractmethod
    async def handle_run_group_request(
        self,
        request: RunGroupRequest,
        timeout: float | None,  # noqa: ASYNC109
    ) -> RunGroupResponse:
        """Run a group request in the server."""

    @abstractmethod
    async def close(self) -> None:
        """Close the client (requests in flight are cancelled)."""


# names 0.3.x's version of this module imports, served on first use (verifiers.classic.forward)
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
