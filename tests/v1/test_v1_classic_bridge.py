"""v1 environments run by the classic machinery: ``vf.load_environment`` builds them by module
id (as upstream 0.4 resolves them), ``vf-eval`` saves their results, resumes them and ``vf view``
opens them, and a v1 env sits next to a classic one in an ``EnvGroup``."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from tests.clirun import run_cli
from verifiers.clients.native import NativeClient
from verifiers.testing import OpenAITestServer
from verifiers.testing.server import ServerProcess

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def fixtures_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")])
    )


def count_words(request: dict[str, Any]) -> str:
    return str(len(str(request["messages"][-1]["content"]).split(":")[1].split()))


async def test_load_environment_builds_a_v1_module_as_a_classic_environment() -> None:
    from verifiers.v1.bridge import V1Environment

    env = vf.load_environment("someone/count-words-v1", sentences=["a b", "c", "d e f"])
    assert isinstance(env, V1Environment) and env.env_id == "count-words-v1"
    async with OpenAITestServer(responder=count_words) as srv:
        client = NativeClient(srv.base_url)
        result = await vf.evaluate_async(
            env, client, "toy", num_examples=-1, rollouts_per_example=1
        )
        await client.close()
    records = sorted(result.records, key=lambda r: r["example_id"])
    assert [r["reward"] for r in records] == [1.0, 1.0, 1.0]
    assert [r["info"]["v1_task"]["answer"] for r in records] == [2, 1, 3]
    assert records[0]["completion"] == [{"role": "assistant", "content": "2"}]
    assert records[0]["metrics"]["correct"] == 1.0
    with pytest.raises(vf.ConfigError, match="sentence"):
        vf.load_environment("count-words-v1", sentence=["typo"])


async def test_a_multi_seat_episode_scores_its_trainable_seats() -> None:
    env = vf.load_environment("two-seats-v1", sentences=["a b"])
    replies = iter(["2", "7"])  # seat a answers right, seat b (untrainable) wrong
    async with OpenAITestServer(responder=lambda request: next(replies)) as srv:
        client = NativeClient(srv.base_url)
        result = await vf.evaluate_async(
            env, client, "toy", num_examples=-1, rollouts_per_example=1, max_concurrent=1
        )
        await client.close()
    (record,) = result.records
    assert record["reward"] == 1.0
    assert record["metrics"]["a/correct"] == 1.0 and record["metrics"]["b/correct"] == 0.0
    assert record["metrics"]["a/both"] == 0.0


def test_vf_eval_saves_resumes_and_vf_view_opens_a_v1_run(tmp_path: Path) -> None:
    from verifiers.web.viewer import Viewer

    def vf_eval(*args: str) -> Any:
        with contextlib.chdir(tmp_path):
            return run_cli("count-words-v1", *args, prog="vf-eval")

    with ServerProcess(responder="v1_responders:count_words") as server:
        base = ["-m", "toy", "-b", server.base_url, "-n", "2", "-s"]
        first = vf_eval(*base, "-r", "1")
        assert first.returncode == 0, first.stderr
        (results,) = tmp_path.glob("outputs/evals/*/*/results.jsonl")
        records = [json.loads(line) for line in results.read_text().splitlines()]
        assert [r["reward"] for r in records] == [1.0, 1.0]
        again = vf_eval(*base, "-r", "1", "--resume")
        assert again.returncode == 0, again.stderr
    assert len(results.read_text().splitlines()) == 2  # nothing rerun
    meta = json.loads((results.parent / "metadata.json").read_text())
    assert meta["status"] == "completed" and meta["env_id"] == "count-words-v1"
    page = Viewer(results.parent).handle("/run/@root/")
    assert page.status == 200 and b"count-words-v1" in page.body


async def test_a_v1_and_a_classic_environment_in_one_env_group() -> None:
    from datasets import Dataset

    classic = vf.SingleTurnEnv(
        eval_dataset=Dataset.from_list([{"question": "How many words: x y", "answer": "2"}]),
        rubric=vf.Rubric(funcs=[lambda completion, answer: float(answer in str(completion))]),
    )
    v1 = vf.load_environment("count-words-v1", sentences=["p q r"])
    group = vf.EnvGroup([classic, v1], env_names=["classic", "v1"])
    async with OpenAITestServer(responder=count_words) as srv:
        client = NativeClient(srv.base_url)
        result = await vf.evaluate_async(
            group, client, "toy", num_examples=-1, rollouts_per_example=1
        )
        await client.close()
    by_member = {r["info"]["env_id"]: r["reward"] for r in result.records}
    assert by_member == {"classic": 1.0, "v1": 1.0}


def test_env_args_configure_the_seats_through_an_env_key() -> None:
    env = vf.load_environment("two-seats-v1", sentences=["a"], env={"b": {"max_turns": 3}})
    config = env.v1_env.config  # type: ignore[attr-defined]
    assert config.b.max_turns == 3 and config.a.max_turns is None
    assert config.taskset.sentences == ["a"]
    with pytest.raises(vf.ConfigError, match="agent"):
        vf.load_environment("two-seats-v1", env={"agent": {"max_turns": 3}})


def test_a_bridged_env_runs_unpinned_seats_in_process_and_a_v1_run_runs_bash() -> None:
    env = vf.load_environment("someone/count-words-v1", sentences=["a b"])
    bridged = env.v1_env.agents("http://h/v1", "m").agent  # type: ignore[attr-defined]
    assert bridged.harness.name == "null"
    from verifiers.v1 import load_env

    native = load_env("count-words-v1").agents("http://h/v1", "m").agent
    assert native.harness.name == "bash"
