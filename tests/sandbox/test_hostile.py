"""Findings of issue 12 against the sandbox itself: what a hostile program leaves behind after
its command, and the system calls it must not have."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import marker, needs_bwrap, pids_with, vf_exec, wait_for_pids
from verifiers.sandbox import SandboxLimits, create_sandbox

pytestmark = needs_bwrap

# double fork + setsid, the grandchild ignoring SIGTERM and SIGHUP, then the command keeps going
_DAEMON = (
    "import os, signal, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "        signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    "        os.execvp('sleep', ['sleep', sys.argv[1]])\n"
    "    os._exit(0)\n"
    "print('detached', flush=True)\n"
    "time.sleep(3600)\n"
)


@pytest.mark.parametrize("backend", ["bwrap", "subprocess"])
@pytest.mark.parametrize("agent", ["native", "python"])
async def test_timed_out_exec_kills_what_it_started(backend: str, agent: str) -> None:
    tag = marker()
    limits = SandboxLimits(timeout=30, processes=64)
    async with create_sandbox(backend, limits=limits, agent=agent) as sb:
        r = await sb.exec(["python3", "-c", _DAEMON, tag], timeout=1.0)
        assert r.timed_out and r.stdout == "detached\n"
        assert pids_with(tag) == []  # gone when the exec returns, not when the sandbox stops
        # a killed spawned process takes its tree along too
        p = await sb.spawn(["python3", "-c", _DAEMON, tag])
        assert len(wait_for_pids(tag, 1)) == 1
        await p.kill()
        assert pids_with(tag) == []


def test_timed_out_exec_kills_what_it_started_cli() -> None:
    tag = marker()
    p = vf_exec("--timeout", "1", "--", "python3", "-c", _DAEMON, tag)
    assert p.returncode == 124 and p.stdout == b"detached\n", p.stderr
    assert pids_with(tag) == []
