"""The docker backend: the conformance suite where an engine runs (skipped elsewhere), and its
CLI plumbing against a stand-in `docker` everywhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from verifiers.errors import SandboxError
from verifiers.sandbox import Sandbox, SandboxLimits, create_sandbox
from verifiers.sandbox.docker import docker_available
from verifiers.testing.sandbox_conformance import SandboxConformance, run_sandbox_conformance


@pytest.mark.skipif(not docker_available(), reason="no container engine running")
class TestDockerConformance(SandboxConformance):
    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        return create_sandbox("docker", limits=limits)


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    script = tmp_path / "docker"
    fake = Path(__file__).with_name("fake_docker.py")
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("FAKE_DOCKER_ROOT", str(tmp_path / "containers"))
    return str(script)


PROTOCOL = [
    "test_exec_stdout_stderr_exit_code",
    "test_exec_argv_is_not_shell_parsed",
    "test_stdin_env_cwd",
    "test_missing_command_is_an_observation",
    "test_large_stdin_and_output_within_cap",
    "test_output_cap_truncates",
    "test_timeout_kills_and_reports",
    "test_concurrent_execs",
    "test_write_and_read_files",
    "test_read_missing_file",
    "test_spawned_process_round_trips",
    "test_spawned_process_kill",
    "test_stop_is_idempotent_and_final",
]


async def test_docker_backend_plumbing_against_a_stand_in_cli(fake_docker: str) -> None:
    report = await run_sandbox_conformance(
        lambda limits: create_sandbox("docker", limits=limits, docker_bin=fake_docker),
        only=PROTOCOL,
    )
    assert report.ok, "\n".join(report.failed.values())
    assert sorted(report.passed) == sorted(PROTOCOL)


async def test_a_vanished_container_is_a_sandbox_error(fake_docker: str, tmp_path: Path) -> None:
    import shutil

    async with create_sandbox("docker", docker_bin=fake_docker) as sb:
        shutil.rmtree(tmp_path / "containers")  # the engine lost the container
        with pytest.raises(SandboxError, match="not running"):
            await sb.exec("true")
