"""Shared set-up of the env-server tests: the fixture environments on the path (also for
spawned servers), the OpenAI-compatible test server answering them, servers spawned as
prime-rl spawns them, and a ``verifiers==0.3.1`` interpreter for the cross-version tests."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import multiprocessing as mp
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from verifiers.serve import ZMQEnvServer
from verifiers.testing.server import OpenAITestServer
from verifiers.utils.serve_utils import get_free_port

ROOT = Path(__file__).resolve().parents[2]
SERVE_ENVS = ROOT / "tests" / "serve" / "envs"
CLASSIC_ENVS = ROOT / "tests" / "fixtures" / "classic_envs"
ENV_PATHS = [str(SERVE_ENVS), str(CLASSIC_ENVS)]

#: where the cross-version tests keep their verifiers==0.3.1 virtual environment
VENV_031 = Path.home() / ".cache" / "verifiers-tests" / "venv-0.3.1"
#: the set-up the cross-version tests need from PyPI (verifiers 0.3.1 serves over pyzmq)
PACKAGES_031 = ["verifiers==0.3.1", "pyzmq", "msgpack"]


@pytest.fixture(autouse=True)
def private_serve_keys(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A fresh config directory (the per-user env-server keys are created there on first
    use, by the test process or a spawned server: both ends read the same file)."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for var in ("VF_SERVE_KEYS_DIR", "VF_SERVE_SECRET_KEY", "VF_SERVE_ALLOW", "VF_SERVE_AUTH"):
        monkeypatch.delenv(var, raising=False)
    return home


def authenticated_dealer(ctx: Any, address: str) -> Any:
    """A raw DEALER socket holding this user's env-server key, connected to ``address``."""
    import zmq

    from verifiers.serve.security import ServeAuth

    sock = ctx.socket(zmq.DEALER)
    ServeAuth.resolve("client").secure_client(sock)
    sock.connect(address)
    return sock


@pytest.fixture
def env_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The fixture environments importable here and in spawned processes."""
    for p in ENV_PATHS:
        monkeypatch.syspath_prepend(p)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([*ENV_PATHS, os.environ.get("PYTHONPATH", "")])
    )
    return ENV_PATHS


@pytest.fixture
def model_server(env_paths: list[str]) -> Iterator[OpenAITestServer]:
    """The test server, answering the fixture environments correctly, in a thread."""
    from responders import solve  # type: ignore[import-not-found]

    with OpenAITestServer(responder=solve) as srv:
        yield srv


@contextlib.contextmanager
def spawned_server(
    env_id: str,
    env_args: dict[str, Any] | None = None,
    log_dir: Path | None = None,
    **kwargs: Any,
) -> Iterator[tuple[str, Any]]:
    """A ZMQEnvServer in a spawned process, started exactly as prime-rl's orchestrator starts
    it; terminated (SIGTERM) at the end, and it must exit cleanly."""
    address = f"tcp://127.0.0.1:{get_free_port()}"
    process = mp.get_context("spawn").Process(
        target=ZMQEnvServer.run_server,
        args=(env_id, env_args or {}, {}, "WARNING", str(log_dir) if log_dir else None),
        kwargs=dict(address=address, json_logging=False, console_logging=False, **kwargs),
        daemon=False,
    )
    process.start()
    try:
        yield address, process
    finally:
        if process.is_alive():
            process.terminate()
        process.join(60)
        if process.is_alive():
            process.kill()
            process.join(5)
            pytest.fail(f"the env server (pid {process.pid}) ignored SIGTERM for 60s")
    assert process.exitcode == 0, f"the env server exited with code {process.exitcode}"


@contextlib.contextmanager
def subprocess_server(
    python: str, env_id: str, env_args: dict[str, Any] | None = None, num_workers: int = 1
) -> Iterator[str]:
    """A ZMQEnvServer of another interpreter (a verifiers==0.3.1 venv), same call shape."""
    address = f"tcp://127.0.0.1:{get_free_port()}"
    code = (
        "import sys; from verifiers.serve import ZMQEnvServer; "
        f"ZMQEnvServer.run_server({env_id!r}, {env_args or {}!r}, {{}}, 'WARNING', None, "
        f"address={address!r}, console_logging=False, num_workers={num_workers})"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(ENV_PATHS)}
    proc = subprocess.Popen([python, "-c", code], env=env, cwd="/")
    try:
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


async def wait_until(
    predicate: Callable[[], bool], deadline_s: float = 30.0, what: str = ""
) -> None:
    """Poll (bounded, without blocking the event loop) until ``predicate()`` holds."""
    end = time.monotonic() + deadline_s
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"timed out after {deadline_s}s waiting for {what or predicate}")
        await asyncio.sleep(0.02)


def python_031() -> str:
    """An interpreter with ``verifiers==0.3.1`` (and pyzmq) installed.

    ``VF_TEST_VERIFIERS_031_PYTHON`` names one; otherwise a virtual environment is created
    (once, under a lock) in ``~/.cache/verifiers-tests/venv-0.3.1`` with pip from PyPI.
    """
    given = os.environ.get("VF_TEST_VERIFIERS_031_PYTHON")
    if given:
        return given
    python = VENV_031 / "bin" / "python"
    probe = [str(python), "-c", "import verifiers.serve, zmq, msgpack"]
    VENV_031.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV_031.parent / "venv-0.3.1.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists() and subprocess.run(probe, capture_output=True, cwd="/").returncode == 0:
            return str(python)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV_031)], check=True)
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *PACKAGES_031],
            capture_output=True,
            text=True,
        )
        if pip.returncode != 0:
            pytest.fail(f"could not install {PACKAGES_031} into {VENV_031}:\n{pip.stderr[-3000:]}")
        check = subprocess.run(probe, capture_output=True, text=True, cwd="/")
        if check.returncode != 0:
            pytest.fail(f"verifiers 0.3.1 does not import in {VENV_031}:\n{check.stderr[-3000:]}")
    return str(python)
