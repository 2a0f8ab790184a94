"""``SandboxEnv``: a tool environment whose model runs shell commands in its own sandbox.

Every rollout gets a fresh sandbox (never reused). Its start is launched in ``setup_state`` and
awaited by the first tool call, so it overlaps with the first model call. The program failing
(a non-zero exit, a timeout) is shown to the model; the sandbox failing raises
:class:`verifiers.SandboxError`, which ends the rollout as errored (not scored 0). The sandbox
is stopped by a ``@vf.cleanup`` handler, also when the rollout is cancelled.

Metrics written into ``state["metrics"]``: ``sandbox_ready_wait_time`` (seconds the first
command waited for the sandbox), ``sandbox_command_execution_time`` (mean seconds per
command), ``sandbox_commands``, ``sandbox_timeouts``, ``sandbox_oom`` and
``sandbox_truncated`` (counts).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from verifiers.decorators import cleanup, teardown
from verifiers.envs.stateful_tool_env import StatefulToolEnv
from verifiers.errors import ConfigError, SandboxError
from verifiers.sandbox import ExecResult, Sandbox, SandboxLimits, SandboxPool
from verifiers.types import Messages, State

__all__ = ["SandboxEnv", "UsageRecord", "format_exec_result"]

logger = logging.getLogger(__name__)

# Options of the classic hosted-sandbox client. They configure a cloud API that local sandboxes
# do not have; they are accepted so that classic environments load unchanged.
_CLASSIC_CLIENT_OPTIONS = frozenset(
    {
        "sandbox_name",
        "cpu_cores",
        "timeout_minutes",
        "team_id",
        "advanced_configs",
        "labels",
        "max_retries",
        "base_delay",
        "backoff_factor",
        "max_backoff_seconds",
        "jitter",
        "sandbox_client_max_workers",
        "sandbox_client_max_connections",
        "sandbox_client_max_keepalive_connections",
    }
)


def format_exec_result(result: ExecResult, timeout: float) -> str:
    """The text the model sees for a command: stdout, then ``stderr:`` and its text."""
    if result.timed_out:
        return f"Error: Command timed out after {timeout:g}s"
    out = result.stdout.strip()
    err = result.stderr.strip()
    text = out
    if err:
        text = f"{text}\nstderr:\n{err}" if text else f"stderr:\n{err}"
    if result.truncated:
        text += "\n[output truncated]"
    if result.oom:
        text += "\n[the sandbox ran out of memory]"
    return text or "(no output)"


@dataclass(frozen=True)
class UsageRecord:
    """Where a sandbox tool counts its use in the rollout state (``state[key]``: a dict with
    ``ready_wait_time``, a list of call durations and counters), and the metrics it becomes."""

    key: str
    prefix: str
    durations: str
    per_call: str
    calls: str
    counters: tuple[str, ...]

    def add_metrics(self, state: State) -> None:
        """``{prefix}_ready_wait_time``, ``{prefix}_{per_call}`` (the mean duration),
        ``{prefix}_{calls}`` (their number) and ``{prefix}_{counter}`` for each counter, into
        ``state["metrics"]``; nothing when the rollout has no such record."""
        usage = state.get(self.key)
        if not isinstance(usage, dict):
            return
        times = usage.get(self.durations) or []
        metrics = state["metrics"]
        metrics[f"{self.prefix}_ready_wait_time"] = float(usage.get("ready_wait_time", 0.0))
        metrics[f"{self.prefix}_{self.per_call}"] = float(sum(times) / len(times)) if times else 0.0
        metrics[f"{self.prefix}_{self.calls}"] = float(len(times))
        for counter in self.counters:
            metrics[f"{self.prefix}_{counter}"] = float(usage.get(counter, 0))


class SandboxEnv(StatefulToolEnv):
    """Tool environment with a ``bash`` tool running in a per-rollout sandbox.

    Args:
        sandbox_backend: ``"bwrap"`` (default on Linux), ``"docker"``, ``"remote"`` or
            ``"subprocess"`` (no isolation).
        sandbox_limits: a :class:`verifiers.SandboxLimits`; ``memory_gb``,
            ``disk_size_gb`` and ``timeout_per_command_seconds`` (classic names) override it.
        network: give sandboxes network access (default off).
        environment_vars: set for every command.
        start_command: run (in the background) when a sandbox starts; the classic default
            ``tail -f /dev/null`` means nothing.
        max_live_sandboxes: sandboxes alive at once (rollouts beyond it wait).
        max_concurrent_commands: commands executing at once (default 2x cores).
        prestart: blank sandboxes kept started ahead of rollouts.
        sandbox_options: backend options (``image`` for docker, ``url``/``token`` for remote,
            ``ro_binds`` for bwrap).
        docker_image: the image for the docker backend.

    The classic hosted-client options (``cpu_cores``, ``team_id``, ``max_retries``, ...) are
    accepted and have no effect.
    """

    def __init__(
        self,
        *,
        sandbox_backend: str | None = None,
        sandbox_limits: SandboxLimits | None = None,
        network: bool = False,
        memory_gb: float | None = None,
        disk_size_gb: float | None = None,
        timeout_per_command_seconds: float | None = None,
        environment_vars: Mapping[str, str] | None = None,
        start_command: str | None = None,
        docker_image: str | None = None,
        gpu_count: int = 0,
        max_live_sandboxes: int = 256,
        max_concurrent_commands: int | None = None,
        prestart: int = 0,
        sandbox_options: Mapping[str, Any] | None = None,
        stop_errors: list[type[Exception]] | None = None,
        **kwargs: Any,
    ) -> None:
        ignored = sorted(k for k in kwargs if k in _CLASSIC_CLIENT_OPTIONS)
        for key in ignored:
            kwargs.pop(key)
        if ignored:
            logger.debug("ignoring hosted-sandbox client options: %s", ", ".join(ignored))
        if gpu_count:
            raise ConfigError("local sandboxes have no GPUs: gpu_count must be 0")
        super().__init__(
            stop_errors=stop_errors if stop_errors is not None else [SandboxError], **kwargs
        )
        limits = sandbox_limits or SandboxLimits()
        changes: dict[str, Any] = {}
        if memory_gb is not None:
            changes["memory_mb"] = int(memory_gb * 1024)
        if disk_size_gb is not None:
            changes["disk_mb"] = int(disk_size_gb * 1024)
        if timeout_per_command_seconds is not None:
            changes["timeout"] = float(timeout_per_command_seconds)
        self.sandbox_limits = limits.replace(**changes) if changes else limits
        self.timeout_per_command_seconds = self.sandbox_limits.timeout
        self.sandbox_backend = sandbox_backend
        self.network = network
        self.environment_vars = dict(environment_vars or {})
        self.start_command = start_command if start_command != "tail -f /dev/null" else None
        options = dict(sandbox_options or {})
        if docker_image is not None and (sandbox_backend == "docker"):
            options.setdefault("image", docker_image)
        self.sandbox_options = options
        self.max_live_sandboxes = max_live_sandboxes
        self.max_concurrent_commands = max_concurrent_commands
        self.prestart = prestart
        self._pool: SandboxPool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._starting: dict[str, asyncio.Task[Sandbox]] = {}
        self.add_tool(self.bash, args_to_skip=["sandbox_id", "sandbox_state", "working_dir"])

    # sandboxes ---------------------------------------------------------------------------

    @property
    def active_sandboxes(self) -> set[str]:
        """Ids of the rollouts' sandboxes not yet cleaned up."""
        return set(self._starting)

    def sandbox_pool(self) -> SandboxPool:
        """The pool sandboxes come from (one per event loop)."""
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool_loop is not loop:
            self._pool = SandboxPool(
                self.sandbox_backend,
                limits=self.sandbox_limits,
                network=self.network,
                prestart=self.prestart,
                max_live=self.max_live_sandboxes,
                max_exec=self.max_concurrent_commands,
                **self.sandbox_options,
            )
            self._pool_loop = loop
            if self.prestart:
                self._pool.refill()
        return self._pool

    async def _start_sandbox(self, state: State) -> Sandbox:
        sandbox = await self.sandbox_pool().acquire()
        try:
            if self.start_command:
                await sandbox.spawn(
                    ["/bin/sh", "-c", self.start_command], env=self.environment_vars
                )
            await self.on_sandbox_ready(sandbox, state)
        except BaseException:
            await self.sandbox_pool().release(sandbox)
            raise
        return sandbox

    async def on_sandbox_ready(self, sandbox: Sandbox, state: State) -> None:
        """Hook: prepare a new sandbox (write files, start workers). Runs before the first
        tool call can use it; raising ends the rollout as errored."""

    async def setup_state(self, state: State, **kwargs: Any) -> State:
        state = await super().setup_state(state) or state
        sandbox_id = uuid.uuid4().hex[:12]
        state["sandbox_id"] = sandbox_id
        state["sandbox_state"] = {
            "ready": False,
            "ready_wait_time": 0.0,
            "command_execution_times": [],
            "timeouts": 0,
            "oom": 0,
            "truncated": 0,
        }
        # started now, awaited by the first tool call: overlaps with the first model call
        self._starting[sandbox_id] = asyncio.ensure_future(self._start_sandbox(state))
        return state

    async def get_sandbox(self, state: State) -> Sandbox:
        """The rollout's sandbox, waiting for its start (the wait is recorded)."""
        sandbox_state = state["sandbox_state"]
        task = self._starting.get(state["sandbox_id"])
        if task is None:
            raise SandboxError("this rollout's sandbox was already cleaned up")
        if sandbox_state["ready"]:
            return task.result()
        started = time.perf_counter()
        try:
            sandbox = await asyncio.shield(task)
        except SandboxError:
            raise
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as e:
            raise SandboxError(f"preparing the sandbox failed: {e}") from e
        finally:
            sandbox_state["ready_wait_time"] = time.perf_counter() - started
        sandbox_state["ready"] = True
        return sandbox

    async def run_command(
        self,
        state: State,
        command: str | list[str],
        *,
        stdin: bytes | str | None = None,
        cwd: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run a command in the rollout's sandbox, recording time, timeouts, OOM, truncation."""
        sandbox = await self.get_sandbox(state)
        merged = {**self.environment_vars, **(env or {})}
        result = await sandbox.exec(command, stdin=stdin, env=merged, cwd=cwd, timeout=timeout)
        sandbox_state = state["sandbox_state"]
        sandbox_state["command_execution_times"].append(result.duration_s)
        sandbox_state["timeouts"] += int(result.timed_out)
        sandbox_state["oom"] += int(result.oom)
        sandbox_state["truncated"] += int(result.truncated)
        return result

    @cleanup
    async def destroy_sandbox(self, state: State) -> None:
        """Stop the rollout's sandbox (also on error and cancellation)."""
        sandbox_id = state.get("sandbox_id")
        task = self._starting.get(sandbox_id) if isinstance(sandbox_id, str) else None
        if task is None:
            return
        try:
            if task.done() and not task.cancelled() and task.exception() is None:
                await self.post_rollout(state)
        finally:
            self._starting.pop(str(sandbox_id), None)
            await asyncio.shield(self._release(task))

    async def _release(self, task: asyncio.Task[Sandbox]) -> None:
        if not task.done():
            task.cancel()
        with contextlib.suppress(BaseException):
            await task
        if task.done() and not task.cancelled() and task.exception() is None:
            sandbox = task.result()
            await self.before_sandbox_stop(sandbox)
            await self.sandbox_pool().release(sandbox)

    async def before_sandbox_stop(self, sandbox: Sandbox) -> None:
        """Hook: called just before a rollout's sandbox is stopped (close workers)."""

    async def post_rollout(self, state: State) -> None:
        """Hook (classic): runs after the rollout, before its sandbox is stopped. Cache here
        anything the rewards need from the sandbox."""

    @teardown
    async def teardown_sandboxes(self) -> None:
        """Stop every sandbox this environment still holds."""
        tasks = list(self._starting.values())
        self._starting.clear()
        await asyncio.gather(*(self._release(t) for t in tasks), return_exceptions=True)
        if self._pool is not None:
            with contextlib.suppress(RuntimeError):  # a pool of a closed event loop
                await self._pool.close()
            self._pool = None

    # tools ---------------------------------------------------------------------------------

    async def bash(
        self,
        command: str,
        sandbox_id: str,
        sandbox_state: dict[str, Any],
        working_dir: str | None = None,
    ) -> str:
        """Run a shell command in the sandbox and return its output.

        Args:
            command: the shell command to run (``/bin/sh -c``).
        """
        state = self.tool_state(sandbox_id, sandbox_state)
        result = await self.run_command(state, command, cwd=working_dir)
        return format_exec_result(result, self.timeout_per_command_seconds)

    def tool_state(self, sandbox_id: str, sandbox_state: dict[str, Any]) -> State:
        """The rollout's state as far as a tool with the hidden ``sandbox_id`` and
        ``sandbox_state`` arguments can rebuild it: enough for :meth:`get_sandbox` and
        :meth:`run_command`."""
        return State(sandbox_id=sandbox_id, sandbox_state=sandbox_state)

    _state_for = tool_state  # the name environments written before tool_state use

    def update_tool_args(
        self,
        tool_name: str,
        tool_args: dict[str, Any],
        messages: Messages,
        state: State,
        **kwargs: Any,
    ) -> dict[str, Any]:
        updated = dict(tool_args)
        if tool_name == "bash":
            updated.update(self.sandbox_tool_args(state), working_dir=state.get("working_dir"))
        return updated

    def sandbox_tool_args(self, state: State) -> dict[str, Any]:
        """The hidden arguments every tool of the rollout's sandbox receives: the sandbox's id
        and its usage record (:meth:`tool_state` rebuilds the state from them)."""
        return {"sandbox_id": state["sandbox_id"], "sandbox_state": state["sandbox_state"]}

    # metrics -------------------------------------------------------------------------------

    #: the usage records of the rollout's tools that :meth:`add_metrics` reports (a subclass
    #: with a tool of its own adds its record)
    usage_records: tuple[UsageRecord, ...] = (
        UsageRecord(
            "sandbox_state",
            prefix="sandbox",
            durations="command_execution_times",
            per_call="command_execution_time",
            calls="commands",
            counters=("timeouts", "oom", "truncated"),
        ),
    )

    def add_metrics(self, state: State) -> None:
        super().add_metrics(state)
        for record in self.usage_records:
            record.add_metrics(state)


# classic (0.3.x) module-level names

# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402
from verifiers.rubrics.monitor_rubrics import (  # noqa: E402
    SandboxMonitorRubric as SandboxMonitorRubric,
)

__getattr__ = _forwarder(__name__)
