"""``run_eval`` (the v1 eval run from an ``EvalConfig``): the run directory it writes, resume,
seat configs narrowed by the env's config type, and multi-seat envs with setup/finalize."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import verifiers.v1 as vf
from verifiers.clients.native import NativeClient
from verifiers.errors import ConfigError
from verifiers.testing import OpenAITestServer
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.cli.output import saved_config_path, traces_path
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.utils.loaders import harness_config_type, load_environment

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def fixtures_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))


def count_words(request: dict[str, Any]) -> str:
    return str(len(request["messages"][-1]["content"].split(":")[1].split()))


def config(tmp_path: Path, **over: Any) -> EvalConfig:
    data: dict[str, Any] = {
        "env": {"taskset": {"id": "count-words-v1"}, "agent": {"max_turns": 1}},
        "model": "toy-model",
        "output_dir": tmp_path,
        "run": {"dir": "run"},
        **over,
    }
    return EvalConfig.model_validate(data)


def test_the_env_block_narrows_to_the_env_config_and_seat_harnesses_to_theirs(
    tmp_path: Path,
) -> None:
    cfg = config(tmp_path, env={"taskset": {"id": "count-words-v1", "sentences": ["a b"]}})
    assert type(cfg.env).__name__ == "SingleAgentEnvConfig"
    assert type(cfg.env.taskset).__name__ == "CountConfig"
    assert cfg.env.taskset.sentences == ["a b"]  # type: ignore[attr-defined]
    seat = vf.AgentConfig.model_validate({"harness": "null"})
    assert type(seat.harness) is vf.NullHarnessConfig
    assert harness_config_type("null") is vf.NullHarnessConfig
    with pytest.raises(ValueError, match="harness belongs to a seat"):
        config(tmp_path, env={"taskset": {"id": "count-words-v1"}, "harness": {"id": "null"}})
    with pytest.raises(ValueError, match="sentence"):
        config(tmp_path, env={"taskset": {"id": "count-words-v1", "sentence": ["typo"]}})
    assert vf.env_config_type("two-seats-v1").__name__ == "TwoSeatsConfig"


async def test_run_eval_writes_config_and_episodes_and_resume_reruns_only_failures(
    tmp_path: Path,
) -> None:
    asked: dict[str, int] = {}

    def respond(request: dict[str, Any]) -> str:
        """By the sentence asked (the tasks run concurrently): "a b c" is answered wrong the
        first time, everything else right."""
        sentence = request["messages"][-1]["content"].split(":")[1].strip()
        asked[sentence] = asked.get(sentence, 0) + 1
        return "oops" if (sentence, asked[sentence]) == ("a b c", 1) else str(len(sentence.split()))

    cfg = config(tmp_path, num_rollouts=1)
    async with OpenAITestServer(responder=respond) as srv:
        client = NativeClient(srv.base_url)
        first = await run_eval(cfg, client=client)
        assert sorted(t.reward for e in first for t in e.traces) == [0.0, 1.0]
        run_dir = tmp_path / "run"
        saved = json.loads(saved_config_path(run_dir).read_text())
        assert saved["env"]["taskset"]["id"] == "count-words-v1"
        assert saved["model"] == "toy-model"
        lines = traces_path(run_dir).read_text().splitlines()
        assert len(lines) == 2
        with pytest.raises(ConfigError, match="--resume"):
            await run_eval(cfg, client=client)
        # a task whose reward is 0 is still a complete episode: resume keeps both
        resumed = await run_eval(cfg.model_copy(update={"resume": True}), client=client)
        assert len(resumed) == 2 and srv.stats.requests == 2
        # a larger group size reruns only what is missing
        more = cfg.model_copy(update={"resume": True, "num_rollouts": 2})
        grown = await run_eval(more, client=client)
        assert len(grown) == 4 and srv.stats.requests == 4
        assert len(traces_path(run_dir).read_text().splitlines()) == 4
        await client.close()


async def test_a_failed_episode_is_rerun_on_resume(tmp_path: Path) -> None:
    cfg = config(tmp_path, env={"taskset": {"id": "count-words-v1", "sentences": ["a b"]}})
    async with OpenAITestServer(replies=[]) as broken:  # every request fails
        client = NativeClient(broken.base_url, timeout=5.0)
        from verifiers.clients.retry import RetryPolicy

        client.retry = RetryPolicy(max_retries=0)
        (failed,) = await run_eval(cfg, client=client)
        await client.close()
    assert not failed.ok
    async with OpenAITestServer(responder=count_words) as srv:
        client = NativeClient(srv.base_url)
        (done,) = await run_eval(cfg.model_copy(update={"resume": True}), client=client)
        await client.close()
    assert done.ok and done.traces[0].reward == 1.0
    (line,) = traces_path(tmp_path / "run").read_text().splitlines()
    assert vf.WireEpisode.model_validate_json(line).ok


async def test_a_multi_seat_env_runs_setup_both_seats_and_finalize() -> None:
    env = load_environment({"taskset": {"id": "two-seats-v1", "sentences": ["a b c"]}})
    assert type(env).__name__ == "TwoSeatsEnv" and env.id == "two-seats-v1"
    async with OpenAITestServer(responder=count_words) as srv:
        client = NativeClient(srv.base_url)
        (episode,) = await env.evaluate(client, "toy-model")
        await client.close()
    assert episode.ok
    seats = {t.agent.name: t for t in episode.traces}
    assert set(seats) == {"a", "b"}
    assert seats["a"].agent.trainable and not seats["b"].agent.trainable
    assert seats["b"].agent.config.max_turns == 1
    assert all(t.metrics["both"] == 1.0 and t.reward == 1.0 for t in episode.traces)


async def test_seat_retries_rerun_a_failed_agent_run_only_as_the_rules_allow(
    tmp_path: Path,
) -> None:
    from verifiers.clients.retry import RetryPolicy

    retries = {"max_retries": 0, "rules": [{"type": "ModelError", "max_retries": 2}]}
    cfg = config(
        tmp_path,
        env={
            "taskset": {"id": "count-words-v1", "sentences": ["a b"]},
            "agent": {"max_turns": 1, "retries": retries},
        },
    )
    # the first two requests fail (HTTP 500), the third is answered
    async with OpenAITestServer(responder=count_words, fault_sequence=["500", "500"]) as srv:
        client = NativeClient(srv.base_url)
        client.retry = RetryPolicy(max_retries=0)
        (episode,) = await run_eval(cfg, client=client)
        assert srv.stats.requests == 3
        await client.close()
    assert episode.ok and len(episode.traces) == 1 and episode.traces[0].reward == 1.0

    no_retries = cfg.model_copy(update={"run": cfg.run.model_copy(update={"dir": "run2"})})
    no_retries.env.agent.retries = vf.RetryConfig()  # type: ignore[attr-defined]
    async with OpenAITestServer(responder=count_words, fault_sequence=["500"]) as srv:
        client = NativeClient(srv.base_url)
        client.retry = RetryPolicy(max_retries=0)
        (failed,) = await run_eval(no_retries, client=client)
        await client.close()
    assert not failed.ok and failed.traces[0].errors[-1].type == "ModelError"


def test_a_client_table_without_its_type_is_the_defaults_kind(tmp_path: Path) -> None:
    """``client = {base_url = ...}`` (no ``type``) reads as the default eval client, as upstream
    0.4's configs read it; a ``type`` given is kept, a wrong one is still an error."""
    from verifiers.v1.configs.client import EvalClientConfig, TrainClientConfig

    url = "http://127.0.0.1:9/v1"
    cfg = config(tmp_path, client={"base_url": url, "api_key_var": "K"})
    assert isinstance(cfg.client, EvalClientConfig) and cfg.client.base_url == url
    cfg = config(tmp_path, client={"type": "train", "base_url": url})
    assert isinstance(cfg.client, TrainClientConfig)
    with pytest.raises(ValueError, match="type"):
        config(tmp_path, client={"type": "nope", "base_url": url})
