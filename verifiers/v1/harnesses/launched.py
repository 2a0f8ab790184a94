"""Harnesses written to 0.4.0's program API (``setup(runtime)`` and ``launch(ctx, trace,
runtime, endpoint, secret, mcp_urls, data)``, as upstream's ``compact`` example) run as program
harnesses (:mod:`verifiers.v1.harnesses.program`): :func:`launched` gives the program harness
that runs one."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from verifiers.v1.harnesses.program import _TAIL, ProgramHarness, ProgramHarnessConfig

if TYPE_CHECKING:
    from verifiers.sandbox.base import SandboxProcess
    from verifiers.v1.agent import Agent
    from verifiers.v1.harness import Harness
    from verifiers.v1.runtimes import Runtime
    from verifiers.v1.task import Task
    from verifiers.v1.trace import Trace

__all__ = ["launched"]


class _Launched(ProgramHarness):
    """A harness written to 0.4.0's program API (``setup(runtime)`` and ``launch(...)``) run as
    a program harness: a fresh runtime per segment (a :class:`TaskRuntime`, with uv scripts
    and ``run_program``), the harness's ``launch`` as the program, its model calls answered
    over the rollout's channel like any program's."""

    inner: Harness[Any]

    def __init__(self, inner: Harness[Any]) -> None:
        own = inner.config
        fields: dict[str, Any] = {"id": own.id, "env": own.env, "forward_env": own.forward_env}
        for name in ("runtime", "timeout"):
            value = getattr(own, name, None)
            if value is not None:
                fields[name] = value
        super().__init__(ProgramHarnessConfig.model_validate(fields))
        self.inner = inner

    def command(
        self, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError("a launched harness runs its own launch()")

    async def prepare(
        self, runtime: Runtime, task: Task[Any, Any, Any], trace: Trace, agent: Agent
    ) -> None:
        from verifiers.v1.task_runtime import TaskRuntime

        if isinstance(runtime, TaskRuntime):
            runtime.program_timeout = self.config.timeout
        await self.inner.setup(runtime)

    async def _start_program(
        self,
        runtime: Runtime,
        task: Task[Any, Any, Any],
        trace: Trace,
        agent: Agent,
        channel_env: dict[str, str],
        tail: bytearray,
        procs: list[SandboxProcess],
    ) -> asyncio.Task[int]:
        from verifiers.v1.clients import ModelContext
        from verifiers.v1.configs.client import EvalClientConfig

        client = agent.config.client if agent.config.client is not None else EvalClientConfig()
        ctx = ModelContext(model=agent.model, client=client, sampling=agent.sampling)
        extra: dict[str, Any] = {}
        if "VF_TOOL_INTERCEPTION_URL" in channel_env:
            extra["tool_interception_url"] = channel_env["VF_TOOL_INTERCEPTION_URL"]
        endpoint, secret = channel_env["OPENAI_BASE_URL"], channel_env["OPENAI_API_KEY"]

        async def program() -> int:
            result = await self.inner.launch(
                ctx, trace, runtime, endpoint, secret, {}, task.data, **extra
            )
            tail.extend((result.stderr or result.stdout).encode("utf-8", "replace")[-_TAIL:])
            return result.exit_code

        return asyncio.ensure_future(program())


def launched(harness: Harness[Any]) -> ProgramHarness:
    """The program harness that runs ``harness`` (one that defines ``launch``), kept on it."""
    adapter = harness.__dict__.get("_vf_launched")
    if adapter is None:
        cls = type(
            f"Launched{type(harness).__name__}",
            (_Launched,),
            {"SUPPORTS_TOOL_INTERCEPTION": harness.SUPPORTS_TOOL_INTERCEPTION},
        )
        adapter = harness.__dict__["_vf_launched"] = cls(harness)
    assert isinstance(adapter, ProgramHarness)
    return adapter
