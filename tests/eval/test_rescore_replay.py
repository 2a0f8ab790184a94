"""Re-scoring replays each rollout, so it is exact for rubrics that read the rollout's state or
a sandbox: every bundled environment's oracle run and scripted-model run re-scores to the same
rewards, every record replayed exactly. (Before, a rubric reading ``state["solved"]`` (wordle)
re-scored an oracle run 1.0 -> 0.0, and one reading a sandbox (code) -> None.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from verifiers.testing.server import OpenAITestServer

BUNDLED = [
    "wordle",
    "math",
    "code",
    "tool-use",
    "logic",
    "python-repl",
    "research",
    "swe-lite",
    "swe-agent",
]


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as s:  # the scripted model: "echo: <last user message>"
        yield s


def _rewards(records: list[dict[str, Any]]) -> dict[tuple[str, int], Any]:
    return {(str(r["example_id"]), r["rollout_index"]): r["reward"] for r in records}


def _run(env_id: str, tmp_path: Path, client: Any, model: str) -> vf.EvalResult:
    result = vf.evaluate(
        env_id,
        client,
        model,
        num_examples=2,
        rollouts_per_example=1,
        save_results=True,
        results_root=tmp_path / model,
        max_concurrent=4,
    )
    assert result.path is not None
    return result


@pytest.mark.parametrize("env_id", BUNDLED)
def test_bundled_runs_rescore_exactly(
    env_id: str, tmp_path: Path, server: OpenAITestServer, request: pytest.FixtureRequest
) -> None:
    if env_id == "swe-agent":
        request.getfixturevalue("mini_swe_agent_dir")  # the agent, installed once
    for client, model in ((None, "oracle"), (server.base_url, "toy")):
        run = _run(env_id, tmp_path, client, model)
        if model == "oracle":
            assert run.avg_reward == 1.0, (env_id, _rewards(run.records))
        again = vf.rescore_run(run.path, output_dir=tmp_path / f"{model}-rescored")
        assert again.metadata["rescore"]["not_rescorable"] == 0, again.metadata["rescore"]
        assert [r["rescore"]["status"] for r in again.records] == ["exact"] * len(run.records)
        assert _rewards(again.records) == _rewards(run.records), (env_id, model)


def _edit(path: Path, change: Any) -> None:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    change(records)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_record_that_cannot_be_replayed_keeps_its_reward_and_the_cli_says_so(
    tmp_path: Path,
) -> None:
    run = _run("wordle", tmp_path, None, "oracle")
    assert run.path is not None

    def drop_last_call(records: list[dict[str, Any]]) -> None:
        # a call missing (from the trajectory and from the completion: an empty trajectory
        # is a v1 record's, whose calls are its completion's assistant messages)
        records[0]["trajectory"] = records[0]["trajectory"][:-1]
        completion = records[0]["completion"]
        last = max(i for i, m in enumerate(completion) if m["role"] == "assistant")
        records[0]["completion"] = completion[:last]
        records[0]["reward"] = 0.75  # what the record claims, kept as it was

    _edit(run.path / "results.jsonl", drop_last_call)
    vf_cli = str(Path(sys.executable).parent / "vf")
    strict = subprocess.run(
        [vf_cli, "eval", "rescore", str(run.path), "-o", str(tmp_path / "strict")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert strict.returncode == 1, strict.stderr
    assert "1 of 2 records could not be replayed exactly" in strict.stderr
    assert "--partial" in strict.stderr and "Traceback" not in strict.stderr
    saved = [
        json.loads(x) for x in (tmp_path / "strict" / "results.jsonl").read_text().splitlines()
    ]
    by_id = {r["example_id"]: r for r in saved}
    first = by_id[run.records[0]["example_id"]]
    assert first["reward"] == 0.75 and first["rescore"]["status"] == "not_rescorable"
    assert "asked for model call" in first["rescore"]["reason"]
    partial = subprocess.run(
        [vf_cli, "eval", "rescore", str(run.path), "--partial", "-o", str(tmp_path / "part")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert partial.returncode == 0, partial.stderr


def test_an_edited_environment_message_does_not_change_the_replayed_reward(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    # the record's feedback is rewritten to say the game was won, its reward to 1.0; the replay
    # recomputes the environment's messages and state: the verdict is the rubric's on the game
    run = _run("wordle", tmp_path, server.base_url, "toy")
    assert run.path is not None and run.avg_reward == 0.0

    def forge(records: list[dict[str, Any]]) -> None:
        for r in records:
            r["reward"] = 1.0
            for m in r["completion"]:
                if m["role"] == "user":
                    m["content"] = "GGGGG: you solved it!"

    _edit(run.path / "results.jsonl", forge)
    again = vf.rescore_run(run.path, output_dir=tmp_path / "again")
    assert _rewards(again.records) == _rewards(run.records)
    assert all("differ from the record" in r["rescore"]["note"] for r in again.records)


def test_a_record_with_an_empty_trajectory_replays_its_completions_answers(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    # a v1 taskset's records (vf-eval on verifiers.v1.bridge) hold `"trajectory": []`: the
    # replay read that as "no model call" and every v1 record was not re-scorable
    run = _run("math", tmp_path, server.base_url, "toy")
    assert run.path is not None

    def as_v1_writes(records: list[dict[str, Any]]) -> None:
        for r in records:
            r["trajectory"] = []

    _edit(run.path / "results.jsonl", as_v1_writes)
    again = vf.rescore_run(run.path, output_dir=tmp_path / "again")
    assert [r["rescore"]["status"] for r in again.records] == ["exact"] * len(run.records)
    assert _rewards(again.records) == _rewards(run.records)
