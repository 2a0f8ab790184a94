"""Program harnesses over the interception server: the ``bash`` harness runs a real multi-turn
tool rollout against the project's test server in the ``subprocess`` and ``bwrap`` runtimes;
each intercepted request is one sampled node with the server's token ids; stop hooks, the turn
cap and a failing program end the rollout as they should; runtimes run, read and write."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

import verifiers.v1 as vf
from verifiers.clients.native import NativeClient
from verifiers.clients.retry import RetryPolicy
from verifiers.sandbox.bwrap import bwrap_available
from verifiers.sandbox.docker import docker_available
from verifiers.testing import OpenAITestServer
from verifiers.v1.harnesses import BashHarness, BashHarnessConfig, ProgramHarness
from verifiers.v1.runtimes import BwrapConfig, DockerConfig, SubprocessConfig, make_runtime
from verifiers.v1.types import content_text

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")
needs_docker = pytest.mark.skipif(not docker_available(), reason="no docker engine runs here")
RUNTIMES = [
    pytest.param(SubprocessConfig(), id="subprocess"),
    pytest.param(BwrapConfig(), id="bwrap", marks=needs_bwrap),
    pytest.param(DockerConfig(), id="docker", marks=needs_docker),
]
TOKENS = {"extra_body": {"return_token_ids": True}, "logprobs": True}


def script(*calls: tuple[str, dict[str, Any]], final: str = "done") -> Callable[..., Any]:
    """The k-th model call (counted by the assistant messages the program sent) makes the k-th
    tool call; after them the model answers ``final``."""

    def respond(request: dict[str, Any]) -> Any:
        step = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if step < len(calls):
            name, args = calls[step]
            return {"tool_calls": [{"name": name, "arguments": args}]}
        return final

    return respond


class Data(vf.TaskData):
    marker: str = ""


class ShellTask(vf.Task[Data]):
    @vf.reward
    async def saw_marker(self, trace: vf.Trace) -> float:
        return float(any(self.data.marker in content_text(m.content) for m in trace.tool_messages))


class StopAfterOne(ShellTask):
    @vf.stop
    async def first_tool_call(self, trace: vf.Trace) -> bool:
        return trace.num_turns >= 1


class ShellTaskset(vf.Taskset[ShellTask, vf.TasksetConfig]):
    def load(self) -> list[ShellTask]:
        return [
            ShellTask(Data(idx=i, prompt=f"print m{i}", marker=f"m{i}"), self.config.task)
            for i in range(2)
        ]


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_bash_rollout_is_intercepted_turn_by_turn(runtime: Any) -> None:
    seen: list[dict[str, Any]] = []
    respond = script(
        ("bash", {"command": "echo marker-42 > note.txt"}),
        ("edit", {"path": "note.txt", "old_text": "42", "new_text": "43"}),
        ("bash", {"command": "cat note.txt"}),
    )

    def record(request: dict[str, Any]) -> Any:
        seen.append(request)
        return respond(request)

    task = ShellTask(Data(idx=0, prompt="edit the note", marker="marker-43"))
    async with OpenAITestServer(responder=record) as server:
        harness = BashHarness(BashHarnessConfig(runtime=runtime))
        agent = vf.Agent(server.base_url, "policy", harness=harness, sampling=TOKENS)
        trace = await agent.run(task)
    assert trace.ok, trace.errors
    assert trace.stop_condition == "agent_completed"
    assert trace.num_turns == 4 and len(seen) == 4
    assert trace.rewards["saw_marker"] == vf.Reward(score=1.0)
    roles = [m.role for m in trace.messages]
    assert roles == ["system", "user", *["assistant", "tool"] * 3, "assistant"]
    assert "bash tool" in content_text(trace.messages[0].content)
    assert [t.name for t in trace.tools] == ["bash", "edit"]
    assert content_text(trace.tool_messages[1].content) == "edited note.txt"
    sampled = [n for n in trace.nodes if n.sampled]
    assert all(n.completion_token_ids and n.prompt_token_ids for n in sampled)
    # what the program sent each time is what the trace holds before that reply
    last = seen[-1]["messages"]
    assert len(last) == len(trace.messages) - 1
    assert seen[0]["model"] == "policy" and seen[0]["tools"][0]["function"]["name"] == "bash"


async def test_env_runs_bash_by_name_with_default_runtime() -> None:
    def respond(request: dict[str, Any]) -> Any:
        prompt = request["messages"][1]["content"]
        marker = prompt.split()[-1]
        return script(("bash", {"command": f"echo {marker}"}))(request)

    env = vf.SingleAgentEnv(ShellTaskset(vf.TasksetConfig()), vf.AgentConfig(harness="bash"))
    async with OpenAITestServer(responder=respond) as server:
        episodes = await env.evaluate(server.base_url, "policy", max_concurrent=2)
    assert [e.traces[0].rewards["saw_marker"] for e in episodes] == [vf.Reward(score=1.0)] * 2
    assert all(e.ok for e in episodes)


def test_program_harnesses_are_registered_built_ins() -> None:
    from verifiers.v1.utils.loaders import builtin_harness_ids, harness_config_type

    assert {"bash", "mini_swe_agent", "null"} <= set(builtin_harness_ids())
    assert harness_config_type("bash") is BashHarnessConfig
    assert harness_config_type("mini-swe-agent") is vf.MiniSweAgentHarnessConfig
    harness = vf.harness_for("bash")
    assert isinstance(harness, BashHarness) and harness.config.id == "bash"
    # a seat's harness given by id or dict narrows to the harness's own config type
    seat = vf.AgentConfig.model_validate({"harness": {"id": "bash", "max_steps": 3}})
    assert isinstance(seat.harness, BashHarnessConfig) and seat.harness.max_steps == 3
    with pytest.raises(ValueError, match="max_stepz"):
        vf.AgentConfig.model_validate({"harness": {"id": "bash", "max_stepz": 3}})
    configured = vf.harness_for(BashHarnessConfig(edit=False))
    assert isinstance(configured, BashHarness) and configured.config.edit is False
    # an unpinned seat still runs the in-process chat loop
    assert isinstance(vf.Agent("http://127.0.0.1:1/v1", "m").harness, vf.NullHarness)


def test_program_runs_in_the_seats_runtime_unless_its_config_names_one() -> None:
    seat = vf.Agent("http://127.0.0.1:1/v1", "m", vf.AgentConfig(runtime={"type": "bwrap"}))
    assert BashHarness().runtime_config(seat) == BwrapConfig()
    pinned = BashHarness(BashHarnessConfig(runtime=SubprocessConfig(memory_mb=64)))
    assert pinned.runtime_config(seat) == SubprocessConfig(memory_mb=64)
    bare = vf.Agent("http://127.0.0.1:1/v1", "m")
    assert BashHarness().runtime_config(bare) == BwrapConfig()  # sandboxed unless named
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        vf.AgentConfig(runtime={"type": "vm"})  # a seat's runtime is chosen by its type


async def test_base_sandbox_labels_reach_every_started_runtime() -> None:
    from verifiers.v1.runtimes import base_sandbox_labels, set_base_sandbox_labels

    before = base_sandbox_labels()
    try:
        set_base_sandbox_labels(["run-7", "team=rl", "run-7"])
        assert base_sandbox_labels() == ["run-7", "team=rl"]
        runtime = make_runtime(SubprocessConfig(labels=["team=rl", "seat-a"]))
        async with runtime:
            assert runtime.labels == ["run-7", "team=rl", "seat-a"]
            assert runtime.sandbox.labels == runtime.labels
        set_base_sandbox_labels([])
        async with make_runtime(SubprocessConfig()) as bare:
            assert bare.labels == [] and bare.sandbox.labels == []
        with pytest.raises(ValueError, match="whitespace"):
            set_base_sandbox_labels(["two words"])
        with pytest.raises(TypeError, match="list of strings"):
            set_base_sandbox_labels("run-7")  # type: ignore[arg-type]
    finally:
        set_base_sandbox_labels(before)


@needs_docker
async def test_docker_container_carries_the_labels() -> None:
    import asyncio

    from verifiers.v1.runtimes import set_base_sandbox_labels

    set_base_sandbox_labels(["vf-test-run"])
    try:
        async with make_runtime(DockerConfig(labels=["seat=a"])) as runtime:
            container = runtime.sandbox._container  # type: ignore[attr-defined]
            proc = await asyncio.create_subprocess_exec(
                "docker", "inspect", "-f", "{{json .Config.Labels}}", container,
                stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, _ = await proc.communicate()
        labels = json.loads(out)
        assert labels["vf-test-run"] == "" and labels["seat"] == "a"
    finally:
        set_base_sandbox_labels([])


async def test_stop_hook_ends_the_program_early() -> None:
    task = StopAfterOne(Data(idx=0, prompt="go", marker="x"))
    respond = script(*[("bash", {"command": "echo again"})] * 5)
    async with OpenAITestServer(responder=respond) as server:
        agent = vf.Agent(server.base_url, "policy", harness=BashHarness())
        trace = await agent.run(task)
        assert server.stats.requests == 1
    assert trace.ok and trace.stop_condition == "first_tool_call"
    assert trace.num_turns == 1


async def test_max_turns_caps_the_program() -> None:
    task = ShellTask(Data(idx=0, prompt="go", marker="x"))
    respond = script(*[("bash", {"command": "true"})] * 5)
    async with OpenAITestServer(responder=respond) as server:
        agent = vf.Agent(
            server.base_url, "policy", vf.AgentConfig(max_turns=2), harness=BashHarness()
        )
        trace = await agent.run(task)
        assert server.stats.requests == 2
    assert trace.stop_condition == "max_turns" and trace.num_turns == 2


class ExitSeven(ProgramHarness):
    def command(self, task: Any, trace: Any, agent: Any) -> tuple[list[str], dict[str, str]]:
        return ["/bin/sh", "-c", "echo broken >&2; exit 7"], {}


async def test_failing_program_is_a_harness_error() -> None:
    task = ShellTask(Data(idx=0, prompt="go", marker="x"))
    async with OpenAITestServer(replies=["unused"]) as server:
        trace = await vf.Agent(server.base_url, "policy", harness=ExitSeven()).run(task)
    assert not trace.ok
    assert trace.errors[-1].type == "HarnessError"
    assert "status 7" in trace.errors[-1].message and "broken" in trace.errors[-1].message


async def test_model_failure_is_recorded_and_the_program_refused() -> None:
    task = ShellTask(Data(idx=0, prompt="go", marker="x"))
    async with OpenAITestServer(replies=["x"], fault_rate=1.0, fault_kinds=["500"]) as server:
        client = NativeClient(server.base_url, timeout=5.0, retry=RetryPolicy(max_retries=0))
        trace = await vf.Agent(client, "policy", harness=BashHarness()).run(task)
        await client.close()
    assert not trace.ok and trace.errors[-1].type == "ModelError"
    assert trace.num_turns == 0 and len(trace.calls) == 1


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_runtime_runs_reads_and_writes(runtime: Any) -> None:
    box = make_runtime(runtime)
    async with box:
        await box.write("data/in.json", json.dumps({"a": 1}))
        result = await box.run(
            ["python3", "-c", "import json;print(json.load(open('data/in.json'))['a'] + 1)"]
        )
        assert result.ok and result.stdout.strip() == "2"
        assert json.loads(await box.read("data/in.json")) == {"a": 1}
        failed = await box.run("exit 3")
        assert failed.exit_code == 3 and not failed.ok
    assert not box.running
    with pytest.raises(RuntimeError, match="not started"):
        await box.run("true")


@needs_bwrap
async def test_bwrap_runtime_hides_the_host() -> None:
    async with make_runtime(BwrapConfig()) as box:
        result = await box.run(["/bin/sh", "-c", "ls /work 2>&1; echo $?"])
    assert result.stdout.strip().splitlines()[-1] != "0"


@needs_bwrap
@pytest.mark.usefixtures("mini_swe_agent_dir")  # built on first use, not skipped when absent
async def test_mini_swe_agent_runs_in_bwrap_and_submits() -> None:
    submit = {
        "name": "bash",
        "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
    }

    def respond(request: dict[str, Any]) -> Any:
        step = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if step == 0:
            call = {"name": "bash", "arguments": {"command": "echo mini-marker"}}
            return {"content": "look", "tool_calls": [call]}
        return {"content": "done", "tool_calls": [submit]}

    task = ShellTask(Data(idx=0, prompt="print the marker", marker="mini-marker"))
    harness = vf.MiniSweAgentHarness(vf.MiniSweAgentHarnessConfig(runtime=BwrapConfig()))
    async with OpenAITestServer(responder=respond) as server:
        trace = await vf.Agent(server.base_url, "policy", harness=harness, sampling=TOKENS).run(
            task
        )
    assert trace.ok, trace.errors
    assert trace.stop_condition == "agent_completed" and trace.num_turns == 2
    assert trace.rewards["saw_marker"] == vf.Reward(score=1.0)
    assert "print the marker" in content_text(trace.messages[1].content)
    assert all(n.completion_token_ids for n in trace.nodes if n.sampled)


class TallyState(vf.State):
    count: int = 0


class Tally(vf.Toolset[vf.ToolsetConfig, TallyState]):
    TOOL_PREFIX = "tally"

    @vf.tool
    def bump(self) -> str:
        """Add one to the tally."""
        self.state.count += 1
        return f"tally={self.state.count}"


class TallyTask(vf.Task[vf.TaskData, TallyState]):
    @classmethod
    def toolsets(cls, config: vf.TaskConfig) -> list[vf.Toolset[Any, Any]]:
        return [Tally()]


async def test_program_harness_runs_task_toolsets_in_process() -> None:
    programs: list[list[dict[str, Any]]] = []

    def respond(request: dict[str, Any]) -> Any:
        names = [t["function"]["name"] for t in request.get("tools") or []]
        assert names == ["bash", "tally_bump"]
        done = [m.get("name") for m in request["messages"] if m["role"] == "tool"]
        if "tally_bump" not in done:
            return {"tool_calls": [{"name": "tally_bump", "arguments": {}}]}
        if "bash" not in done:
            return {"tool_calls": [{"name": "bash", "arguments": {"command": "echo shell"}}]}
        return "done"

    def record(request: dict[str, Any]) -> Any:
        programs.append(request["messages"])
        return respond(request)

    task = TallyTask(vf.TaskData(idx=0, prompt="count, then use the shell"))
    harness = BashHarness(BashHarnessConfig(edit=False))
    async with OpenAITestServer(responder=record) as server:
        trace = await vf.Agent(server.base_url, "policy", harness=harness).run(task)
    assert trace.ok, trace.errors
    assert isinstance(trace.state, TallyState) and trace.state.count == 1
    assert [m.role for m in trace.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert content_text(trace.tool_messages[0].content) == "tally=1"
    assert "shell" in content_text(trace.tool_messages[1].content)
    assert len(trace.nodes) == 7  # one branch: the hidden exchange is spliced back in
    # the model saw the toolset exchange on every later call
    assert [m.get("name") for m in programs[-1] if m["role"] == "tool"] == ["tally_bump", "bash"]


# sandboxed by default ---------------------------------------------------------------------


class _Listener:
    """A local HTTP service on the host's 127.0.0.1 (standing in for the hub or any local
    service) that counts the connections it gets."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: Any = None

    async def __aenter__(self) -> _Listener:
        import asyncio

        async def handle(reader: Any, writer: Any) -> None:
            self.connections += 1
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 15\r\n\r\nlistener-secret")
            await writer.drain()
            writer.close()

        self._server = await asyncio.start_server(handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        await self._server.wait_closed()


PROBE = (
    "import urllib.request\n"
    "try:\n"
    "    print(urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5).read().decode())\n"
    "except Exception as e:\n"
    "    print('unreachable', type(e).__name__)\n"
)


@pytest.mark.parametrize(
    ("runtime", "harmed"),
    [
        pytest.param(None, False, id="default", marks=needs_bwrap),
        pytest.param(SubprocessConfig(), True, id="subprocess-named"),
    ],
)
async def test_model_commands_cannot_reach_the_host_unless_subprocess_is_named(
    runtime: Any, harmed: bool, tmp_path: Any
) -> None:
    """The attack: a scripted model's bash calls read a host file outside the work dir (a
    stand-in for the hub's database), call a local HTTP service and report their uid. With no
    runtime set, all of it fails inside the sandbox; named ``subprocess`` (the control) it
    works, which shows the probe would see the harm."""
    import os
    import shlex

    secret = tmp_path / "hub.sqlite3"
    secret.write_text("hub-database-secret")
    async with _Listener() as listener:
        respond = script(
            ("bash", {"command": f"cat {shlex.quote(str(secret))}; echo status=$?"}),
            ("bash", {"command": f"python3 -c {shlex.quote(PROBE.format(port=listener.port))}"}),
            ("bash", {"command": "echo uid=$(id -u)"}),
        )
        task = ShellTask(Data(idx=0, prompt="look around", marker="x"))
        async with OpenAITestServer(responder=respond) as server:
            harness = BashHarness(BashHarnessConfig(runtime=runtime))
            trace = await vf.Agent(server.base_url, "policy", harness=harness).run(task)
    assert trace.ok, trace.errors
    read, fetched, uid = (content_text(m.content) for m in trace.tool_messages)
    assert ("hub-database-secret" in read) is harmed, read
    assert ("listener-secret" in fetched) is harmed, fetched
    assert (listener.connections > 0) is harmed
    assert (f"uid={os.getuid()}" in uid) is harmed, uid
    if not harmed:
        assert "status=1" in read and "unreachable" in fetched and "uid=1000" in uid


_OPT_IN = """
import asyncio, sys
import verifiers.v1 as vf
from verifiers.testing import OpenAITestServer
from verifiers.v1.harnesses import BashHarness, BashHarnessConfig
from verifiers.v1.runtimes import SubprocessConfig

def respond(request):
    if any(m["role"] == "assistant" for m in request["messages"]):
        return "done"
    return {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}

async def main():
    runtime = SubprocessConfig() if sys.argv[1] == "subprocess" else None
    async with OpenAITestServer(responder=respond) as server:
        for i in range(3):
            harness = BashHarness(BashHarnessConfig(runtime=runtime))
            task = vf.Task(vf.TaskData(idx=i, prompt="go"))
            trace = await vf.Agent(server.base_url, "m", harness=harness).run(task)
            assert trace.ok and trace.num_turns == 2, trace.errors

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("runtime", "lines"),
    [
        pytest.param("subprocess", 1, id="subprocess-named"),
        pytest.param("default", 0, id="default", marks=needs_bwrap),
    ],
)
def test_naming_subprocess_prints_one_warning_line(runtime: str, lines: int) -> None:
    """Three rollouts in a fresh process with no logging set up: naming ``subprocess`` prints
    exactly one line saying nothing is isolated (and no Python warning besides); the default
    runtime prints none."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _OPT_IN, runtime],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "default"},
    )
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "does not isolate" in line]
    assert len(warned) == lines, done.stderr
    assert "RuntimeWarning" not in done.stderr
    if lines:
        assert "runtime type 'subprocess'" in warned[0] and "network" in warned[0]
    # the default runtime says once that it is a local bwrap sandbox, not a hosted one
    noted = [line for line in done.stderr.splitlines() if "hosted sandbox" in line]
    assert len(noted) == 1 - lines, done.stderr
    if noted:
        assert "local bwrap sandbox" in noted[0]


def test_no_bubblewrap_says_how_to_get_it_or_how_to_opt_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import asyncio

    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    with pytest.raises(vf.HarnessError) as info:
        asyncio.run(make_runtime(BwrapConfig()).start())
    message = str(info.value)
    assert "apt-get install bubblewrap" in message
    assert "--env.<seat>.runtime.type subprocess" in message and "NO isolation" in message


async def test_a_program_over_the_interception_budget_is_a_harness_error() -> None:
    """Two bodies at once over the channel's byte budget: the second gets a 413 naming the
    limit, and the rollout ends as errored with that reason (not as completed)."""

    class Flood(ProgramHarness):
        def command(self, task: Any, trace: Any, agent: Any) -> tuple[list[str], dict[str, str]]:
            return ["python3", "-c", FLOOD_PROGRAM], {}

    task = ShellTask(Data(idx=0, prompt="go", marker="x"))
    async with OpenAITestServer(replies=["unused"]) as server:
        trace = await vf.Agent(server.base_url, "policy", harness=Flood()).run(task)
    assert not trace.ok
    error = trace.errors[-1]
    assert error.type == "HarnessError" and "max_channel_bytes" in error.message
    assert trace.num_turns == 0


#: two requests of 12 MiB at once on one channel (the default budget is 16 MiB): the first
#: one's body stops half way (it holds its 12 MiB of budget while it arrives), the second is
#: refused
FLOOD_PROGRAM = r"""
import json, os, socket, sys, threading, time
base = os.environ["OPENAI_BASE_URL"]
host, _, rest = base.partition("//")[2].partition("/")
h, p = host.split(":")
path = "/" + rest + "/chat/completions"
body = json.dumps({"messages": [{"role": "user", "content": "x" * (12 << 20)}]}).encode()
def send(out, part):
    s = socket.create_connection((h, int(p)))
    s.sendall(("POST %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (path, len(body))).encode())
    try:
        s.sendall(body[:part])
    except OSError:
        pass
    s.settimeout(30)
    try:
        out.append(s.recv(200).decode(errors="replace"))
    except OSError as e:
        out.append(type(e).__name__)
first = []
threading.Thread(target=send, args=(first, len(body) // 2), daemon=True).start()
time.sleep(0.5)
second = []
send(second, len(body))
print(second[0][:12], flush=True)
time.sleep(30)
"""


def test_an_unpinned_seat_runs_bash_in_bwrap_as_040_runs_it_hosted() -> None:
    from verifiers.v1.utils.loaders import default_harness_id

    assert default_harness_id("") == "bash"
    seat = vf.SingleAgentEnv(ShellTaskset(vf.TasksetConfig())).agents("http://h/v1", "m").agent
    assert isinstance(seat.harness, BashHarness)
    assert seat.harness.runtime_config(seat) == BwrapConfig()
    pinned = vf.SingleAgentEnv(ShellTaskset(vf.TasksetConfig()), vf.AgentConfig(harness="null"))
    assert pinned.agents("http://h/v1", "m").agent.harness.name == "null"


@needs_bwrap
async def test_an_interaction_keeps_one_workspace_across_bash_turns() -> None:
    """Each user turn relaunches the program; the file the first turn wrote is there for the
    second, since the rollout owns one runtime."""

    def respond(request: dict[str, Any]) -> Any:
        user_turns = sum(1 for m in request["messages"] if m["role"] == "user")
        last = request["messages"][-1]
        if last["role"] == "tool":
            return f"saw: {last['content']}"
        command = "echo kept > k.txt" if user_turns == 1 else "cat k.txt"
        return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}

    task = ShellTask(Data(idx=0, prompt="write it", marker="kept"))
    async with OpenAITestServer(responder=respond) as server:
        agent = vf.Agent(server.base_url, "policy", harness=BashHarness(BashHarnessConfig()))
        async with agent.interaction(task) as chat:
            first = await chat.turn()
            second = await chat.turn("now read it")
    trace = chat.trace
    assert trace.ok, trace.errors
    assert "exit code 0" in first.last_reply and second.last_reply.startswith("saw: exit code 0")
    assert "kept" in second.last_reply
    assert trace.stop_condition == "user_closed"
