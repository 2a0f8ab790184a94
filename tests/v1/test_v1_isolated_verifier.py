"""``IsolatedVerifierEnv`` and artifacts: a bash solver (scripted through the project's test
server) works in a bwrap runtime; its task is graded in a fresh bwrap runtime that holds only
the declared artifacts, so what else the solver wrote cannot reach the verdict."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from typing import Any

import pytest

import verifiers.v1 as vf
from verifiers.sandbox.bwrap import bwrap_available
from verifiers.testing import OpenAITestServer
from verifiers.v1.configs.agent import AgentTimeoutConfig
from verifiers.v1.envs.isolated_verifier import (
    IsolatedVerifierEnv,
    IsolatedVerifierEnvConfig,
    VerifierConfig,
)
from verifiers.v1.utils.artifacts import ArtifactError, check_archive

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")

CHECK = 'test "$(cat answer.txt)" = 42'


def script(*commands: str) -> Callable[[dict[str, Any]], Any]:
    """The k-th model call runs the k-th bash command; then the model answers "done"."""

    def respond(request: dict[str, Any]) -> Any:
        step = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if step < len(commands):
            return {"tool_calls": [{"name": "bash", "arguments": {"command": commands[step]}}]}
        return "done"

    return respond


class GradedTask(vf.Task[vf.TaskData]):
    """Setup appends a line to setup.log in whichever runtime it runs in; the verifier stages
    a trusted check script; the reward runs it; metrics report what the grader can see."""

    async def setup(self, runtime: Any) -> None:
        await runtime.run(["sh", "-c", "echo setup >> /tmp/setup.log"])

    async def stage_verifier(self, runtime: Any) -> None:
        await runtime.run(["sh", "-c", f"mkdir -p tests && printf '%s' '{CHECK}' > tests/check.sh"])

    @vf.reward
    async def passed(self, runtime: Any) -> float:
        result = await runtime.run(["sh", "tests/check.sh"])
        return float(result.exit_code == 0)

    @vf.metric
    async def setups_seen(self, runtime: Any) -> float:
        return float((await runtime.read("/tmp/setup.log")).decode().count("setup"))

    @vf.metric
    async def stray_files_seen(self, runtime: Any) -> float:
        result = await runtime.run(["sh", "-c", "ls stray.txt /tmp/stray 2>/dev/null | wc -l"])
        return float(result.stdout.strip())


class OneTask(vf.Taskset[GradedTask, vf.TasksetConfig]):
    def load(self) -> list[GradedTask]:
        artifacts = [vf.Artifact(source="answer.txt")]
        data = vf.TaskData(prompt="write 42 to answer.txt", artifacts=artifacts)
        return [GradedTask(data, self.config.task)]


def make_env(verifier: VerifierConfig | None = None, **agent: Any) -> IsolatedVerifierEnv:
    env = IsolatedVerifierEnv(OneTask(vf.TasksetConfig()))
    env.config.agent = vf.AgentConfig(harness="bash", **agent)
    env.config.verifier = verifier or VerifierConfig(retries=0)
    return env


async def run_solver(env: IsolatedVerifierEnv, *commands: str) -> vf.Episode:
    async with OpenAITestServer(responder=script(*commands)) as server:
        (episode,) = await env.evaluate(server.base_url, "policy")
    return episode


@needs_bwrap
async def test_grader_runs_fresh_and_sees_only_the_artifacts() -> None:
    episode = await run_solver(
        make_env(), "echo 42 > answer.txt && echo x > stray.txt && echo x > /tmp/stray"
    )
    assert episode.ok, episode.errors or episode.traces[0].errors
    trace = episode.traces[0]
    assert trace.rewards["passed"] == vf.Reward(score=1.0)
    # one setup line: the grader's runtime is not the solver's (which also ran setup)
    assert trace.metrics["setups_seen"] == 1.0
    assert trace.metrics["stray_files_seen"] == 0.0
    assert trace.state.artifacts and list(trace.state.artifacts) == [
        "/logs/artifacts",
        "/home/user/answer.txt",
    ]


@needs_bwrap
async def test_solver_cannot_plant_the_grading_script() -> None:
    """The attack: a wrong answer plus a check script that always passes, at the path the
    verifier runs. The grader stages its own, and the solver's never travels."""
    episode = await run_solver(
        make_env(), "echo 41 > answer.txt && mkdir -p tests && echo 'exit 0' > tests/check.sh"
    )
    assert episode.ok, episode.errors
    assert episode.traces[0].rewards["passed"] == vf.Reward(score=0.0)


@needs_bwrap
async def test_an_artifact_linking_out_of_its_root_fails_the_episode() -> None:
    """The attack: answer.txt a symbolic link to a host file, hoping the grader follows it."""
    episode = await run_solver(make_env(), "ln -s /etc/passwd answer.txt")
    assert not episode.ok
    assert episode.traces[0].rewards.get("passed") is None  # no silent 0.0
    assert any("symbolic link" in e.message for e in episode.errors), episode.errors


@needs_bwrap
async def test_a_missing_declared_artifact_fails_the_solver_run() -> None:
    episode = await run_solver(make_env(), "echo 42 > elsewhere.txt")
    assert not episode.ok
    trace = episode.traces[0]
    assert any("answer.txt" in e.message and "does not exist" in e.message for e in trace.errors)
    assert trace.rewards.get("passed") is None


@needs_bwrap
async def test_every_failed_attempt_is_retried_in_a_new_runtime_then_raised() -> None:
    env = make_env(VerifierConfig(retries=1))
    env.config.agent.timeout = AgentTimeoutConfig(scoring=30)
    calls: list[int] = []
    verify = env.verify

    async def flaky(task: Any, solution: Any, runtime: Any) -> Any:
        calls.append(id(runtime))
        if len(calls) == 1:
            raise RuntimeError("grader broke")
        return await verify(task, solution, runtime)

    env.verify = flaky  # type: ignore[method-assign]
    episode = await run_solver(env, "echo 42 > answer.txt")
    assert episode.ok, episode.errors
    assert len(set(calls)) == 2
    assert episode.traces[0].rewards["passed"] == vf.Reward(score=1.0)


async def test_subprocess_grading_is_refused_before_solving() -> None:
    env = make_env(VerifierConfig(runtime=vf.SubprocessConfig(), retries=0))
    episode = await run_solver(env, "echo 42 > answer.txt")
    assert not episode.ok and not episode.traces
    assert any("subprocess" in e.message for e in episode.errors)


async def test_relative_artifacts_between_different_work_dirs_are_refused() -> None:
    env = make_env(
        VerifierConfig(runtime=vf.BwrapConfig(), retries=0), runtime=vf.SubprocessConfig()
    )
    episode = await run_solver(env, "echo 42 > answer.txt")
    assert not episode.ok
    assert any("relative artifacts" in e.message for e in episode.errors)


def test_the_env_id_names_the_env_and_its_config() -> None:
    from verifiers.v1.utils.loaders import environment_class

    assert environment_class("", "isolated-verifier") is IsolatedVerifierEnv
    config = IsolatedVerifierEnvConfig.model_validate(
        {"verifier": {"runtime": {"type": "docker", "image": "x"}, "env": {"A": "1"}}}
    )
    assert config.verifier.runtime == vf.DockerConfig(image="x")
    assert (config.verifier.retries, config.verifier.env) == (2, {"A": "1"})
    with pytest.raises(ValueError, match="retries"):
        VerifierConfig(retries=-1)


def tar_of(*members: tuple[str, str, str]) -> bytes:
    """An archive of ``(kind, name, target-or-content)`` members built by hand."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:") as tar:
        for kind, name, value in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value.encode()))
                continue
            info.type = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE}[
                kind
            ]
            info.linkname = value
            tar.addfile(info)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([("file", "home/user/../../etc/x", "")], "outside"),
        ([("file", "/etc/x", "")], "outside"),
        ([("file", "home/other/x", "")], "outside"),
        ([("sym", "home/user/out/l", "/etc"), ("file", "home/user/out/l/x", "")], "symbolic"),
        ([("sym", "home/user/out/l", "../../x")], "leaves it"),
        ([("hard", "home/user/out/h", "etc/passwd")], "hard link"),
        ([("fifo", "home/user/out/p", "")], "not a file"),
        ([("file", "home/user/out/a", "1"), ("file", "home/user/out/a", "2")], "twice"),
    ],
)
def test_restore_refuses_archives_that_reach_outside_their_root(
    members: list[tuple[str, str, str]], message: str
) -> None:
    with pytest.raises(ArtifactError, match=message):
        check_archive("/home/user/out", tar_of(*members))


def test_restore_accepts_files_and_links_confined_to_their_root() -> None:
    check_archive(
        "/home/user/out",
        tar_of(
            ("file", "home/user/out/a", "1"),
            ("sym", "home/user/out/b", "a"),
            ("hard", "home/user/out/c", "home/user/out/a"),
        ),
    )
    with pytest.raises(ArtifactError, match="below"):
        check_archive("/", None)
