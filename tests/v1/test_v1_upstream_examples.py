"""What upstream 0.4.0's own example environments (its ``environments/`` folder) rely on, each
case written here in the shape the example uses: hooks bound by name and type (``setup`` and
rewards asking for the ``runtime``), ``@vf.intercept`` and response stops at the model
boundary, the names and modules they import, the command line (``-n`` beside an env field named
``n``, a seat's ``runtime.type``), ``traces.jsonl`` and the ``agent_completed`` stop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import verifiers.v1 as vf
from verifiers.testing import OpenAITestServer
from verifiers.v1.types import content_text

# -- hooks receive the runtime (gsm8k's setup, code-golf's metric) --------------------------


class GolfData(vf.TaskData):
    expected: str


class GolfTask(vf.Task[GolfData]):
    """As upstream's gsm8k and code-golf: ``setup(self, runtime)`` (no trace) and a metric
    that runs the model's program in the runtime with ``run(argv, env)``."""

    async def setup(self, runtime: vf.Runtime) -> None:  # type: ignore[override]
        await runtime.write("marker.txt", b"set up")

    @vf.metric
    async def evaluate(self, trace: vf.Trace, runtime: vf.Runtime) -> dict[str, float]:
        await runtime.write("solution.py", (trace.last_reply or "").encode())
        result = await runtime.run(["python3", "solution.py"], {})  # type: ignore[call-arg]
        marker = await runtime.read("marker.txt")
        passed = result.exit_code == 0 and result.stdout.strip() == self.data.expected
        return {"passed": float(passed), "setup_ran": float(marker == b"set up")}

    @vf.reward
    async def correct(self, trace: vf.Trace) -> float:
        return trace.metrics.get("passed") or 0.0


async def test_setup_and_metrics_that_name_runtime_get_the_rollouts_runtime() -> None:
    task = GolfTask(GolfData(idx=0, prompt="print 5050", expected="5050"))
    async with OpenAITestServer(responder=lambda _: "print(sum(range(101)))") as server:
        trace = await vf.Agent(server.base_url, "m").run(task)
    assert trace.ok, trace.errors
    assert trace.metrics == {"passed": 1.0, "setup_ran": 1.0}
    assert trace.reward == 1.0


class OfflineTask(vf.Task[vf.TaskData]):
    @vf.reward
    async def needs_box(self, trace: vf.Trace, runtime: vf.Runtime) -> float:
        return 1.0

    @vf.reward
    async def plain(self, trace: vf.Trace) -> float:
        return 0.5


async def test_scoring_without_a_runtime_leaves_out_what_needs_one() -> None:
    # as 0.4.0's Task.score(trace) offline: the runtime-bound reward is not run (nor seeded)
    task = OfflineTask(vf.TaskData(idx=0, prompt="x"))
    trace = vf.Agent("http://127.0.0.1:9", "m").new_trace(task)
    await task.score(trace)
    assert set(trace.rewards) == {"plain"} and trace.reward == 0.5


async def test_hooks_bind_by_annotation_where_values_are_offered_by_type() -> None:
    from verifiers.v1.decorators import call_hook

    seen: list[Any] = []

    def hook(candidate: vf.Response, history: vf.Trace) -> None:
        seen.extend([candidate, history])

    response = vf.Response(
        id="r", created=0, model="m", message=vf.AssistantMessage(content="hi"), finish_reason=None
    )
    await call_hook(hook, {vf.Response: response, vf.Trace: "the trace"})
    assert seen == [response, "the trace"]


# -- @vf.intercept and response stops (upstream's interception example) ---------------------


class InterceptTask(vf.Task[vf.TaskData]):
    @vf.stop
    def stop_guard(self, response: vf.Response) -> bool:
        return "STOP" in (response.message.content or "")

    @vf.intercept(priority=10)
    def block(self, response: vf.Response) -> vf.Response | None:
        if "BLOCK" in (response.message.content or ""):
            return response.model_copy(update={"message": vf.AssistantMessage(content="Blocked")})
        return None

    @vf.intercept
    def metric_only(self, response: vf.Response, trace: vf.Trace) -> None:
        if "METRIC" in (response.message.content or ""):
            trace.record_metric("response/metric_only", 1.0)

    @vf.reward
    async def changed(self, trace: vf.Trace) -> float:
        return float(
            bool(trace.response_rewrites)
            or trace.stop_condition == "stop_guard"
            or "response/metric_only" in trace.metrics
        )


@pytest.mark.parametrize(
    ("reply", "recorded", "stop", "rewrites"),
    [
        ("BLOCK", "Blocked", "agent_completed", ["block"]),
        ("STOP now", "STOP now", "stop_guard", []),
        ("METRIC", "METRIC", "agent_completed", []),
    ],
)
async def test_response_interceptors_and_stops_run_before_the_reply_is_recorded(
    reply: str, recorded: str, stop: str, rewrites: list[str]
) -> None:
    task = InterceptTask(vf.TaskData(idx=0, prompt="go"))
    async with OpenAITestServer(responder=lambda _: reply) as server:
        trace = await vf.Agent(server.base_url, "m").run(task)
    assert trace.ok, trace.errors
    assert trace.last_reply == recorded and trace.stop_condition == stop
    assert [r.handler for r in trace.response_rewrites] == rewrites
    assert trace.reward == 1.0
    assert json.loads(trace.model_dump_json())["response_rewrites"] == [
        {"handler": h} for h in rewrites
    ]


class GrayTask(vf.Task[vf.TaskData]):
    """As upstream's grayscale-interception: rewrite the new user message's image part."""

    @vf.intercept
    def grayscale(self, request: vf.Request) -> vf.Request | None:
        message = request.messages[-1]
        if not isinstance(message, vf.UserMessage) or not isinstance(message.content, list):
            return None
        parts: list[vf.ContentPart] = [
            p.model_copy(update={"image_url": vf.ImageUrlSource(url="data:image/png;base64,R")})
            if isinstance(p, vf.ImageUrlContentPart)
            else p
            for p in message.content
        ]
        messages = [*request.messages[:-1], message.model_copy(update={"content": parts})]
        return request.model_copy(update={"messages": messages})

    @vf.reward
    async def changed(self, trace: vf.Trace) -> float:
        return float(bool(trace.request_rewrites))


async def test_request_interceptors_rewrite_the_prompt_before_the_model_sees_it() -> None:
    from verifiers.v1.utils.image import image_data_url

    class Png:
        def save(self, buffer: Any, format: str) -> None:
            buffer.write(b"png")

    prompt = [
        vf.UserMessage(
            content=[
                vf.ImageUrlContentPart(image_url=vf.ImageUrlSource(url=image_data_url(Png()))),
                vf.TextContentPart(text="Describe this image."),
            ]
        )
    ]
    seen: list[dict[str, Any]] = []

    def respond(request: dict[str, Any]) -> str:
        seen.append(request)
        return "orange"

    async with OpenAITestServer(responder=respond) as server:
        trace = await vf.Agent(server.base_url, "m").run(
            GrayTask(vf.TaskData(idx=0, prompt=prompt))
        )
    assert trace.ok, trace.errors and trace.reward == 1.0
    assert [r.handler for r in trace.request_rewrites] == ["grayscale"]
    sent = seen[0]["messages"][-1]["content"][0]["image_url"]["url"]
    assert sent == "data:image/png;base64,R"
    assert image_data_url(Png()) == "data:image/png;base64,cG5n"


class ToolRewriteTask(vf.Task[vf.TaskData]):
    @classmethod
    def toolsets(cls, config: Any) -> list[Any]:
        return [EchoToolset()]

    @vf.intercept
    def redact(self, request: vf.Request) -> vf.Request | None:
        last = request.messages[-1]
        if not isinstance(last, vf.ToolMessage):
            return None
        blocked = last.model_copy(update={"content": "This request is blocked."})
        return request.model_copy(update={"messages": [*request.messages[:-1], blocked]})


class EchoToolset(vf.Toolset):
    @vf.tool
    async def echo(self, text: str) -> str:
        """Echo text."""
        return text


async def test_tool_results_pass_the_request_interceptors() -> None:
    def respond(request: dict[str, Any]) -> Any:
        if request["messages"][-1]["role"] == "user":
            return {"tool_calls": [{"name": "echo_echo", "arguments": {"text": "secret"}}]}
        return "done"

    async with OpenAITestServer(responder=respond) as server:
        trace = await vf.Agent(server.base_url, "m").run(
            ToolRewriteTask(vf.TaskData(idx=0, prompt="x"))
        )
    assert trace.ok, trace.errors
    assert [content_text(m.content) for m in trace.tool_messages] == ["This request is blocked."]
    assert [r.handler for r in trace.request_rewrites] == ["redact"]


def test_a_stop_watching_two_boundaries_is_refused() -> None:
    from verifiers.v1.decorators import hook_boundary

    def both(request: vf.Request, response: vf.Response) -> bool:
        return True

    with pytest.raises(TypeError, match="exactly one"):
        hook_boundary(both, allow_trace=True)


# -- the names the examples import -------------------------------------------------------


def test_the_names_upstreams_examples_import_resolve() -> None:
    import verifiers.v1.utils.image as image

    assert vf.ID is str and vf.Request.model_fields.keys() >= {"messages", "tools"}
    assert image.ContentPart is vf.ContentPart and image.TextContentPart is vf.TextContentPart
    assert issubclass(vf.SharedToolsetConfig, vf.ToolsetConfig)
    assert callable(vf.intercept) and getattr(vf.intercept(lambda r: r), "intercept", False)
    from verifiers.v1.clients import ModelContext  # the compact harness's import

    assert ModelContext is vf.ModelContext


# -- the command line ----------------------------------------------------------------------


def test_dash_n_is_select_limit_even_beside_an_env_field_named_n(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "fixtures"))
    # proposer-solver's env config has a field ``n``; 0.4.0 reads -n as --select.limit
    from verifiers.v1.cli.flags import parse_config_argv
    from verifiers.v1.configs.cli.eval import EvalConfig

    config = parse_config_argv(
        EvalConfig,
        ["two-seats-v1", "-n", "2", "--env.n", "3", "-r", "2", "-s",
         "--env.b.runtime.type", "bwrap", "--env.b.runtime.memory-mb", "512"],
    )  # fmt: skip
    assert config.select.limit == 2 and config.select.shuffle is True
    assert config.env.n == 3 and config.num_rollouts == 2  # type: ignore[attr-defined]
    runtime = config.env.b.runtime  # type: ignore[attr-defined]
    assert type(runtime).__name__ == "BwrapConfig" and runtime.memory_mb == 512


def test_an_ambiguous_short_flag_is_an_error_naming_both() -> None:
    from pydantic import AliasChoices, BaseModel, Field

    from verifiers.errors import ConfigError
    from verifiers.v1.cli.flags import parse_config_argv

    class A(BaseModel):
        limit: int = Field(0, validation_alias=AliasChoices("limit", "n"))

    class B(BaseModel):
        count: int = Field(0, validation_alias=AliasChoices("count", "n"))

    class Both(BaseModel):
        a: A = A()
        b: B = B()

    with pytest.raises(ConfigError, match=r"-n is ambiguous.*--a\.limit and of --b\.count"):
        parse_config_argv(Both, ["-n", "2"], positional=("x",))


def test_a_seat_runtime_is_a_config_chosen_by_type() -> None:
    from pydantic import ValidationError

    assert vf.AgentConfig().runtime is None
    assert type(vf.AgentConfig(runtime={"type": "docker"}).runtime).__name__ == "DockerConfig"
    with pytest.raises(ValidationError):
        vf.AgentConfig(runtime={"type": "vm"})


# -- a taskset's shared toolsets (upstream's scratchpad) -------------------------------------


class PadState(vf.State):
    slot: str = ""


class PadToolset(vf.Toolset[vf.SharedToolsetConfig, PadState]):
    TOOL_PREFIX = "pad"
    built = 0

    def __init__(self, config: vf.SharedToolsetConfig) -> None:
        super().__init__(config)
        PadToolset.built += 1

    @vf.tool
    async def roundtrip(self, word: str) -> str:
        """Store the word, then read it back."""
        self.state.slot = word
        return self.state.slot


class PadData(vf.TaskData):
    word: str


class PadTask(vf.Task[PadData, PadState]):
    @vf.reward
    async def isolated(self, trace: vf.Trace) -> float:
        return float(self.data.word in (trace.last_reply or ""))


class PadTaskset(vf.Taskset[PadTask, vf.TasksetConfig]):
    @classmethod
    def toolsets(cls, config: vf.TasksetConfig) -> list[vf.Toolset]:
        return [PadToolset(vf.SharedToolsetConfig())]

    def load(self) -> list[PadTask]:
        return [PadTask(PadData(idx=i, word=w, prompt=f"word={w}")) for i, w in enumerate("ab")]


async def test_a_tasksets_toolsets_are_shared_by_its_tasks() -> None:
    from verifiers.clients.native import NativeClient

    def respond(request: dict[str, Any]) -> Any:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return f"got {last['content']}"
        word = last["content"].split("=")[1]
        return {"tool_calls": [{"name": "pad_roundtrip", "arguments": {"word": word}}]}

    PadToolset.built = 0
    async with OpenAITestServer(responder=respond) as server:
        client = NativeClient(server.base_url)
        episodes = await vf.SingleAgentEnv(PadTaskset()).evaluate(client, "m")
        await client.close()
    assert [e.traces[0].reward for e in episodes] == [1.0, 1.0]
    assert [e.traces[0].state.slot for e in episodes] == ["a", "b"]  # per-rollout state
    assert PadToolset.built == 1  # one instance for the taskset


# -- errors: 0.4.0's stop conditions and the env's own failure --------------------------------


class FailingRewardTask(vf.Task[vf.TaskData]):
    @vf.reward
    async def broken(self, trace: vf.Trace) -> float:
        raise ValueError("no grade")


async def test_a_failure_leaves_0_4_0s_stop_condition() -> None:
    async with OpenAITestServer(responder=lambda _: "hi") as server:
        trace = await vf.Agent(server.base_url, "m").run(
            FailingRewardTask(vf.TaskData(idx=0, prompt="x"))
        )
    # the run had ended (agent_completed) before scoring failed: the first stop stands
    assert not trace.ok and trace.stop_condition == "agent_completed"
    from verifiers.v1.errors import ModelError, TaskError, V1Error
    from verifiers.v1.trace import error_stop_condition

    assert error_stop_condition(TaskError("x")) == "task_error"
    assert error_stop_condition(ModelError("x")) == "provider_error"
    assert error_stop_condition(V1Error("x")) == "rollout_error"
    assert error_stop_condition(ValueError("x")) == "error"
    bare = vf.Agent("http://127.0.0.1:9", "m").new_trace(FailingRewardTask(vf.TaskData(idx=0)))
    bare.record_error(TaskError("response interception failed"))
    assert bare.stop_condition == "task_error"


class Raising(vf.SingleAgentEnv):
    async def run(self, task: Any, agents: vf.Agents) -> None:
        await agents.agent.run(task)
        raise ValueError("proposer did not end with the JSON contract")


async def test_an_envs_own_failure_is_an_env_error_naming_its_stage() -> None:
    from verifiers.clients.native import NativeClient

    async with OpenAITestServer(responder=lambda _: "hi") as server:
        client = NativeClient(server.base_url)
        (episode,) = await Raising(PadTaskset().take(1)).evaluate(client, "m")
        await client.close()
    assert not episode.ok and episode.errors[0].type == "EnvError"
    assert episode.errors[0].message == (
        "Raising.run(): ValueError: proposer did not end with the JSON contract"
    )


# -- vf-eval on a task whose prompt mixes a system prompt and an image message ----------------


class ImageTaskset(vf.Taskset[vf.Task[vf.TaskData], vf.TasksetConfig]):
    def load(self) -> list[vf.Task[vf.TaskData]]:
        part = vf.ImageUrlContentPart(image_url=vf.ImageUrlSource(url="data:image/png;base64,A"))
        prompt = [vf.UserMessage(content=[part, vf.TextContentPart(text="What colour?")])]
        return [vf.Task(vf.TaskData(idx=0, prompt=prompt, system_prompt="Be brief."))]


def test_the_classic_bridge_takes_a_system_prompt_beside_an_image_message() -> None:
    from verifiers.v1.bridge import V1Environment

    env = V1Environment(vf.SingleAgentEnv(ImageTaskset()))
    (row,) = list(env.get_eval_dataset())
    system, user = row["prompt"]  # (a dataset column fills each part's absent keys with None)
    assert system["role"] == "system"
    assert [(p["type"], p["text"]) for p in system["content"]] == [("text", "Be brief.")]
    assert [p["type"] for p in user["content"]] == ["image_url", "text"]


# -- a response stop in a program harness (upstream's bash-interception, its stop case) -------


class StopBashTask(vf.Task[vf.TaskData]):
    @vf.stop
    def stop_bash(self, response: vf.Response) -> bool:
        calls = response.message.tool_calls or []
        return any(c.name == "bash" and "touch" in c.arguments for c in calls)

    @vf.reward
    async def rewritten(self, trace: vf.Trace, runtime: vf.Runtime) -> float:
        executed = (await runtime.run(["test", "-e", "ran"], {})).exit_code == 0  # type: ignore[call-arg]
        return float(not executed and trace.stop_condition == "stop_bash")


async def test_a_response_stop_ends_a_program_harness_run_before_its_program_acts() -> None:
    def respond(request: dict[str, Any]) -> Any:
        if any(m["role"] == "tool" for m in request["messages"]):
            return "done"
        return {"tool_calls": [{"name": "bash", "arguments": {"command": "touch ran"}}]}

    seat = vf.AgentConfig(harness=vf.BashHarnessConfig(), runtime={"type": "subprocess"})  # type: ignore[arg-type]
    async with OpenAITestServer(responder=respond) as server:
        trace = await vf.Agent(server.base_url, "m", seat).run(
            StopBashTask(vf.TaskData(idx=0, prompt="Use bash to run `touch ran`."))
        )
    assert trace.stop_condition == "stop_bash" and trace.tool_messages == []
    assert trace.reward == 1.0


# -- request interceptors in a program harness (upstream's bash-interception, its rewrite case) -


def _blocked(request: vf.Request, marker: str) -> vf.Request | None:
    """The request with its last message, an empty (not yet run) result of a bash call whose
    command holds ``marker``, replaced by a refusal; None where it is anything else."""
    last = request.messages[-1] if request.messages else None
    if not isinstance(last, vf.ToolMessage) or last.content:
        return None
    for message in request.messages:
        if isinstance(message, vf.AssistantMessage):
            for call in message.tool_calls or []:
                if call.id == last.tool_call_id and marker in call.arguments:
                    refusal = last.model_copy(update={"content": "This request is blocked."})
                    return request.model_copy(
                        update={"messages": [*request.messages[:-1], refusal]}
                    )
    return None


class RewriteBashTask(vf.Task[vf.TaskData]):
    @vf.intercept
    def rewrite_git(self, request: vf.Request) -> vf.Request | None:
        return _blocked(request, "ran")

    @vf.reward
    async def rewritten(self, trace: vf.Trace, runtime: vf.Runtime) -> float:
        executed = (await runtime.run(["test", "-e", "ran"], {})).exit_code == 0  # type: ignore[call-arg]
        last = trace.tool_messages[-1].content if trace.tool_messages else ""
        return float(not executed and "blocked" in str(last) and trace.num_turns == 2)


def _bash_then_answer(seen: list[dict[str, Any]], *commands: str) -> Any:
    def respond(request: dict[str, Any]) -> Any:
        seen.append(request)
        done = sum(1 for m in request["messages"] if m["role"] == "tool")
        if done < len(commands):
            return {"tool_calls": [{"name": "bash", "arguments": {"command": commands[done]}}]}
        return "something"

    return respond


async def test_a_request_interceptor_supplies_a_bash_result_in_place_of_running_it() -> None:
    seen: list[dict[str, Any]] = []
    seat = vf.AgentConfig(harness=vf.BashHarnessConfig(), runtime={"type": "subprocess"})  # type: ignore[arg-type]
    async with OpenAITestServer(responder=_bash_then_answer(seen, "touch ran")) as server:
        trace = await vf.Agent(server.base_url, "m", seat).run(
            RewriteBashTask(vf.TaskData(idx=0, prompt="Use bash to run `touch ran`."))
        )
    assert trace.ok, trace.errors
    assert trace.stop_condition == "agent_completed"
    assert [r.handler for r in trace.request_rewrites] == ["rewrite_git"]
    assert seen[-1]["messages"][-1]["content"] == "This request is blocked."
    assert trace.reward == 1.0  # the command never ran


class NoGateBash(vf.BashHarness):
    SUPPORTS_TOOL_INTERCEPTION = False


async def test_a_pre_execution_rewrite_ends_a_rollout_whose_program_cannot_honour_it() -> None:
    seen: list[dict[str, Any]] = []
    seat = vf.AgentConfig(runtime={"type": "subprocess"})  # type: ignore[arg-type]
    async with OpenAITestServer(responder=_bash_then_answer(seen, "touch ran")) as server:
        agent = vf.Agent(server.base_url, "m", seat, harness=NoGateBash())
        trace = await agent.run(RewriteBashTask(vf.TaskData(idx=0, prompt="run `touch ran`")))
    assert trace.stop_condition == "rewrite_git"
    assert trace.reward == 0.0 and len(seen) == 1


class RedactTask(vf.Task[vf.TaskData]):
    @vf.intercept
    def redact(self, request: vf.Request) -> vf.Request | None:
        last = request.messages[-1]
        if isinstance(last, vf.ToolMessage) and "SECRET" in str(last.content):
            clean = last.model_copy(update={"content": str(last.content).replace("SECRET", "[x]")})
            return request.model_copy(update={"messages": [*request.messages[:-1], clean]})
        return None

    @vf.stop
    def too_many(self, request: vf.Request) -> bool:
        return sum(isinstance(m, vf.ToolMessage) for m in request.messages) > 2


async def test_a_rewritten_tool_result_is_what_the_model_sees_on_every_later_request() -> None:
    # the program keeps its own copy of the output and sends it again each turn: the model
    # and the trace get the rewritten one each time, on one branch
    seen: list[dict[str, Any]] = []
    seat = vf.AgentConfig(harness=vf.BashHarnessConfig(), runtime={"type": "subprocess"})  # type: ignore[arg-type]
    respond = _bash_then_answer(seen, "echo SECRET", "echo fine")
    async with OpenAITestServer(responder=respond) as server:
        trace = await vf.Agent(server.base_url, "m", seat).run(
            RedactTask(vf.TaskData(idx=0, prompt="echo twice"))
        )
    assert trace.ok, trace.errors
    results = [m for r in seen for m in r["messages"] if m["role"] == "tool"]
    assert len(seen) == 3 and results and all("SECRET" not in m["content"] for m in results)
    assert "[x]" in str(seen[-1]["messages"][-3]["content"])
    assert [r.handler for r in trace.request_rewrites] == ["redact"]
    assert len(trace.branches) == 1 and trace.stop_condition == "agent_completed"


async def test_a_request_stop_ends_a_program_harness_run() -> None:
    seen: list[dict[str, Any]] = []
    seat = vf.AgentConfig(harness=vf.BashHarnessConfig(), runtime={"type": "subprocess"})  # type: ignore[arg-type]
    respond = _bash_then_answer(seen, "echo a", "echo b", "echo c")
    async with OpenAITestServer(responder=respond) as server:
        trace = await vf.Agent(server.base_url, "m", seat).run(
            RedactTask(vf.TaskData(idx=0, prompt="echo thrice"))
        )
    assert trace.stop_condition == "too_many"
    assert len(seen) == 3  # the third result's request never reached the model
