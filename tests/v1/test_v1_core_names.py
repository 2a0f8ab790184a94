"""0.4.0's core ``verifiers.v1`` names built here, each asserted to behave as 0.4.0's does
(error attribution and stop names, network rules, retry statuses, timeouts, plugged functions,
trace records and stores, the msgpack encoder, scoring helpers, config merging)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgpack
import numpy as np
import openai
import pytest
from pydantic import TypeAdapter, ValidationError

import verifiers
import verifiers.v1 as vf
from verifiers.clients.native import NativeClient
from verifiers.clients.retry import RetryPolicy
from verifiers.v1.configs import DecoratedFunctionConfig, RewardFunctionConfig
from verifiers.v1.configs.agent import AgentTimeoutConfig
from verifiers.v1.configs.agent import TimeoutConfig as AgentTimeout
from verifiers.v1.configs.env import EnvTimeoutConfig
from verifiers.v1.configs.env import TimeoutConfig as EnvTimeout
from verifiers.v1.configs.harness import PinnedVersion, SkillSource, skill_destination
from verifiers.v1.configs.retries import RetryRule
from verifiers.v1.configs.runtime import intersect_network_hosts, parse_network_rule
from verifiers.v1.errors import (
    MODEL_TRANSPORT_ERROR_EXIT_CODE,
    ModelError,
    ProviderError,
    RolloutError,
    SandboxError,
    TaskError,
    boundary,
    model_error,
    stop_condition,
)
from verifiers.v1.graph import RECORD_FLOAT_DECIMALS, MessageNode
from verifiers.v1.rollout import RolloutTimeouts
from verifiers.v1.serve.encoding import TENSOR_TAG, msgpack_encoder
from verifiers.v1.state import state_cls
from verifiers.v1.trace import EXCLUDE_FIELDS, Branch, ModelCall, min_new_input_tokens
from verifiers.v1.types import SamplingMask, TextContentPart, Usage, content_to_parts
from verifiers.v1.utils.loaders import file_module, load_plugged_fn, plugged_fn
from verifiers.v1.utils.trace_store import (
    append_episode,
    append_trace,
    read_episodes,
    type_adapter,
)

# errors


def test_stop_condition_names_the_boundary_an_error_crossed() -> None:
    assert stop_condition(SandboxError("x")) == "sandbox_error"
    assert stop_condition(TaskError("x")) == "task_error"
    assert stop_condition(ProviderError("x")) == "provider_error"
    assert stop_condition(RolloutError("x")) == "rollout_error"
    assert stop_condition(ValueError("x")) == "error"
    assert MODEL_TRANSPORT_ERROR_EXIT_CODE == 97


def test_model_error_carries_the_status_a_harness_sdk_retries_on() -> None:
    request: Any = httpx.Request("POST", "http://model")
    response: Any = httpx.Response(429, request=request)
    limited = openai.RateLimitError("slow down", response=response, body=None)
    cases: list[tuple[BaseException | str, int, str]] = [
        (openai.APITimeoutError(request=request), 504, "Request timed out."),
        (openai.APIConnectionError(request=request), 503, "Connection error."),
        (limited, 429, "slow down"),
        ("the provider's body", 502, "the provider's body"),
    ]
    for error, status, text in cases:
        made = model_error(error)
        assert isinstance(made, ProviderError) and made.status_code == status
        assert str(made) == text
    assert model_error("x", status_code=418).status_code == 418
    assert ModelError("x").status_code == 502


async def test_boundary_attributes_escaping_errors_and_passes_typed_ones() -> None:
    with pytest.raises(TaskError, match=r"^setup: KeyError: 'k'$") as caught:
        async with boundary(TaskError, "setup"):
            raise KeyError("k")
    assert isinstance(caught.value.__cause__, KeyError)
    with pytest.raises(TaskError, match=r"^setup timed out$"):
        async with boundary(TaskError, "setup"):
            raise TimeoutError
    sandbox = SandboxError("exec failed")
    with pytest.raises(SandboxError) as passed:
        async with boundary(TaskError, "reward"):
            raise sandbox
    assert passed.value is sandbox


async def test_a_failed_model_call_records_the_transport_status() -> None:
    class Data(vf.TaskData):
        pass

    client = NativeClient("http://127.0.0.1:9", retry=RetryPolicy(max_retries=0))
    seat = vf.Agent(client, "toy", vf.AgentConfig(harness=vf.HarnessConfig(id="null")))
    try:
        trace = await asyncio.wait_for(seat.run(vf.Task(Data(prompt="hi"))), 60)
    finally:
        await client.close()
    assert trace.stop_condition == "provider_error"
    assert trace.errors[-1].type == "ModelError" and trace.errors[-1].status_code == 503


# network rules and retry statuses


def test_parse_network_rule_reads_hosts_ports_and_url_origins() -> None:
    cases = {
        "example.com": ("", "", "example.com", None),
        "Example.COM.": ("", "", "example.com", None),
        "example.com:8443": ("", "", "example.com", 8443),
        "https://api.example.com": ("https", "", "api.example.com", 443),
        "http://api.example.com/path": ("http", "/path", "api.example.com", 80),
        "wss://x.org": ("wss", "", "x.org", 80),
        "*.example.com": ("", "", "*.example.com", None),
        "[::1]:80": ("", "", "::1", 80),
        "10.0.0.0/8": ("", "/8", "10.0.0.0", None),
    }
    for rule, (scheme, path, host, port) in cases.items():
        url, got_host, got_port = parse_network_rule(rule)
        assert (url.scheme, url.path, got_host, got_port) == (scheme, path, host, port), rule
    with pytest.raises(ValueError):
        parse_network_rule("example.com:notaport")


def test_intersect_network_hosts_keeps_the_narrower_or_refuses_unprovable_globs() -> None:
    assert intersect_network_hosts("*", "api.x.com") == "api.x.com"
    assert intersect_network_hosts("api.x.com", "*") == "api.x.com"
    assert intersect_network_hosts("*.x.com", "api.x.com") == "api.x.com"
    assert intersect_network_hosts("api.x.com", "*.x.com") == "api.x.com"
    assert intersect_network_hosts("*.x.com", "*.a.x.com") == "*.a.x.com"
    assert intersect_network_hosts("*.x.com", "api*.x.com") == "api*.x.com"
    assert intersect_network_hosts("same", "same") == "same"
    assert intersect_network_hosts("a.x.com", "b.x.com") == ""
    assert intersect_network_hosts("*.x.com", "x.com") == ""
    for left, right in [("api*.x.com", "*.y.com"), ("a?.com", "b*.com")]:
        with pytest.raises(ValueError, match="cannot intersect"):
            intersect_network_hosts(left, right)


def test_retry_rules_take_status_codes_and_classes_only() -> None:
    assert RetryRule(status_code=[429, "5xx"], max_retries=1).status_code == [429, "5xx"]
    bad_codes: list[Any] = [[99], [600], [True], ["429"], ["6xx"]]
    for bad in bad_codes:
        with pytest.raises(ValidationError):
            RetryRule(status_code=bad, max_retries=1)


# configs


def test_timeout_configs_are_0_4_0s_names() -> None:
    assert AgentTimeoutConfig is AgentTimeout and EnvTimeoutConfig is EnvTimeout
    assert vf.AgentConfig().timeout == AgentTimeout()
    assert vf.EnvConfig.model_fields["timeout"].annotation is EnvTimeout


def test_a_task_timeout_fills_the_stages_the_seat_leaves_unset() -> None:
    class Data(vf.TaskData):
        pass

    task = vf.Task(Data(prompt="x", timeout=vf.TaskTimeout(setup=5, agent=6, scoring=7)))
    timeouts = RolloutTimeouts.from_config(AgentTimeout(rollout=1.5), task)
    assert timeouts == RolloutTimeouts(setup=5, agent=1.5, finalize=None, scoring=7)
    assert RolloutTimeouts.from_config(AgentTimeout()) == RolloutTimeouts()
    with pytest.raises(ValidationError):  # frozen, like the task data it sits on
        task.data.timeout.setup = 1  # type: ignore[misc]


async def test_a_task_agent_timeout_stops_the_rollout() -> None:
    class Data(vf.TaskData):
        pass

    class Slow(vf.Harness[vf.NullHarnessConfig]):
        def __init__(self) -> None:
            super().__init__(vf.NullHarnessConfig())

        async def run(self, task: Any, trace: vf.Trace, agent: Any) -> bool:
            trace.append(vf.AssistantMessage(content="thinking"), sampled=True)
            await asyncio.sleep(30)
            return True

    seat = vf.Agent("http://127.0.0.1:9", "toy", vf.AgentConfig(), harness=Slow())
    task = vf.Task(Data(prompt="hi", timeout=vf.TaskTimeout(agent=0.2)))
    trace = await asyncio.wait_for(seat.run(task), 10)
    assert trace.stop_condition == "agent_timeout" and trace.is_timeout


def test_pinned_versions_and_skill_sources() -> None:
    pinned: TypeAdapter[str] = TypeAdapter(PinnedVersion)
    for good in ("2.1.278", "0.155.1", "v1.0.0-rc.1+build", "latest"):
        assert pinned.validate_python(good) == good
    for bad in ("1.0 && rm -rf /", "", "^1.0", "1.0/evil"):
        with pytest.raises(ValidationError):
            pinned.validate_python(bad)
    skills: TypeAdapter[Any] = TypeAdapter(SkillSource)
    assert skills.validate_python("a/b") == Path("a/b")
    assert skills.validate_python({"runtime": "/opt/skills"}) == {"runtime": "/opt/skills"}
    for wrong in ({}, {"host": "/x"}):
        with pytest.raises(ValidationError):
            skills.validate_python(wrong)
    assert skill_destination({"runtime": "/opt/s"}, "/skills") == "/skills"
    assert skill_destination(Path("a/b/../c"), "/skills") == "/skills/c"


def test_merge_defaults_fills_only_what_defaults_set() -> None:
    class Algo(vf.configs.Config):
        type: str = "grpo"
        kl: float = 0.0
        clip: float = 0.2

    defaults = Algo(type="grpo", kl=0.1)
    assert vf.merge_defaults(defaults, {}) == {"type": "grpo", "kl": 0.1}
    assert vf.merge_defaults(defaults, {"kl": 0.5}) == {"type": "grpo", "kl": 0.5}
    assert vf.merge_defaults(defaults, {"type": "max_rl"}) == {"type": "max_rl"}
    sampling = vf.SamplingConfig(temperature=0.3)
    merged = vf.merge_defaults(sampling, {"max_completion_tokens": 9})
    assert merged == {"temperature": 0.3, "max_tokens": 9}


# plugged functions


def test_plugged_fn_takes_the_three_path_shapes(tmp_path: Path) -> None:
    assert plugged_fn("json:dumps") is json.dumps
    assert plugged_fn("json.dumps") is json.dumps
    source = tmp_path / "hooks.py"
    source.write_text("def bonus():\n    return 1.0\nNOT_A_FN = 3\n")
    fn = plugged_fn(f"{source}:bonus")
    assert fn() == 1.0
    assert file_module(str(source)) is file_module(str(source))
    with pytest.raises(ValueError, match="must be"):
        plugged_fn("nodots")
    with pytest.raises(TypeError, match="not a function"):
        plugged_fn(f"{source}:NOT_A_FN")


def test_load_plugged_fn_tags_like_the_decorator(tmp_path: Path) -> None:
    @vf.reward(weight=2.0, priority=3)
    async def graded(trace: Any) -> float:
        return 1.0

    kept = load_plugged_fn("graded", RewardFunctionConfig(), "reward", graded)
    assert kept.__name__ == "graded" and kept.__dict__["reward"] is True
    assert kept.__dict__["reward_priority"] == 3 and kept.__dict__["_vf_weight"] == 2.0
    overridden = load_plugged_fn(
        "graded", RewardFunctionConfig(priority=-1, weight=0.5), "reward", graded
    )
    assert overridden.__dict__["reward_priority"] == -1
    assert overridden.__dict__["_vf_weight"] == 0.5
    source = tmp_path / "extra.py"
    source.write_text("def seen(trace):\n    return 4.0\n")
    metric = load_plugged_fn("seen_it", DecoratedFunctionConfig(fn=f"{source}:seen"), "metric")
    assert metric.__name__ == "seen_it" and metric.__dict__["metric_priority"] == 0
    assert metric(None) == 4.0
    with pytest.raises(ValueError, match="plugs no `fn`"):
        load_plugged_fn("ghost", DecoratedFunctionConfig(), "metric")


# traces


def _trace(**nodes: Any) -> vf.Trace:
    data = vf.TaskData(prompt="hi")
    return vf.Trace(
        task=vf.TraceTask(type="Task", data=data),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        nodes=[MessageNode(message=vf.UserMessage(content="hi"), **nodes)],
    )


def test_records_round_per_token_floats_and_leave_out_raw_tensors() -> None:
    trace = _trace(
        token_ids=[1, 2],
        mask=[False, True],
        logprobs=[-0.123456789],
        routed_experts=np.zeros((2, 1, 1), dtype=np.uint8),
    )
    assert RECORD_FLOAT_DECIMALS == 4
    assert EXCLUDE_FIELDS == {"nodes": {"__all__": {"routed_experts", "sampling_mask"}}}
    record = trace.to_record()
    assert record["nodes"][0]["logprobs"] == [-0.1235]
    assert "routed_experts" not in record["nodes"][0]
    assert trace.to_record(float_decimals=None)["nodes"][0]["logprobs"] == [-0.123456789]
    episode = vf.Episode(task=trace.task, traces=[trace])
    line = episode.to_record()["traces"][0]["nodes"][0]
    assert line["logprobs"] == [-0.1235] and "routed_experts" not in line
    wire = trace.model_dump(mode="json")  # the serve wire keeps every digit and the routing
    assert wire["nodes"][0]["logprobs"] == [-0.123456789]
    assert wire["nodes"][0]["routed_experts"] is not None


def test_a_trace_records_the_verifiers_build() -> None:
    trace = _trace()
    assert isinstance(trace.verifiers, vf.VersionInfo)
    assert trace.verifiers.version == verifiers.__version__
    assert vf.WireTrace.model_validate(trace.to_record()).verifiers == trace.verifiers


def test_min_new_input_tokens_counts_each_calls_added_input() -> None:
    calls = [
        ModelCall(usage=Usage(input_tokens=10, output_tokens=5)),
        ModelCall(),
        ModelCall(usage=Usage(input_tokens=20, output_tokens=3)),
        ModelCall(usage=Usage(input_tokens=12, output_tokens=1)),  # history trimmed
    ]
    counted = list(min_new_input_tokens(calls))
    assert [call for call, _ in counted] == [calls[0], calls[2], calls[3]]
    assert [added for _, added in counted] == [10, 5, 0]


def test_trace_module_exports_branch_and_policy_events() -> None:
    from verifiers.v1.branch import Branch as Defined

    assert Branch is Defined
    call = ModelCall(policy=vf.PolicyEvent(code="provider_tool_removed", paths=["tools[0]"]))
    assert ModelCall.model_validate(call.model_dump(mode="json")).policy == call.policy
    assert ModelCall().policy is None


def test_state_cls_resolves_a_tasks_state_type() -> None:
    class MyState(vf.State):
        count: int = 0

    class MyTask(vf.Task[vf.TaskData, MyState]):
        pass

    class Child(MyTask):
        pass

    assert state_cls(Child) is MyState and MyTask.state_type() is MyState
    assert state_cls(vf.Task) is vf.State and state_cls(int) is vf.State


async def test_append_episode_and_trace_write_whole_lines(tmp_path: Path) -> None:
    lock = asyncio.Lock()
    traces = [_trace() for _ in range(4)]
    await asyncio.gather(*(append_trace(tmp_path, t, lock, env="echo") for t in traces))
    await append_episode(tmp_path, vf.Episode(task=traces[0].task, traces=traces[:2]), lock)
    episodes = read_episodes(tmp_path)
    assert [len(e.traces) for e in episodes] == [1, 1, 1, 1, 2]
    assert {e.env.id for e in episodes[:4]} == {"echo"}
    assert sorted(e.traces[0].id for e in episodes[:4]) == sorted(t.id for t in traces)
    assert type_adapter(int) is type_adapter(int)


async def test_append_episode_finishes_its_write_when_cancelled(tmp_path: Path) -> None:
    lock = asyncio.Lock()
    trace = _trace()
    await lock.acquire()  # the write waits for the lock
    writing = asyncio.create_task(append_trace(tmp_path, trace, lock))
    await asyncio.sleep(0)
    writing.cancel()
    lock.release()
    with pytest.raises(asyncio.CancelledError):
        await writing
    assert [e.traces[0].id for e in read_episodes(tmp_path)] == [trace.id]


# types and the msgpack encoder


def test_content_to_parts_types_openai_content() -> None:
    assert content_to_parts(None) == "" and content_to_parts("hi") == "hi"
    parts = content_to_parts(
        [
            {"type": "text", "text": "a"},
            {"type": "image_url", "image_url": {}},
            {"type": "audio"},
            "junk",
            {"type": "text"},
        ]
    )
    assert parts == [
        TextContentPart(text="a"),
        vf.ImageUrlContentPart(image_url=vf.ImageUrlSource(url="")),
        TextContentPart(text=""),
    ]


def test_sampling_mask_is_flat_int32_rows() -> None:
    mask = SamplingMask.from_sampling_mask([[1, 2], [], [3]])
    assert mask.ids.tolist() == [1, 2, 3] and mask.counts.tolist() == [2, 0, 1]
    assert mask.ids.dtype == np.int32 and mask.counts.dtype == np.int32
    empty = SamplingMask.from_sampling_mask([[], []])
    assert empty.ids.tolist() == [] and empty.ids.dtype == np.int32
    assert empty.counts.tolist() == [0, 0]


def test_msgpack_encoder_tags_arrays_and_tensors() -> None:
    array = np.arange(6, dtype=np.int16).reshape(2, 3)
    packed = msgpack.packb({"a": array, "n": np.float32(1.5)}, default=msgpack_encoder)
    data = msgpack.unpackb(packed)
    assert TENSOR_TAG == "__torch_tensor__"
    tagged = data["a"]
    assert tagged[TENSOR_TAG] is True and tagged["dtype"] == "int16"
    assert tagged["shape"] == [2, 3]
    restored = np.frombuffer(tagged["data"], dtype=tagged["dtype"]).reshape(tagged["shape"])
    assert (restored == array).all() and data["n"] == 1.5
    assert msgpack_encoder({1, 2}) in ([1, 2], [2, 1])
    assert msgpack_encoder(Path("/x")) == "/x"
    assert msgpack_encoder(vf.PolicyEvent(code="c", paths=[])) == {"code": "c", "paths": []}
    if "torch" in sys.modules:  # never imported for this
        torch = sys.modules["torch"]
        assert msgpack_encoder(torch.ones(2))["shape"] == [2]


# scoring helpers and agents


def test_verify_boxed_math_answer() -> None:
    assert vf.verify_boxed_math_answer("so \\boxed{1/2}", "0.5") == 1.0
    assert vf.verify_boxed_math_answer("x</think>\\boxed{4}", "4") == 1.0
    assert vf.verify_boxed_math_answer("\\boxed{2}", "\\boxed{3}") == 0.0
    assert vf.verify_boxed_math_answer("<think>\\boxed{1}", "1") == 0.0
    assert vf.verify_boxed_math_answer("no box", "4") == 0.0
    assert vf.verify_boxed_math_answer(None, "1") == 0.0


async def test_read_answer_file_or_last_reply() -> None:
    class Files:
        def __init__(self, files: dict[str, bytes | Exception]) -> None:
            self.files = files

        async def read(self, path: str) -> bytes:
            found = self.files[path]
            if isinstance(found, Exception):
                raise found
            return found

    trace = _trace()
    trace.append(vf.AssistantMessage(content=" the reply "), sampled=True)
    runtime = Files(
        {
            "/a": b" 42\n",
            "/blank": b"  ",
            "/gone": FileNotFoundError("/gone"),
            "/box": SandboxError("down"),
        }
    )
    read = vf.read_answer_file_or_last_reply
    assert await read(runtime, "/a", trace) == "42"
    for path in ("/blank", "/gone", "/box"):
        assert await read(runtime, path, trace) == "the reply"


async def test_make_agent_builds_a_standalone_seat_from_its_config() -> None:
    with pytest.raises(ValueError, match="model is unset"):
        vf.make_agent(vf.AgentConfig())
    seat = vf.make_agent(
        vf.AgentConfig(model="m", client=vf.EvalClientConfig(base_url="http://127.0.0.1:9/v1"))
    )
    try:
        assert seat.model == "m" and seat.harness.config.id == "bash"
    finally:
        await seat.client.close()
    nulled = vf.make_agent(vf.AgentConfig(model="m", harness=vf.HarnessConfig(id="null")))
    try:
        assert nulled.harness.config.id == "null"
    finally:
        await nulled.client.close()


# planned episodes


class _EchoData(vf.TaskData):
    answer: str


class _EchoTask(vf.Task[_EchoData]):
    @vf.stop
    async def one_turn(self, trace: vf.Trace) -> bool:
        return trace.num_turns >= 1

    @vf.reward
    async def echoed(self, trace: vf.Trace) -> float:
        return float(self.data.answer in trace.last_reply)


class _EchoTaskset(vf.Taskset[_EchoTask, vf.TasksetConfig]):
    def load(self) -> list[_EchoTask]:
        return [_EchoTask(_EchoData(prompt="say alpha", answer="alpha"))]


async def test_run_slot_plays_a_planned_episode_and_shows_its_traces_live() -> None:
    from verifiers.testing import OpenAITestServer
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.env import RunSlot

    env = vf.SingleAgentEnv(_EchoTaskset())
    (task,) = list(env.tasks())
    with pytest.raises(ValueError, match="n >= 1"):
        env.slots(task, 0)
    slots = env.slots(task, 2)
    assert [(s.task, s.traces, s.episode, s.done) for s in slots] == [(task, [], None, False)] * 2
    seen: list[tuple[str, int]] = []
    completed: list[vf.Episode] = []

    async def on_complete(episode: vf.Episode) -> None:
        completed.append(episode)

    def respond(request: dict[str, Any]) -> str:
        return "alpha"

    def watcher(slot: RunSlot) -> Callable[[vf.Trace], None]:
        return lambda trace: seen.append((trace.id, len(slot.traces)))

    async with OpenAITestServer(responder=respond) as srv:
        ctx = ModelContext(model="toy-model", client=vf.EvalClientConfig(base_url=srv.base_url))
        gate = asyncio.Semaphore(1)
        episodes = await asyncio.gather(
            *(env.run_slot(slot, ctx, gate, on_complete, watcher(slot)) for slot in slots)
        )
    for slot, episode in zip(slots, episodes, strict=True):
        assert slot.done and slot.episode is episode and episode.ok
        assert slot.traces == episode.traces and episode.traces[0].reward == 1.0
    assert sorted(i for _, i in seen) == [1, 1]  # each trace had joined its slot when seen
    assert completed == list(episodes) or completed == list(reversed(episodes))
    replayed = RunSlot.finished(episodes[0])
    assert replayed.done and replayed.episode is episodes[0]
    assert replayed.traces == episodes[0].traces and replayed.task.data == task.data


async def test_a_seat_tells_which_trace_it_dropped_for_a_retry() -> None:
    class FailOnce(vf.Harness[vf.NullHarnessConfig]):
        def __init__(self) -> None:
            super().__init__(vf.NullHarnessConfig())
            self.runs = 0

        async def run(self, task: Any, trace: vf.Trace, agent: Any) -> bool:
            self.runs += 1
            if self.runs == 1:
                raise vf.HarnessError("first run breaks")
            trace.append(vf.AssistantMessage(content="alpha"), sampled=True)
            return True

    config = vf.AgentConfig(retries=vf.RetryConfig(max_retries=1))
    seat = vf.Agent("http://127.0.0.1:9", "toy", config, harness=FailOnce())
    started: list[vf.Trace] = []
    dropped: list[vf.Trace] = []
    seat.on_trace, seat.on_discard = started.append, dropped.append
    trace = await seat.run(_EchoTask(_EchoData(prompt="say alpha", answer="alpha")))
    assert trace.ok and seat.traces == [trace]
    assert started == [dropped[0], trace] and dropped[0].errors[-1].type == "HarnessError"


# git patches


@pytest.fixture
async def repo() -> Any:
    from verifiers.v1.runtimes import SubprocessConfig
    from verifiers.v1.task_runtime import TaskRuntime

    git_env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }
    runtime = TaskRuntime(SubprocessConfig(), git_env)
    await runtime.start()
    setup = (
        "git init -q . && printf 'one\\n' > a.txt && printf 'shipped\\n' > shipped.txt "
        "&& git add a.txt && git commit -qm base"
    )
    assert (await runtime.run(["sh", "-c", setup], {})).ok
    try:
        yield runtime
    finally:
        await runtime.stop()


async def test_capture_patch_records_the_agents_diff_and_commits(repo: Any) -> None:
    from verifiers.v1.utils.git import snapshot_untracked

    base = await vf.resolve_head(repo)
    shipped = await snapshot_untracked(repo)
    assert len(base) == 40 and shipped == ["shipped.txt"]
    agent = "printf 'two\\n' > a.txt && git commit -qam agent && printf 'x\\n' > new.txt"
    assert (await repo.run(["sh", "-c", agent], {})).ok
    trace = _trace()
    await vf.capture_patch(trace, repo, base, ignore=shipped, write_path="out/patch.diff")
    patch = trace.info["patch"]
    assert "+two" in patch and "-one" in patch and "new.txt" in patch  # the commit counts
    assert "shipped.txt" not in patch and "patch_truncated" not in trace.info
    assert (await repo.read("out/patch.diff")).decode() == patch
    staged = await repo.run(["git", "diff", "--cached", "--name-only"], {})
    assert staged.stdout == ""  # the index is left unstaged
    leftovers = await repo.run(["sh", "-c", "ls /tmp | grep -c vf_patch_ || true"], {})
    head_only = _trace()
    await vf.capture_patch(head_only, repo, ignore=[*shipped, "out/patch.diff"])
    assert "+two" not in head_only.info["patch"] and "new.txt" in head_only.info["patch"]
    assert "shipped" not in head_only.info["patch"]
    after = await repo.run(["sh", "-c", "ls /tmp | grep -c vf_patch_ || true"], {})
    assert after.stdout == leftovers.stdout


async def test_capture_patch_cuts_long_patches_and_records_git_failures(
    repo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import verifiers.v1.utils.git as git

    monkeypatch.setattr(git, "PATCH_CAP_BYTES", 50)
    assert (await repo.run(["sh", "-c", "seq 1 100 > a.txt"], {})).ok
    trace = _trace()
    await vf.capture_patch(trace, repo)
    assert trace.info["patch_truncated"] is True and len(trace.info["patch"]) == 50
    assert (await repo.run(["rm", "-rf", ".git"], {})).ok
    broken = _trace()
    await vf.capture_patch(broken, repo)
    assert broken.info["patch_error"].startswith("exit=") and "patch" not in broken.info
    assert await vf.resolve_head(repo) == ""


async def test_capture_patch_raises_when_the_runtime_stops_answering() -> None:
    class Dead:
        async def run(self, argv: list[str], env: dict[str, str]) -> vf.ProgramResult:
            return vf.ProgramResult(exit_code=137, stderr="container gone")

    with pytest.raises(SandboxError, match="stopped answering"):
        await vf.capture_patch(_trace(), Dead())


async def test_memory_is_trimmed_once_every_so_many_rollouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import verifiers.v1.utils.memory as memory

    memory.trim_memory()  # glibc's malloc_trim where there is one, else nothing
    calls: list[int] = []
    monkeypatch.setattr(memory, "_trim", calls.append)
    monkeypatch.setattr(memory, "_resolved", True)
    monkeypatch.setattr(memory, "_since_trim", 0)
    for _ in range(memory.TRIM_EVERY * 2 + 3):
        await memory.trim_memory_periodically()
    assert calls == [0, 0]
    monkeypatch.setattr(memory, "_trim", None)  # off glibc: never
    for _ in range(memory.TRIM_EVERY):
        await memory.trim_memory_periodically()
    assert calls == [0, 0]
