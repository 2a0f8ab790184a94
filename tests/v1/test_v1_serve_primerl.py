"""prime-rl's v1 call sequence against our ``verifiers.v1``: its env-server entry point
(``serve_env(**pool_serve_kwargs(...), config_data=env_config_data(...))`` in a spawned
process) and its orchestrator (``EnvClient`` health wait, ``vf.load_taskset`` on the client,
one ``EnvClient.run`` per rollout of a batch, the episode stamped with group and run, traces
read as branches of token ids, masks and logprobs), with a real model server and real ports.

The sequence follows PrimeIntellect-ai/prime-rl at 559b447 (``src/prime_rl/entrypoints/
env_server.py``, ``orchestrator/envs.py``, ``dispatcher.py``, ``trajectories.py``).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, SerializeAsAny, model_validator

import verifiers.v1 as vf
from verifiers.testing import OpenAITestServer
from verifiers.v1.configs.client import EvalClientConfig, TrainClientConfig
from verifiers.v1.serve import EnvClient, env_config_data, serve_env
from verifiers.v1.serve.delta import EpisodeAssembly, TraceSummary, dump

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


class EnvServerConfig(BaseModel):
    """The shape of prime-rl's ``EnvServerConfig``: ``[env]`` narrowed by id, ``[serve]``."""

    env: SerializeAsAny[vf.EnvConfig] = vf.SingleAgentEnvConfig()
    serve: vf.ServeConfig = vf.ServeConfig()

    @model_validator(mode="before")
    @classmethod
    def _resolve_env(cls, data: Any) -> Any:
        return vf.resolve_env_field(data, vf.narrowed_env_annotation(cls))


def count_words(request: dict[str, Any]) -> str:
    """The model: answers the word count asked for in the last user message."""
    text = request["messages"][-1]["content"]
    found = re.search(r"How many words: (.*)$", text)
    return str(len(found.group(1).split())) if found else "?"


@pytest.fixture(autouse=True)
def private_serve_keys(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh config directory: the per-user env-server keys are created there on first
    use, and the spawned server and this process's client both read them (prime-rl's
    unchanged calls, no configuration)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
    for var in ("VF_SERVE_KEYS_DIR", "VF_SERVE_SECRET_KEY", "VF_SERVE_ALLOW", "VF_SERVE_AUTH"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fixtures_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture tasksets importable here and in spawned server processes."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    path = [str(FIXTURES), str(REPO), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))


@pytest.fixture
def model_server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(count_words) as server:
        yield server


def start_env_server(config: EnvServerConfig) -> tuple[Any, str]:
    """prime-rl's ``run_server``, in a spawned process; returns it and its bound address."""
    ctx = mp.get_context("spawn")
    addresses = ctx.Queue()
    process = ctx.Process(
        target=serve_env,
        kwargs={
            **vf.pool_serve_kwargs(config.serve.pool),
            "address": config.serve.address,
            "config_data": env_config_data(config.env),
            "max_concurrent": config.serve.max_concurrent,
            "address_queue": addresses,
        },
        daemon=False,
    )
    process.start()
    return process, addresses.get(timeout=120)


def stop(process: Any) -> None:
    process.terminate()
    process.join(30)
    if process.is_alive():
        process.kill()
        process.join(5)
    assert process.exitcode is not None


SENTENCES = ["one two", "a b c", "the quick brown fox"]


@pytest.mark.parametrize(
    "pool",
    [{"type": "static", "num_workers": 1}, {"type": "elastic", "max_workers": 2}],
    ids=["one-process", "elastic-pool"],
)
async def test_prime_rl_orchestrator_sequence_runs_a_batch_over_the_wire(
    fixtures_importable: None, model_server: OpenAITestServer, pool: dict[str, Any]
) -> None:
    config = EnvServerConfig.model_validate(
        {
            "env": {"taskset": {"id": "count-words-v1", "sentences": SENTENCES}},
            "serve": {"address": "tcp://127.0.0.1:0", "pool": pool, "max_concurrent": 8},
        }
    )
    assert isinstance(config.env, vf.SingleAgentEnvConfig)
    assert config.env.env_id == "count-words-v1"
    assert type(config.env.taskset).__name__ == "CountConfig"  # narrowed by the taskset id
    process, address = start_env_server(config)
    env_client = EnvClient(address=address)
    try:
        # orchestrator/envs.py: Env.start
        await env_client.wait_for_server_startup(timeout=120)
        taskset = vf.load_taskset(config.env.taskset)
        assert not type(taskset).INFINITE
        tasks = await asyncio.to_thread(lambda: list(taskset))
        assert [t.data.answer for t in tasks] == [2, 3, 4]
        # utils/client.py: setup_client with a renderer endpoint (token in / out)
        client = TrainClientConfig(base_url=model_server.base_url, api_key_var="NO_KEY_SET")
        sampling_args: dict[str, Any] = {"temperature": 1.0, "extra_body": {"cache_salt": "s1"}}
        sampling = vf.SamplingConfig(**sampling_args)

        # dispatcher.py: each rollout of a group is one EnvClient.run of the task's data
        async def rollout(task: vf.Task) -> vf.WireEpisode:
            return await env_client.run(
                task_data=task.data.model_dump(mode="json"),
                client=client,
                model="toy-model",
                sampling=sampling,
            )

        groups = {i: [rollout(t) for _ in range(2)] for i, t in enumerate(tasks)}
        results = {i: await asyncio.gather(*jobs) for i, jobs in groups.items()}
        for group_id, episodes in results.items():
            task = tasks[group_id]
            for episode in episodes:
                assert isinstance(episode, vf.Episode)
                assert episode.ok, episode.errors
                assert (episode.task.key, episode.task.hash) == (task.key, task.hash)
                assert episode.task.data.model_extra == {"answer": task.data.answer}
                episode.env.name = "count-words"
                episode.group = vf.GroupInfo(id=str(group_id))
                work = vf.TrainWorkInfo(step=3, policy=vf.PolicySpan(start=2, end=3))
                episode.record_run(vf.TrainRunInfo(id="run-1", work=work))
                assert isinstance(episode.run, vf.TrainRunInfo)
                assert episode.num_total_tokens > 0
                (trace,) = episode.traces
                assert trace.ok and not trace.has_error and trace.num_turns == 1
                # the call completed after it first streamed: its update reached the client
                assert trace.calls[0].usage is not None and trace.num_output_tokens > 0
                assert trace.calls[0].finish_reason == "stop" and not trace.is_truncated
                model_time = trace.timing.agent.model.duration
                assert 0 < model_time <= trace.timing.agent.duration
                assert trace.reward == 1.0
                assert trace.last_reply == str(task.data.answer)
                # trajectories.py: a branch per training sample, masks from its nodes
                (branch,) = trace.branches
                mask = [m for node in branch.nodes for m in node.mask]
                assert mask == branch.sampled_mask and any(mask)
                assert len(branch.token_ids) == len(mask) == len(branch.logprobs)
                (reply,) = [n for n in branch.nodes if n.sampled]
                assert reply.mask.count(True) == len(reply.completion_token_ids or [])
                # algo/routing.py: credit on the trace's sampled nodes, read back per branch
                for node in trace.nodes:
                    if any(node.mask):
                        assert len(node.mask) == len(node.token_ids)
                        node.advantages = [0.5] * sum(node.mask)
                assert branch.advantages == [0.5 if m else 0.0 for m in mask]
                assert all(lp < 0 for lp, m in zip(branch.logprobs, mask, strict=True) if m)
        # the train endpoint was asked for token ids and logprobs, with the cache salt
        sent = model_server.requests[-1]
        assert sent["return_token_ids"] is True and sent["logprobs"] is True
        assert sent["cache_salt"] == "s1" and sent["temperature"] == 1.0
    finally:
        await env_client.close()
        stop(process)


async def test_a_failed_run_is_an_answer_and_the_server_keeps_serving(
    fixtures_importable: None, model_server: OpenAITestServer
) -> None:
    config = EnvServerConfig.model_validate(
        {
            "env": {"taskset": {"id": "count-words-v1"}},
            "serve": {"address": "tcp://127.0.0.1:0", "pool": {"type": "static", "num_workers": 1}},
        }
    )
    process, address = start_env_server(config)
    env_client = EnvClient(address=address)
    try:
        await env_client.wait_for_server_startup(timeout=120)
        client = EvalClientConfig(base_url=model_server.base_url)
        with pytest.raises(RuntimeError, match="answer"):
            await env_client.run(
                task_data={"prompt": "How many words: a"}, client=client, model="toy-model"
            )
        # a model endpoint that is down fails the trace, not the request
        down = EvalClientConfig(base_url="http://127.0.0.1:9/v1")
        episode = await env_client.run(
            task_data={"prompt": "How many words: a", "answer": 1}, client=down, model="m"
        )
        assert not episode.ok and episode.last_error is not None
        assert "ModelError" in episode.last_error.type
        ok = await env_client.run(
            task_data={"prompt": "How many words: a b", "answer": 2}, client=client, model="m"
        )
        assert ok.ok and ok.traces[0].reward == 1.0
        # an eval endpoint is not asked for token ids: the branch carries none
        assert ok.traces[0].branches[0].token_ids == []
    finally:
        await env_client.close()
        stop(process)


async def test_an_unreachable_server_times_out_with_its_address() -> None:
    env_client = EnvClient(address="tcp://127.0.0.1:9")
    try:
        with pytest.raises(TimeoutError, match=re.escape("127.0.0.1:9")):
            await env_client.wait_for_server_startup(timeout=0.3, interval=0.1)
    finally:
        await env_client.close()


def make_trace(turns: int) -> vf.Trace:
    class Data(vf.TaskData):
        answer: int

    trace: vf.Trace = vf.Trace(
        task=vf.TraceTask(type="T", data=Data(prompt="q", answer=1)),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
    )
    trace.append(vf.UserMessage(content="q"))
    sequence = [0, 1, 2]
    for i in range(turns):
        trace.append(
            vf.AssistantMessage(content=f"a{i}"),
            sampled=True,
            prompt_token_ids=list(sequence),
            completion_token_ids=[100 + i, 101 + i],
            completion_logprobs=[-0.5, -0.25],
        )
        trace.calls.append(vf.ModelCall(node=len(trace.nodes) - 1))
        sequence += [100 + i, 101 + i, 3, 4, 5]  # the reply, then the next user message
        if i + 1 < turns:
            trace.append(vf.UserMessage(content="more"))
    return trace


async def test_deltas_stream_each_turn_once_and_reassemble_the_episode() -> None:
    from verifiers.v1.serve.delta import DeltaStreamer

    frames: list[dict[str, Any]] = []
    trace = make_trace(1)

    async def send(delta: dict[str, Any]) -> None:
        frames.append(delta)

    async with DeltaStreamer(lambda: [trace], send) as streamer:
        streamer.watch(trace)
        for _ in range(3):
            await asyncio.sleep(0)  # the scheduled flush runs
        assert len(frames) == 1 and "open" in frames[0] and len(frames[0]["nodes"]) == 2
        trace.append(vf.UserMessage(content="more"))
        trace.append(vf.AssistantMessage(content="a1"), sampled=True)
        trace.calls[0].usage = vf.Usage(input_tokens=3, output_tokens=2)  # the reply landed
        trace.notify()
        trace.ok = True
    assert [len(f.get("nodes", [])) for f in frames] == [2, 2]
    assert frames[-1]["updates"]["calls"][0]["usage"]["output_tokens"] == 2
    assert frames[-1]["set"]["ok"] is True and "open" not in frames[-1]
    episode: vf.Episode = vf.Episode(task=trace.task, ok=True, traces=[trace])
    assembly = EpisodeAssembly()
    for frame in frames:
        assembly.apply(frame)
    record = assembly.finish(
        dump(episode, exclude={"traces"}), [TraceSummary(id=trace.id, nodes=4, calls=1)]
    )
    again = vf.WireEpisode.model_validate(record)
    assert again.traces[0].calls[0].usage == vf.Usage(input_tokens=3, output_tokens=2)
    assert again.traces[0].model_dump(mode="json") == vf.WireTrace.model_validate(
        trace.model_dump(mode="json")
    ).model_dump(mode="json")
    with pytest.raises(RuntimeError, match="assembled 4 nodes"):
        assembly.finish({}, [TraceSummary(id=trace.id, nodes=5, calls=1)])


def test_spans_derive_from_prompt_and_completion_ids_as_one_sequence() -> None:
    trace = make_trace(2)
    (branch,) = trace.branches
    assert branch.token_ids == [0, 1, 2, 100, 101, 3, 4, 5, 101, 102]
    assert [len(n.token_ids) for n in branch.nodes] == [3, 2, 3, 2]  # user, reply, user, reply
    assert branch.sampled_mask == [False] * 3 + [True] * 2 + [False] * 3 + [True] * 2
    assert branch.logprobs[3:5] == [-0.5, -0.25]
    assert branch.nodes[1] is trace.nodes[1]  # annotations on a branch land on the trace
    # a wire copy derives the same spans when it is read back
    again = vf.WireTrace.model_validate(make_trace(2).model_dump(mode="json"))
    assert again.nodes[2].token_ids == [3, 4, 5] and again.branches[0].token_ids == branch.token_ids
    assert trace.num_input_tokens == 6 and trace.num_total_tokens == 10


def test_a_prompt_that_does_not_extend_the_sequence_ends_the_derivation() -> None:
    trace = make_trace(2)
    trace.nodes[3].prompt_token_ids = [9, 9, 9, 9]
    (branch,) = trace.branches
    assert branch.token_ids == [0, 1, 2, 100, 101]
    assert trace.nodes[3].token_ids == []


def test_every_name_prime_rl_imports_resolves() -> None:
    import importlib

    names = (
        "Branch ClientConfig EnvConfig EnvInfo Episode Error EvalWorkInfo GroupInfo "
        "PolicySpan SamplingConfig ServeConfig SingleAgentEnvConfig Task Trace TraceTask "
        "TrainRunInfo TrainWorkInfo WireEpisode WireTrace WorkInfo load_taskset "
        "narrowed_env_annotation pool_serve_kwargs resolve_env_field"
    ).split()
    assert [n for n in names if not hasattr(vf, n)] == []
    modules = {
        "verifiers.v1.serve": ["EnvClient", "env_config_data", "serve_env"],
        "verifiers.v1.configs.client": ["EvalClientConfig", "TrainClientConfig"],
        "verifiers.v1.graph": ["MessageNode"],
        "verifiers.v1.types": ["AssistantMessage", "ToolMessage", "UserMessage"],
    }
    for module, members in modules.items():
        loaded = importlib.import_module(module)
        assert [m for m in members if not hasattr(loaded, m)] == [], module
    assert vf.pool_serve_kwargs(vf.ServeConfig().pool) == {
        "max_workers": None,
        "multiplex": 128,
        "elastic": True,
    }


def test_a_node_recording_its_own_span_is_used_as_is() -> None:
    trace = make_trace(0)
    trace.nodes[0].token_ids = [1, 2]
    trace.nodes[0].mask = [False, False]
    trace.append(
        vf.AssistantMessage(content="a"),
        sampled=True,
        token_ids=[7, 8, 9],
        mask=[False, True, True],
    )
    trace.nodes[-1].logprobs = [-0.5, -0.75]
    (branch,) = trace.branches
    assert branch.token_ids == [1, 2, 7, 8, 9]
    assert branch.sampled_mask == [False, False, False, True, True]
    assert branch.logprobs == [0.0, 0.0, 0.0, -0.5, -0.75]


async def test_cancelling_a_run_stops_its_episode_on_the_server(fixtures_importable: None) -> None:
    from verifiers.v1.serve import EnvServer

    reached, release = asyncio.Event(), asyncio.Event()

    async def stuck(request: dict[str, Any]) -> str:
        reached.set()
        await release.wait()
        return "1"

    async with OpenAITestServer(stuck) as model:
        server = EnvServer({"taskset": {"id": "count-words-v1"}}, address="tcp://127.0.0.1:0")
        stop_serving = asyncio.Event()
        serving = asyncio.create_task(server.run(stop_serving))
        env_client = EnvClient(server.address)
        try:
            run = asyncio.create_task(
                env_client.run(
                    client=EvalClientConfig(base_url=model.base_url),
                    model="m",
                    task_data={"prompt": "How many words: a", "answer": 1},
                )
            )
            await reached.wait()  # the episode is waiting on the model
            (episode_task,) = server._running.values()
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            await asyncio.wait_for(episode_task, timeout=30)  # the cancel reached the server
            assert server._running == {}
            assert await env_client.health()
        finally:
            release.set()
            await env_client.close()
            stop_serving.set()
            await serving


async def test_a_pool_worker_that_dies_fails_its_runs_and_is_replaced(
    fixtures_importable: None,
) -> None:
    from verifiers.v1.serve import EnvServerError, EnvServerPool

    reached, release = asyncio.Event(), asyncio.Event()

    async def answer(request: dict[str, Any]) -> str:
        if "a b c" not in request["messages"][-1]["content"]:
            reached.set()
            await release.wait()
        return "3"

    async with OpenAITestServer(answer) as model:
        pool = EnvServerPool(
            {"taskset": {"id": "count-words-v1"}},
            max_workers=1,
            address="tcp://127.0.0.1:0",
            elastic=False,
        )
        stop_serving = asyncio.Event()
        serving = asyncio.create_task(pool.run(stop_serving))
        env_client = EnvClient(pool.address)
        client = EvalClientConfig(base_url=model.base_url)
        try:
            await env_client.wait_for_server_startup(timeout=60)
            doomed = asyncio.create_task(
                env_client.run(
                    client=client, model="m", task_data={"prompt": "How many words: a", "answer": 1}
                )
            )
            await reached.wait()  # the worker is running the episode
            (worker,) = pool.workers
            worker.process.kill()
            with pytest.raises(EnvServerError, match="env worker 0 died"):
                await doomed
            (replacement,) = pool.workers
            assert replacement.process.pid != worker.process.pid
            episode = await env_client.run(
                client=client, model="m", task_data={"prompt": "How many words: a b c", "answer": 3}
            )
            assert episode.ok and episode.traces[0].reward == 1.0
        finally:
            release.set()
            await env_client.close()
            stop_serving.set()
            await serving


async def test_a_pool_whose_env_cannot_load_says_why_instead_of_waiting(
    fixtures_importable: None,
) -> None:
    from verifiers.v1.serve import EnvServerError, EnvServerPool

    pool = EnvServerPool(
        {"taskset": {"id": "no-such-taskset-v1"}},
        max_workers=1,
        address="tcp://127.0.0.1:0",
        elastic=False,
    )
    stop_serving = asyncio.Event()
    serving = asyncio.create_task(pool.run(stop_serving))
    env_client = EnvClient(pool.address)
    try:
        with pytest.raises(EnvServerError, match=r"could not load its env.*no-such-taskset-v1"):
            await env_client.wait_for_server_startup(timeout=120, interval=0.2)
        with pytest.raises(EnvServerError, match="worker 0 cannot serve"):
            await env_client.run(client={"type": "eval"}, model="m", task_data={})
        assert len(pool.workers) == 1 and pool.workers[0].process.is_alive()
    finally:
        await env_client.close()
        stop_serving.set()
        await serving


async def test_a_server_whose_env_cannot_load_answers_with_the_reason(
    fixtures_importable: None,
) -> None:
    from verifiers.v1.serve import EnvServer, EnvServerError

    server = EnvServer({"taskset": {"id": "no-such-taskset-v1"}}, address="tcp://127.0.0.1:0")
    stop_serving = asyncio.Event()
    serving = asyncio.create_task(server.run(stop_serving))
    env_client = EnvClient(server.address)
    try:
        with pytest.raises(EnvServerError, match="no installed module 'no_such_taskset_v1'"):
            await env_client.wait_for_server_startup(timeout=30)
    finally:
        await env_client.close()
        stop_serving.set()
        await serving
