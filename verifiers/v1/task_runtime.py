"""The runtime a task's hooks get: ``Task.setup`` / ``finalize`` / ``validate``, stops, metrics
and rewards that name a ``runtime`` parameter are called with the rollout's runtime, started
before setup and stopped after scoring (``Rollout``). It is a :class:`Runtime` with the call
shapes 0.4.0's tasks use besides ours: ``run(argv, env)`` with the environment positional,
``read(path, max_bytes)``, and PEP 723 scripts run with uv (``prepare_uv_script`` /
``run_uv_script``), each script written once at a path named by its content so uv keeps one
environment per distinct script."""

from __future__ import annotations

import asyncio
import hashlib
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from verifiers.v1.runtimes import BwrapConfig, ProgramResult, Runtime

if TYPE_CHECKING:
    from verifiers.v1.agent import Agent
    from verifiers.v1.trace import Trace

__all__ = ["TaskRuntime", "close_task_runtime", "open_task_runtime", "task_runtime_config"]

SCRIPTS_DIR = ".vf-scripts"
_HOST_NETWORK_VARS = frozenset(
    {"SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
)


class TaskRuntime(Runtime):
    """A runtime for task hooks (see the module docstring)."""

    def __init__(self, config: Any, env: Mapping[str, str] | None = None) -> None:
        super().__init__(config)
        self.env: dict[str, str] = dict(env or {})
        """Variables every command gets (a call's own ``env`` overrides them): the task's
        :meth:`~verifiers.v1.task.Task.runtime_env`."""
        self._uv_argv: dict[str, list[str]] = {}
        self._uv_locks: dict[str, asyncio.Lock] = {}

    async def run(  # type: ignore[override]
        self,
        argv: str | Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | None = None,
        stdin: bytes | str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> ProgramResult:
        """Run a command to completion (``env`` may be given positionally, as 0.4.0 does)."""
        merged = {**self.env, **(env or {})} if self.env else env
        return await super().run(argv, env=merged, cwd=cwd, stdin=stdin, timeout=timeout)

    async def read(self, path: str, max_bytes: int | None = None) -> bytes:  # type: ignore[override]
        data = await super().read(path)
        return data if max_bytes is None else data[:max_bytes]

    program_timeout: float = 3600.0
    """Seconds :meth:`run_program` lets a harness's main program run."""

    async def run_program(self, argv: Sequence[str], env: Mapping[str, str]) -> ProgramResult:
        """Run a harness's main program (the rollout's agent) to completion: as :meth:`run`,
        under :attr:`program_timeout` rather than a command's limit."""
        return await self.run(argv, env, timeout=self.program_timeout)

    async def alive(self) -> bool:
        """Whether the runtime still runs commands."""
        try:
            return (await self.run(["true"], {})).exit_code == 0
        except Exception:
            return False

    async def prepare_uv_script(
        self, script: str | bytes, env: Mapping[str, str] | None = None, *, activate: bool = True
    ) -> list[str]:
        """Write a PEP 723 script into the runtime, resolve its dependencies with ``uv sync
        --script`` (once per distinct script) and return the argv that runs it."""
        data = script.encode() if isinstance(script, str) else script
        path = f"{SCRIPTS_DIR}/{hashlib.sha256(data).hexdigest()}.py"
        async with self._uv_locks.setdefault(path, asyncio.Lock()):
            if path not in self._uv_argv:
                await self.run(["mkdir", "-p", SCRIPTS_DIR], dict(env or {}))
                await self.write(path, data)
                quoted = shlex.quote(path)
                path_env = self._uv_path()
                result = await self.run(
                    ["sh", "-c", f"{path_env}uv sync --script {quoted} -q --no-config"],
                    dict(env or {}),
                )
                if result.exit_code != 0:
                    raise RuntimeError(
                        f"failed to prepare uv script: {result.stderr.strip()[-2000:]}"
                    )
                self._uv_argv[path] = [
                    "sh", "-c", f'{path_env}exec uv run -q --no-config --script "$@"', "uv-script",
                    path,
                ]  # fmt: skip
        return list(self._uv_argv[path])

    def _uv_path(self) -> str:
        """The shell prefix that lets ``uv`` run here: ``~/.local/bin`` (where uv installs
        itself) on the PATH; in a ``subprocess`` runtime (the host itself, isolating nothing)
        also the host's uv (next to this Python, or on this process's PATH), its cache and
        its TLS and proxy settings, so a script's dependencies resolve as on the host."""
        import os

        dirs = ["$HOME/.local/bin"]
        exports: dict[str, str] = {}
        if self.type == "subprocess":
            import shutil
            import sys

            beside = os.path.join(os.path.dirname(sys.executable), "uv")
            found = beside if os.path.exists(beside) else shutil.which("uv")
            if found:
                dirs.insert(0, shlex.quote(os.path.dirname(found)))
            cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
            exports["UV_CACHE_DIR"] = os.environ.get("UV_CACHE_DIR") or os.path.join(cache, "uv")
            for name, value in os.environ.items():
                upper = name.upper()
                if upper.startswith("UV_") or upper in _HOST_NETWORK_VARS:
                    exports.setdefault(name, value)
        assigned = "".join(f"{k}={shlex.quote(v)} " for k, v in sorted(exports.items()))
        return f'export PATH="{":".join(dirs)}:$PATH" {assigned}; '

    async def run_uv_script(
        self,
        script: str | bytes,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ProgramResult:
        """Run a PEP 723 script with ``args`` (prepared first if it was not)."""
        argv = await self.prepare_uv_script(script, env)
        return await self.run([*argv, *(args or [])], dict(env or {}))


def task_runtime_config(agent: Agent) -> Any:
    """Where a task's hooks run for ``agent``'s seat: where its harness runs its program (a
    program harness's ``runtime_config``), else the seat's ``runtime``, else ``bwrap``: hooks
    run model-written code (a program to grade), so it is sandboxed unless a config names
    another runtime."""
    resolve = getattr(agent.harness, "runtime_config", None)
    if callable(resolve):
        return resolve(agent)
    seat = agent.config.runtime
    return seat if seat is not None else BwrapConfig()


async def open_task_runtime(
    agent: Agent, trace: Trace, env: Mapping[str, str] | None = None
) -> TaskRuntime:
    """Start the runtime of ``trace``'s rollout. A program harness starts it (its
    ``open_runtime``) and later runs its program in it, so the task's hooks see the files the
    program wrote; otherwise it is a runtime of :func:`task_runtime_config`."""
    opener = getattr(agent.harness, "open_runtime", None)
    if callable(opener):
        runtime: TaskRuntime = await opener(trace, agent, env)
        return runtime
    runtime = TaskRuntime(task_runtime_config(agent), env)
    try:
        await runtime.start()
    except BaseException:
        await runtime.stop()
        raise
    return runtime


async def close_task_runtime(agent: Agent, trace: Trace, runtime: TaskRuntime) -> None:
    """Stop what :func:`open_task_runtime` started for ``trace``."""
    release = getattr(agent.harness, "release_runtime", None)
    if callable(release):
        await release(trace)
    await runtime.stop()
