"""The real agent CLIs, offline: Claude Code and Codex (pinned releases from the npm registry,
installed once into the agent cache and mounted read-only) run in bwrap sandboxes without
network, their model calls (Anthropic Messages for Claude Code, OpenAI Responses for Codex)
intercepted and answered by the project's test server with a scripted model. The model runs a
command in the sandbox and reports its output: reward 1.0, and every model call is recorded
with exactly the token ids and logprobs the server returned. Where the npm registry cannot be
reached the tests skip, saying so."""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

import verifiers.v1 as vf
from tests.sandbox.conftest import needs_bwrap
from verifiers.agents.installs import agent_cache_dir
from verifiers.agents.npm_installs import (
    CLAUDE_CODE,
    CODEX,
    NpmAgent,
    NpmInstall,
    npm_agent,
    npm_available,
)
from verifiers.errors import SandboxError
from verifiers.testing import OpenAITestServer
from verifiers.testing.replies import build_chat_completion
from verifiers.v1.harnesses import (
    ClaudeCodeHarness,
    ClaudeCodeHarnessConfig,
    CodexHarness,
    CodexHarnessConfig,
)
from verifiers.v1.runtimes import BwrapConfig
from verifiers.v1.types import content_text

pytestmark = needs_bwrap

TOKENS = {"extra_body": {"return_token_ids": True}, "logprobs": True}
SECRET_INPUT = "verifiers-offline-cli"
DIGEST = hashlib.sha256(SECRET_INPUT.encode()).hexdigest()[:16]
COMMAND = f"printf %s {SECRET_INPUT} | sha256sum | cut -c1-16"
# a leading dash: the prompt must reach the model as text, not be read as a CLI option
PROMPT = f"--task: run `{COMMAND}` in the shell and reply with its output only."


def installed(agent: NpmAgent) -> NpmInstall:
    """The CLI's cached install; made from the registry when absent, and the test skipped
    (with the reason) only where npm or the registry cannot be reached."""
    cached = agent_cache_dir() / f"{agent.key}-{agent.version}"
    if not (cached / ".complete").exists():
        missing = npm_available()
        if missing is not None:
            pytest.skip(f"{agent.package} cannot be installed: {missing}")
        probe = subprocess.run(
            ["npm", "view", f"{agent.package}@{agent.version}", "version"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if probe.returncode != 0 or probe.stdout.strip() != agent.version:
            pytest.skip(
                f"the npm registry is unreachable for {agent.package}@{agent.version}: "
                f"{(probe.stderr or probe.stdout).strip()[-300:]}"
            )
    return npm_agent(agent)  # an install that fails past that point fails the test


class Data(vf.TaskData):
    pass


class DigestTask(vf.Task[Data]):
    """1.0 when a command the agent ran printed the digest and its final answer is it."""

    @vf.reward
    async def reported_digest(self, trace: vf.Trace) -> float:
        ran = any(DIGEST in content_text(m.content) for m in trace.tool_messages)
        final = trace.last_message
        said = final is not None and content_text(final.content).strip() == DIGEST
        return float(ran and said)


def scripted(shell_call: Callable[[list[str]], tuple[str, dict[str, Any]]]) -> Callable[..., Any]:
    """The model: first it calls the CLI's shell tool with :data:`COMMAND`; once a tool result
    is in the conversation it answers with the 16 hex digits that result holds."""

    def respond(request: dict[str, Any]) -> Any:
        results = [content_text(m["content"]) for m in request["messages"] if m["role"] == "tool"]
        if not results:
            names = [t["function"]["name"] for t in request.get("tools") or []]
            name, arguments = shell_call(names)
            return {"tool_calls": [{"name": name, "arguments": arguments}]}
        found = re.findall(r"\b[0-9a-f]{16}\b", results[-1])
        return found[-1] if found else "no output"

    return respond


def claude_shell(names: list[str]) -> tuple[str, dict[str, Any]]:
    assert "Bash" in names, names
    return "Bash", {"command": COMMAND, "description": "hash the input"}


def codex_shell(names: list[str]) -> tuple[str, dict[str, Any]]:
    if "exec_command" in names:
        return "exec_command", {"cmd": COMMAND}
    assert "shell" in names, names
    return "shell", {"command": ["bash", "-lc", COMMAND]}


async def run_cli(
    harness: vf.ProgramHarness[Any], respond: Callable[..., Any]
) -> tuple[vf.Trace, list[dict[str, Any]]]:
    async with OpenAITestServer(responder=respond) as server:
        agent = vf.Agent(server.base_url, "policy", harness=harness, sampling=TOKENS)
        trace = await agent.run(DigestTask(Data(idx=0, prompt=PROMPT)))
        requests = list(server.requests)
    return trace, requests


def assert_token_exact(
    trace: vf.Trace, requests: list[dict[str, Any]], respond: Callable[..., Any]
) -> None:
    """One recorded model call per request the model server saw, in order, holding exactly
    the prompt ids, completion ids and logprobs the server answered with."""
    assert len(trace.calls) == len(requests) == trace.num_turns
    for call, request in zip(trace.calls, requests, strict=True):
        assert call.node is not None
        node = trace.nodes[call.node]
        answer = build_chat_completion(request, respond(request))
        choice = answer["choices"][0]
        assert node.sampled
        assert node.prompt_token_ids == answer["prompt_token_ids"]
        assert node.completion_token_ids == choice["token_ids"]
        assert node.completion_logprobs == [t["logprob"] for t in choice["logprobs"]["content"]]
        assert call.usage is not None
        assert call.usage.input_tokens == answer["usage"]["prompt_tokens"]
        assert call.usage.output_tokens == answer["usage"]["completion_tokens"]
    assert {r["model"] for r in requests} == {"policy"}


CLIS = [
    pytest.param(
        CLAUDE_CODE, ClaudeCodeHarness, ClaudeCodeHarnessConfig, claude_shell, id="claude_code"
    ),
    pytest.param(CODEX, CodexHarness, CodexHarnessConfig, codex_shell, id="codex"),
]


@pytest.mark.parametrize(("cli", "harness_cls", "config_cls", "shell"), CLIS)
async def test_the_real_cli_solves_the_task_offline_with_every_call_recorded(
    cli: NpmAgent, harness_cls: Any, config_cls: Any, shell: Any
) -> None:
    install = installed(cli)
    assert install.path.is_file() and install.directory.name == f"{cli.key}-{cli.version}"
    respond = scripted(shell)
    harness = harness_cls(config_cls(runtime=BwrapConfig(), timeout=300))
    trace, requests = await run_cli(harness, respond)
    assert trace.ok, trace.errors
    assert trace.stop_condition == "agent_completed"
    assert trace.rewards["reported_digest"] == vf.Reward(score=1.0)
    assert trace.num_turns == 2  # the command, then the answer: nothing else was asked
    assert PROMPT in "".join(content_text(m.content) for m in trace.messages if m.role == "user")
    assert_token_exact(trace, requests, respond)


@pytest.mark.parametrize(("cli", "harness_cls", "config_cls", "shell"), CLIS)
async def test_a_model_that_guesses_instead_of_running_the_command_gets_zero(
    cli: NpmAgent, harness_cls: Any, config_cls: Any, shell: Any
) -> None:
    installed(cli)
    harness = harness_cls(config_cls(runtime=BwrapConfig(), timeout=300))
    trace, requests = await run_cli(harness, lambda request: "0123456789abcdef")
    assert trace.ok, trace.errors
    assert trace.rewards["reported_digest"] == vf.Reward(score=0.0)
    assert len(requests) == trace.num_turns == 1


def test_versions_are_pinned_exactly() -> None:
    for config_cls in (ClaudeCodeHarnessConfig, CodexHarnessConfig):
        for bad in ("latest", "^2.1.0", "2.1", "2.1.0; rm -rf /"):
            with pytest.raises(ValueError, match="give an exact release"):
                config_cls(version=bad)
    assert ClaudeCodeHarnessConfig().version == CLAUDE_CODE.version
    assert CodexHarnessConfig().version == CODEX.version


def test_without_npm_an_install_is_a_clear_error_and_the_cli_tests_skip_saying_why(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VF_AGENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm here
    with pytest.raises(SandboxError, match=r"@openai/codex@0\.155\.1: npm is not installed"):
        npm_agent(CODEX)
    with pytest.raises(pytest.skip.Exception, match="cannot be installed: npm is not installed"):
        installed(CODEX)


def test_an_unreachable_registry_skips_the_cli_tests_saying_so(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if npm_available() is not None:
        pytest.skip(f"needs npm: {npm_available()}")
    monkeypatch.setenv("VF_AGENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # nothing listens there
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))  # nothing cached
    with pytest.raises(
        pytest.skip.Exception, match=r"npm registry is unreachable for @openai/codex"
    ):
        installed(CODEX)
    with pytest.raises(SandboxError, match=r"installing @openai/codex@0\.155\.1 with npm failed"):
        npm_agent(CODEX)
    assert not (tmp_path / "cache" / "codex-0.155.1").exists()  # nothing half-made is kept


def test_the_cli_harnesses_are_registered_built_ins() -> None:
    from verifiers.v1.harnesses import builtin_harness
    from verifiers.v1.utils.loaders import builtin_harness_ids, harness_config_type

    assert {"claude_code", "codex"} <= set(builtin_harness_ids())
    assert harness_config_type("claude-code") is ClaudeCodeHarnessConfig
    assert harness_config_type("codex") is CodexHarnessConfig
    built = builtin_harness("claude-code", {"max_turns": 5})
    assert isinstance(built, ClaudeCodeHarness) and built.config.max_turns == 5
    seat = vf.AgentConfig.model_validate({"harness": {"id": "codex", "version": "0.155.1"}})
    assert isinstance(seat.harness, CodexHarnessConfig)
    with pytest.raises(ValueError, match="give an exact release"):
        vf.AgentConfig.model_validate({"harness": {"id": "codex", "version": "latest"}})
