"""``vf.CliAgentEnv``'s safe defaults: agents run in bwrap unless another backend is named (and
say how to get bubblewrap where it is missing), naming ``subprocess`` logs one warning line, a
rollout has a wall-clock limit by default that stops a hanging agent, live sandboxes are capped,
and an agent that goes over the interception server's limits ends its rollout as errored."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from typing import Any

import pytest

import verifiers as vf
from tests.sandbox.conftest import marker, needs_bwrap, pids_with
from verifiers.clients.native import NativeClient

UNUSED = "http://127.0.0.1:9/v1"  # the agents here make no model call


def rows(n: int = 1) -> list[dict[str, Any]]:
    return [{"question": f"task {i}", "answer": ""} for i in range(n)]


async def run(env: vf.Environment) -> vf.State:
    client = NativeClient(UNUSED)
    try:
        return await env.run_rollout(env.get_rows()[0], client, "policy")
    finally:
        await env.close()
        await client.close()


def test_the_defaults_are_a_sandbox_an_hour_and_32_live_sandboxes() -> None:
    env = vf.CliAgentEnv(run_command="true", dataset=rows())
    assert env.sandbox_backend is None  # bwrap
    assert env.timeout_seconds == 3600.0 == vf.CliAgentEnv.DEFAULT_TIMEOUT_SECONDS
    assert env.max_live_sandboxes == 32
    assert (
        vf.CliAgentEnv(run_command="true", dataset=rows(), timeout_seconds=None).timeout_seconds
        is None
    )
    with pytest.raises(vf.ConfigError, match="max_live_sandboxes"):
        vf.CliAgentEnv(run_command="true", dataset=rows(), max_live_sandboxes=0)


class QuickDefault(vf.CliAgentEnv):
    """The default wall-clock limit, shortened so that a test can wait for it."""

    DEFAULT_TIMEOUT_SECONDS = 2.0


@needs_bwrap
async def test_the_default_timeout_stops_a_hanging_agent() -> None:
    tag = marker()
    env = QuickDefault(run_command=f"(setsid sleep {tag} &) ; exec sleep {tag}", dataset=rows())
    started = time.monotonic()
    state = await run(env)
    assert time.monotonic() - started < 30
    assert state["timed_out"] and state["stop_condition"] == "timeout_reached"
    assert state["metrics"]["agent_timeout"] == 1.0
    assert pids_with(tag) == []  # the agent and what it left behind are gone


#: sends a request whose body never finishes, then waits far longer than the rollout's limit
SLOW_BODY = r"""
import os, socket, sys, time
host, _, rest = os.environ["OPENAI_BASE_URL"].partition("//")[2].partition("/")
h, p = host.split(":")
s = socket.create_connection((h, int(p)))
s.sendall(("POST /%s/chat/completions HTTP/1.1\r\nContent-Length: 5000\r\n\r\n{" % rest).encode())
s.settimeout(30)
print(s.recv(200).decode(errors="replace").splitlines()[0], flush=True)
time.sleep(300)
"""


@needs_bwrap
async def test_an_agent_over_the_read_timeout_ends_its_rollout_as_errored() -> None:
    env = vf.CliAgentEnv(
        run_command=f"exec python3 -c {shlex.quote(SLOW_BODY)}",
        dataset=rows(),
        request_read_timeout=1.0,
        timeout_seconds=120,
    )
    state = await run(env)
    assert not state.get("timed_out")  # ended by the limit, not by the wall clock
    assert state["error"]["type"] == "InterceptionLimitError"
    assert "read_timeout" in state["error"]["message"]
    assert state["trajectory"] == [] and state["reward"] is None


_OPT_IN = """
import asyncio
import verifiers as vf
from verifiers.clients.native import NativeClient

async def main():
    rows = [{"question": "q", "answer": ""}]
    for _ in range(2):
        env = vf.CliAgentEnv(run_command="echo ran", dataset=rows, sandbox_backend="subprocess")
        client = NativeClient("http://127.0.0.1:9/v1")
        state = await env.run_rollout(env.get_rows()[0], client, "m")
        assert state["agent_exit_code"] == 0 and state["error"] is None, state["error"]
        await env.close()
        await client.close()

asyncio.run(main())
"""


def test_naming_subprocess_logs_exactly_one_warning_line() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _OPT_IN],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "default"},
    )
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "does not isolate" in line]
    assert len(warned) == 1, done.stderr
    assert "sandbox_backend='subprocess'" in warned[0]
    assert "RuntimeWarning" not in done.stderr


async def test_without_bubblewrap_the_error_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    state = await run(vf.CliAgentEnv(run_command="true", dataset=rows()))
    assert state["error"]["type"] == "SandboxError"
    message = state["error"]["message"]
    assert "apt-get install bubblewrap" in message
    assert "sandbox_backend='subprocess'" in message and "NO isolation" in message
