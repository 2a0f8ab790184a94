"""NeMo Gym resource-server tasks, run by any v1 harness.

A row of the dataset holds ``responses_create_params`` (the Responses-API request: its input
becomes the task's prompt, its function tools the rollout's plain tools) and whatever the
server's verifier reads (``verifier_metadata`` ...). Each rollout seeds a session on the
resource server (``POST /seed_session`` with the row; its cookie is the session, and an
``mcp`` answer names the session's MCP endpoint), offers the session's tools
(:class:`~verifiers.v1.tasksets.nemo_gym.toolset.NeMoGymToolset`) and is scored by ``POST
/verify`` with the row and the conversation as a Responses object: the ``nemo_gym`` reward is
the server's ``reward``, its other scalar fields become metrics (all of them in
``trace.info["nemo_gym"]``).

The server is one the config names (``task.resources_url``), or one :class:`NeMoGymEnv` starts
for the run from the taskset's ``resource_server`` (``"module:Class"`` of the published
``nemo-gym`` package): with ``uv`` (a PEP 723 script pinning ``nemo-gym``), or with the Python
that ``$VF_NEMO_GYM_PYTHON`` names (one where ``nemo-gym`` is installed; no download).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, cast

import httpx
from pydantic import Field

from verifiers.v1.configs import TaskConfig, TasksetConfig
from verifiers.v1.decorators import reward
from verifiers.v1.dialects.responses import ResponsesDialect
from verifiers.v1.env import SingleAgentEnv
from verifiers.v1.mcp.toolset import SharedToolsetConfig, Toolset
from verifiers.v1.task import Task, TaskData
from verifiers.v1.taskset import Taskset
from verifiers.v1.tasksets.nemo_gym.response import trace_to_nemo_response
from verifiers.v1.tasksets.nemo_gym.toolset import NeMoGymState, NeMoGymToolset
from verifiers.v1.trace import Trace

__all__ = [
    "NeMoGymConfig",
    "NeMoGymData",
    "NeMoGymEnv",
    "NeMoGymTask",
    "NeMoGymTaskConfig",
    "NeMoGymTaskset",
]

SERVER_SCRIPT = Path(__file__).with_name("server.py")
PYTHON_VAR = "VF_NEMO_GYM_PYTHON"
START_TIMEOUT = 120.0


class NeMoGymTaskConfig(TaskConfig):
    resources_url: str | None = None
    """The resource server's base URL; None: :class:`NeMoGymEnv` starts one and fills it."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Headers sent with every request to the server (session, tools, MCP, verify)."""
    request_timeout: float = Field(default=60.0, gt=0)
    """Seconds one request to the server (or one MCP exchange) may take."""


class NeMoGymConfig(TasksetConfig):
    dataset: Path
    """The JSONL rows: ``responses_create_params`` plus what the verifier reads."""
    tools: SharedToolsetConfig = SharedToolsetConfig()
    task: NeMoGymTaskConfig = NeMoGymTaskConfig()


class NeMoGymData(TaskData):
    row: dict[str, Any]
    """The dataset row as read: sent as is to ``/seed_session`` and ``/verify``."""


class NeMoGymTask(Task[NeMoGymData, NeMoGymState, NeMoGymTaskConfig]):
    async def setup(self, trace: Trace) -> None:  # type: ignore[override]
        """Open the rollout's session on the resource server."""
        state = cast(NeMoGymState, trace.state)
        if self.config.resources_url is None:
            raise ValueError(
                "no NeMo Gym server: set --env.taskset.task.resources-url, or run the taskset "
                "with an env that starts its server (NeMoGymEnv)"
            )
        state.resources_url = self.config.resources_url.rstrip("/")
        state.headers = dict(self.config.headers)
        state.request_timeout = self.config.request_timeout
        declared = self.data.row["responses_create_params"].get("tools") or []
        state.direct_tools = {t["name"]: t for t in declared if t.get("type") == "function"}
        state.tool_names = list(state.direct_tools)
        response = await state.post("seed_session", self.data.row)
        response.raise_for_status()
        state.cookies.update(dict(response.cookies))
        mcp = response.json().get("mcp")
        if mcp:
            state.mcp_url = f"{state.resources_url}/{str(mcp['url_path']).lstrip('/')}"
            state.mcp_headers = {**state.headers, **(mcp.get("headers") or {})}

    @reward(weight=1.0)
    async def nemo_gym(self, trace: Trace) -> float:
        """The server's verdict on the conversation (its other scalars become metrics)."""
        state = cast(NeMoGymState, trace.state)
        params = self.data.row["responses_create_params"]
        response = await state.post(
            "verify",
            {
                **self.data.row,
                "response": trace_to_nemo_response(trace, params, state.tool_names),
            },
        )
        response.raise_for_status()
        result = dict(response.json())
        score = result.pop("reward")
        result.pop("responses_create_params", None)
        result.pop("response", None)
        trace.info["nemo_gym"] = result
        for key, value in result.items():
            if isinstance(value, bool | int | float):
                trace.record_metric(key, float(value))
        return float(score)


class NeMoGymTaskset(Taskset[NeMoGymTask, NeMoGymConfig]):
    resource_server: ClassVar[str | None] = None
    """The ``"module:Class"`` of a resource server in the ``nemo-gym`` package that
    :class:`NeMoGymEnv` starts when no ``resources_url`` is configured."""

    @classmethod
    def toolsets(cls, config: NeMoGymConfig) -> list[Toolset[Any, Any]]:
        return [NeMoGymToolset(config.tools)]

    def load(self) -> Iterator[NeMoGymTask]:
        path = self.config.dataset.expanduser().resolve()
        dialect = ResponsesDialect()
        empty = True
        with path.open(encoding="utf-8") as lines:
            for idx, line in enumerate(line for line in lines if line.strip()):
                empty = False
                row = json.loads(line)
                request = dialect.parse_request(row["responses_create_params"])
                data = NeMoGymData(name=f"{path.stem}:{idx}", prompt=request.messages, row=row)
                yield NeMoGymTask(data, self.config.task)
        if empty:
            raise ValueError(f"the NeMo Gym dataset {path} has no rows")


class NeMoGymEnv(SingleAgentEnv):
    """A NeMo Gym taskset's env: starts the taskset's resource server once for the run
    (:meth:`start`) unless the config names one, and stops it after (:meth:`stop`)."""

    _nemo_process: asyncio.subprocess.Process | None = None
    _nemo_dir: str | None = None

    async def start(self) -> None:
        taskset = cast(NeMoGymTaskset, self.taskset)
        config = taskset.config.task
        if config.resources_url is not None:
            return
        entrypoint = taskset.resource_server
        if entrypoint is None:
            raise ValueError(
                f"{type(taskset).__name__} names no resource_server; set "
                "--env.taskset.task.resources-url"
            )
        workdir = self._nemo_dir = tempfile.mkdtemp(prefix="vf-nemo-gym-")
        python = os.environ.get(PYTHON_VAR)
        if python:
            argv = [python, str(SERVER_SCRIPT)]
        elif shutil.which("uv"):
            argv = ["uv", "run", "-q", "--no-config", "--script", str(SERVER_SCRIPT)]
        else:
            raise RuntimeError(
                f"starting the NeMo Gym server needs uv (it installs nemo-gym) or ${PYTHON_VAR} "
                "(a Python with nemo-gym installed); or set --env.taskset.task.resources-url"
            )
        log = await asyncio.to_thread(open, os.path.join(workdir, "nemo_gym.log"), "wb")
        with log:
            self._nemo_process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=workdir,
                env={**os.environ, "NEMO_GYM_RESOURCE_SERVER": entrypoint},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        port_file = Path(workdir, "nemo_gym.port")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT
        async with httpx.AsyncClient(timeout=1.0) as client:
            while loop.time() < deadline and self._nemo_process.returncode is None:
                with contextlib.suppress(OSError, ValueError, httpx.HTTPError):
                    port = await asyncio.to_thread(port_file.read_text, "ascii")
                    url = f"http://127.0.0.1:{int(port)}"
                    await client.get(url)
                    config.resources_url = url
                    return
                await asyncio.sleep(0.25)
        log_bytes = await asyncio.to_thread(Path(workdir, "nemo_gym.log").read_bytes)
        tail = log_bytes[-2000:].decode(errors="replace")
        await self.stop()
        raise RuntimeError(f"the NeMo Gym server did not start:\n{tail}")

    async def stop(self) -> None:
        process, self._nemo_process = self._nemo_process, None
        if process is not None:
            cast(NeMoGymTaskset, self.taskset).config.task.resources_url = None
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 10.0)
                except TimeoutError:
                    process.kill()
                    await process.wait()
        workdir, self._nemo_dir = self._nemo_dir, None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
