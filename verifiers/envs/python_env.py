"""``PythonEnv``: a ``python`` tool backed by a persistent interpreter in each rollout's sandbox.

Variables persist across the model's calls within a rollout. The interpreter starts together
with the sandbox (overlapping the first model call). Packages come from a local wheel cache,
never the network: ``pip_install_packages="numpy sympy"`` with ``wheel_dir`` (or
``$VF_WHEEL_DIR``) holding their wheels; they are installed once per environment into a host
directory that every sandbox mounts read-only.

Metrics: ``python_ready_wait_time``, ``python_cell_time`` (mean seconds), ``python_cells``,
``python_timeouts``, ``python_restarts``, ``python_oom``, plus :class:`SandboxEnv`'s.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from verifiers.envs.sandbox_env import SandboxEnv, UsageRecord
from verifiers.errors import ConfigError, SandboxError
from verifiers.sandbox import Sandbox
from verifiers.sandbox.repl import PythonWorker
from verifiers.types import Messages, State

__all__ = ["PythonEnv"]

_CLASSIC_DEFAULT = "numpy sympy scipy"
SITE_MOUNT = "/opt/vf-site"


def _site_root() -> Path:
    """Where installed package sets are cached: ``$VF_SANDBOX_SITE_DIR``, else a directory
    under /var/tmp that the sandbox's host uid (``nobody`` when running as root) can read."""
    configured = os.environ.get("VF_SANDBOX_SITE_DIR")
    if configured:
        return Path(configured)
    return Path("/var/tmp") / f"verifiers-sandbox-sites-{os.geteuid()}"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _requirement_name(req: str) -> str:
    return _normalize(re.split(r"[<>=!~\[; ]", req.strip(), maxsplit=1)[0])


class PythonEnv(SandboxEnv):
    """Tool environment with a persistent ``python`` REPL per rollout.

    Args:
        pip_install_packages: space-separated requirements installed from ``wheel_dir``.
            Left unset, the classic default (numpy, sympy, scipy) is installed from the cache
            when its wheels are there and skipped otherwise; named explicitly, a package
            without a wheel in the cache is a :class:`ConfigError`.
        wheel_dir: the local wheel cache (default ``$VF_WHEEL_DIR``).
        max_startup_wait_seconds: how long the interpreter may take to start.
        Everything else as for :class:`SandboxEnv` (``timeout_per_command_seconds`` is the
        per-cell timeout).
    """

    usage_records = (
        *SandboxEnv.usage_records,
        UsageRecord(
            "python_state",
            prefix="python",
            durations="cell_times",
            per_call="cell_time",
            calls="cells",
            counters=("timeouts", "restarts", "oom"),
        ),
    )

    def __init__(
        self,
        pip_install_packages: str | None = None,
        max_startup_wait_seconds: float = 30,
        wheel_dir: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.max_startup_wait_seconds = max_startup_wait_seconds
        self.remove_tool(self.bash)
        self.add_tool(self.python, args_to_skip=["sandbox_id", "sandbox_state", "python_state"])
        self._workers: dict[str, PythonWorker] = {}
        self._site: Path | None = None
        self._site_lock: asyncio.Lock | None = None
        self._site_ready = False
        cache = wheel_dir or os.environ.get("VF_WHEEL_DIR")
        self.wheel_dir = Path(cache).expanduser() if cache else None
        self.pip_install_packages = self._resolve_packages(pip_install_packages)
        if self.pip_install_packages:
            if self.sandbox_backend not in (None, "bwrap", "subprocess"):
                raise ConfigError(
                    "pip_install_packages needs the bwrap or subprocess backend (the packages "
                    f"are mounted from this machine), not {self.sandbox_backend!r}"
                )
            self._site = self._site_path()
            if self.sandbox_backend != "subprocess":
                binds = dict(self.sandbox_options.get("ro_binds") or {})
                binds[str(self._site)] = SITE_MOUNT
                self.sandbox_options["ro_binds"] = binds

    # packages ------------------------------------------------------------------------------

    def _wheels(self) -> dict[str, Path]:
        if self.wheel_dir is None or not self.wheel_dir.is_dir():
            return {}
        found: dict[str, Path] = {}
        for wheel in sorted(self.wheel_dir.glob("*.whl")):
            found.setdefault(_normalize(wheel.name.split("-")[0]), wheel)
        return found

    def _resolve_packages(self, requested: str | None) -> list[str]:
        wheels = self._wheels()
        if requested is None:  # the classic default, where the cache has it
            return [p for p in _CLASSIC_DEFAULT.split() if _requirement_name(p) in wheels]
        packages = requested.split()
        missing = [p for p in packages if _requirement_name(p) not in wheels]
        if missing:
            where = str(self.wheel_dir) if self.wheel_dir else "no wheel_dir / $VF_WHEEL_DIR set"
            raise ConfigError(
                f"no wheel for {', '.join(missing)} in the local wheel cache ({where}). "
                f"Sandboxes have no network: fill the cache with "
                f"`pip download --only-binary=:all: -d WHEEL_DIR {' '.join(missing)}` and pass "
                "wheel_dir=WHEEL_DIR (or set VF_WHEEL_DIR)"
            )
        return packages

    def _python(self) -> str:
        if self.sandbox_backend == "subprocess":
            return sys.executable
        from verifiers.sandbox.bwrap import _sandbox_python

        return _sandbox_python()[0]

    def _site_path(self) -> Path:
        wheels = self._wheels()
        key = hashlib.sha256()
        key.update(self._python().encode())
        for name in sorted(_requirement_name(p) for p in self.pip_install_packages):
            wheel = wheels[name]
            key.update(f"{wheel.name}:{wheel.stat().st_size}".encode())
        key.update(" ".join(self.pip_install_packages).encode())
        return _site_root() / key.hexdigest()[:16]

    async def _ensure_site(self) -> None:
        if self._site is None or self._site_ready:
            return
        if self._site_lock is None:
            self._site_lock = asyncio.Lock()
        async with self._site_lock:
            if not self._site_ready:
                await asyncio.to_thread(self._install_site)
                self._site_ready = True

    def _install_site(self) -> None:
        site = self._site
        assert site is not None and self.wheel_dir is not None
        if (site / ".complete").exists():
            return
        site.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        staging = site.with_name(f"{site.name}.tmp-{os.getpid()}")
        cmd = [self._python(), "-m", "pip", "install", "--quiet", "--no-index"]
        cmd += ["--disable-pip-version-check", "--no-compile", "--find-links", str(self.wheel_dir)]
        cmd += ["--target", str(staging), *self.pip_install_packages]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SandboxError(
                f"installing {self.pip_install_packages} from the wheel cache failed: {r.stderr.strip()[-2000:]}"
            )
        (staging / ".complete").touch()
        try:
            staging.rename(site)
        except OSError:  # another process finished first
            import shutil

            shutil.rmtree(staging, ignore_errors=True)

    # sandbox hooks -------------------------------------------------------------------------

    async def _start_sandbox(self, state: State) -> Sandbox:
        await self._ensure_site()
        return await super()._start_sandbox(state)

    def _worker_env(self) -> dict[str, str]:
        env = dict(self.environment_vars)
        if self._site is not None:
            inside = str(self._site) if self.sandbox_backend == "subprocess" else SITE_MOUNT
            env["PYTHONPATH"] = inside
        return env

    async def on_sandbox_ready(self, sandbox: Sandbox, state: State) -> None:
        await super().on_sandbox_ready(sandbox, state)
        worker = PythonWorker(
            sandbox, timeout=self.timeout_per_command_seconds, env=self._worker_env()
        )
        try:
            await asyncio.wait_for(worker.start(), self.max_startup_wait_seconds)
        except (TimeoutError, RuntimeError) as e:
            await worker.close()
            raise SandboxError(f"the python worker did not start: {e or 'timed out'}") from e
        self._workers[sandbox.id] = worker

    async def before_sandbox_stop(self, sandbox: Sandbox) -> None:
        worker = self._workers.pop(sandbox.id, None)
        if worker is not None:
            await worker.close()
        await super().before_sandbox_stop(sandbox)

    async def setup_state(self, state: State, **kwargs: Any) -> State:
        state = await super().setup_state(state, **kwargs)
        state["python_state"] = {
            "ready": False,
            "execution_count": 0,
            "ready_wait_time": 0.0,
            "cell_times": [],
            "timeouts": 0,
            "restarts": 0,
            "oom": 0,
        }
        return state

    # the tool ------------------------------------------------------------------------------

    async def python(
        self,
        code: str,
        sandbox_id: str,
        sandbox_state: dict[str, Any],
        python_state: dict[str, Any],
    ) -> str:
        """Run Python code in a persistent interpreter; variables persist between calls.

        Args:
            code: the code to run; the value of a final expression is shown as ``Out[n]``.
        """
        state = self.tool_state(sandbox_id, sandbox_state)
        sandbox = await self.get_sandbox(state)
        if not python_state["ready"]:
            python_state["ready"] = True
            python_state["ready_wait_time"] = sandbox_state["ready_wait_time"]
        worker = self._workers.get(sandbox.id)
        if worker is None:
            raise SandboxError("the rollout's python worker is gone")
        result = await worker.run(code)
        python_state["execution_count"] = (
            result.execution_count or python_state["execution_count"] + 1
        )
        python_state["cell_times"].append(result.duration_s)
        python_state["timeouts"] += int(result.timed_out)
        python_state["oom"] += int(result.oom)
        python_state["restarts"] = worker.restarts
        return result.format()

    def update_tool_args(
        self,
        tool_name: str,
        tool_args: dict[str, Any],
        messages: Messages,
        state: State,
        **kwargs: Any,
    ) -> dict[str, Any]:
        updated = super().update_tool_args(tool_name, tool_args, messages, state, **kwargs)
        if tool_name == "python":
            updated.update(self.sandbox_tool_args(state), python_state=state["python_state"])
        return updated


# classic (0.3.x) module-level names

# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402
from verifiers.rubrics.monitor_rubrics import (  # noqa: E402
    PythonMonitorRubric as PythonMonitorRubric,
)

__getattr__ = _forwarder(__name__)
