"""The response cache: a re-run with the cache makes no model calls and gives the same records;
every rollout of a group keeps its own answer; expiry; two processes share one cache; training
refuses it; ``vf cache list|clear``."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from verifiers.response_cache import ResponseCache, parse_duration
from verifiers.testing.server import OpenAITestServer


def exact(completion: vf.Messages, answer: str) -> float:
    return float(completion[-1]["content"] == answer)


def env(n: int = 4) -> vf.SingleTurnEnv:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(n)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))


def counting_responder() -> Any:
    """A fresh answer per request: a re-run that reached the server would differ."""
    counter = itertools.count()

    def reply(request: dict[str, Any]) -> str:
        return f"answer {next(counter)}"

    return reply


def essence(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (r["example_id"], r["rollout_index"], json.dumps(r["completion"]), r["reward"])
        for r in records
    ]


async def test_a_cached_rerun_makes_no_model_calls_and_gives_the_same_records(
    tmp_path: Path,
) -> None:
    cache_dir = tmp_path / "cache"
    async with OpenAITestServer(responder=counting_responder()) as server:
        first = await vf.evaluate_async(
            env(),
            server.base_url,
            "toy",
            num_examples=4,
            rollouts_per_example=3,
            cache=True,
            cache_dir=cache_dir,
        )
        assert server.stats.requests == 12
        # -r 3 samples three answers per example, not one answer three times
        per_example = {}
        for r in first.records:
            per_example.setdefault(r["example_id"], set()).add(r["completion"][-1]["content"])
        assert all(len(v) == 3 for v in per_example.values())
        assert first.summary["cache"] == {"hits": 0, "misses": 12}

        second = await vf.evaluate_async(
            env(),
            server.base_url,
            "toy",
            num_examples=4,
            rollouts_per_example=3,
            cache="7d",
            cache_dir=cache_dir,
            save_results=True,
            results_root=tmp_path / "out",
        )
        assert server.stats.requests == 12  # nothing reached the server
        assert second.summary["cache"] == {"hits": 12, "misses": 0}
        assert essence(second.records) == essence(first.records)
        saved = json.loads((second.path / "metadata.json").read_text())
        assert saved["summary"]["cache"] == {"hits": 12, "misses": 0}
        assert saved["cache"]["dir"] == str(cache_dir)

        # a fourth rollout per example is new; the first three come from the cache
        third = await vf.evaluate_async(
            env(),
            server.base_url,
            "toy",
            num_examples=4,
            rollouts_per_example=4,
            cache=True,
            cache_dir=cache_dir,
        )
        assert server.stats.requests == 16
        assert third.summary["cache"] == {"hits": 12, "misses": 4}

        # other sampling arguments are other answers
        await vf.evaluate_async(
            env(),
            server.base_url,
            "toy",
            num_examples=1,
            rollouts_per_example=1,
            sampling_args={"temperature": 0.3},
            cache=True,
            cache_dir=cache_dir,
        )
        assert server.stats.requests == 17

        # without the cache, the server answers again (and differently)
        fresh = await vf.evaluate_async(
            env(), server.base_url, "toy", num_examples=4, rollouts_per_example=3
        )
        assert server.stats.requests == 29
        assert essence(fresh.records) != essence(first.records)
        assert "cache" not in fresh.summary


async def test_expired_entries_are_misses(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    async with OpenAITestServer(responder=counting_responder()) as server:
        args: dict[str, Any] = {
            "num_examples": 2,
            "rollouts_per_example": 1,
            "cache_dir": cache_dir,
        }
        await vf.evaluate_async(env(), server.base_url, "toy", cache=True, **args)
        db = ResponseCache(cache_dir)
        conn = db._conn()
        with conn:  # age every entry by two hours
            conn.execute("UPDATE responses SET created = created - 7200")
        db.close()
        kept = await vf.evaluate_async(env(), server.base_url, "toy", cache="3h", **args)
        assert kept.summary["cache"] == {"hits": 2, "misses": 0}
        expired = await vf.evaluate_async(env(), server.base_url, "toy", cache="1h", **args)
        assert expired.summary["cache"] == {"hits": 0, "misses": 2}
        assert server.stats.requests == 4


def test_durations_parse_and_bad_ones_are_named() -> None:
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("12h") == 12 * 3600
    assert parse_duration("90") == 90
    with pytest.raises(vf.ConfigError, match="'soon' is not a positive duration"):
        parse_duration("soon")
    with pytest.raises(vf.ConfigError, match="cache must be True"):
        vf.evaluate(env(), model="oracle", cache=[1])


_RUNNER = textwrap.dedent(
    """
    import json, sys
    import verifiers as vf

    def exact(completion, answer):
        return float(completion[-1]["content"] == answer)

    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(20)]
    env = vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))
    res = vf.evaluate(env, sys.argv[1], "toy", num_examples=20, rollouts_per_example=2,
                      max_concurrent=8, cache=True, cache_dir=sys.argv[2])
    print(json.dumps(res.summary["cache"]))
    """
)


def test_two_processes_share_one_cache(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(_RUNNER)
    cache_dir = tmp_path / "cache"
    with OpenAITestServer() as server:
        procs = [
            subprocess.Popen(
                [sys.executable, str(script), server.base_url, str(cache_dir)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ},
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=240) for p in procs]
        for p, (_out, err) in zip(procs, outs, strict=True):
            assert p.returncode == 0, err
        both = server.stats.requests
        assert 40 <= both <= 80
        again = subprocess.run(
            [sys.executable, str(script), server.base_url, str(cache_dir)],
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout.splitlines()[-1]) == {"hits": 40, "misses": 0}
        assert server.stats.requests == both
    entries = ResponseCache(cache_dir).entries()
    assert [(e["model"], e["entries"]) for e in entries] == [("toy", 40)]


def test_training_refuses_a_caching_client(tmp_path: Path) -> None:
    from verifiers.response_cache import CachingClient
    from verifiers.testing import ScriptedClient
    from verifiers.train.rollout_source import RolloutSource

    client = CachingClient(ScriptedClient(["x"]), ResponseCache(tmp_path), "scripted")
    with pytest.raises(vf.ConfigError, match="training never uses the response cache"):
        RolloutSource(env(), client)


def test_vf_cache_list_and_clear(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    with OpenAITestServer() as server:
        vf.evaluate(
            env(),
            server.base_url,
            "toy",
            num_examples=3,
            rollouts_per_example=1,
            cache=True,
            cache_dir=cache_dir,
        )
    vf_exe = str(Path(sys.executable).parent / "vf")
    environ = {**os.environ, "VF_CACHE_DIR": str(cache_dir)}
    listed = subprocess.run(
        [vf_exe, "cache", "list", "--json"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)["entries"]
    assert entry["model"] == "toy" and entry["entries"] == 3
    assert entry["newest"] <= time.time()
    kept = subprocess.run(
        [vf_exe, "cache", "clear", "--older-than", "1d"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )
    assert kept.returncode == 0 and "removed 0" in kept.stdout
    cleared = subprocess.run(
        [vf_exe, "cache", "clear"], capture_output=True, text=True, env=environ, timeout=120
    )
    assert cleared.returncode == 0 and "removed 3" in cleared.stdout
    assert ResponseCache(cache_dir).entries() == []


def test_vf_eval_cache_rerun_makes_no_requests(classic_envs_path: Path, tmp_path: Path) -> None:
    from verifiers.testing.server import ServerProcess

    exe = str(Path(sys.executable).parent / "vf-eval")
    environ = {**os.environ, "VF_CACHE_DIR": str(tmp_path / "cache")}

    def run(*extra: str) -> dict[str, Any]:
        proc = subprocess.run(
            [
                exe,
                "classic_single",
                "-m",
                "x",
                "-b",
                server.base_url,
                "-n",
                "3",
                "-r",
                "2",
                "--json",
                *extra,
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=environ,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr
        out: dict[str, Any] = json.loads(proc.stdout)
        return out

    with ServerProcess(responder="responders:solve") as server:
        first = run("--cache")  # bare, last
        assert first["summary"]["cache"] == {"hits": 0, "misses": 6}
        calls = server.stats()["requests"]
        second = run("--cache", "7d", "--samples", "0")
        assert second["summary"]["cache"] == {"hits": 6, "misses": 0}
        assert server.stats()["requests"] == calls
        assert second["summary"]["avg_reward"] == first["summary"]["avg_reward"]
        bad = subprocess.run(
            [exe, "classic_single", "-m", "x", "-b", server.base_url, "--cache", "7x"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=environ,
            timeout=240,
        )
    assert bad.returncode == 2 and "--cache '7x' is not a duration" in bad.stderr


def test_a_cached_rerun_needs_no_endpoint_and_a_miss_names_the_dead_one(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    """The model server is gone on the second run: every answer is cached, so the run
    completes (a warning, not the up-front endpoint error); a run that needs one more answer
    fails with the endpoint error itself."""
    from verifiers.testing.server import ServerProcess

    exe = str(Path(sys.executable).parent / "vf-eval")
    environ = {**os.environ, "VF_CACHE_DIR": str(tmp_path / "cache")}

    def run(url: str, n: str) -> subprocess.CompletedProcess[str]:
        args = [exe, "classic_single", "-m", "x", "-b", url, "-n", n, "-r", "2", "--json"]
        return subprocess.run(
            [*args, "--cache"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=environ,
            timeout=240,
        )

    with ServerProcess(responder="responders:solve") as server:
        url = server.base_url
        first = run(url, "3")
        assert first.returncode == 0, first.stderr
    again = run(url, "3")  # the server is stopped
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)["summary"]
    assert summary["cache"] == {"hits": 6, "misses": 0} and summary["num_errors"] == 0
    assert summary["avg_reward"] == json.loads(first.stdout)["summary"]["avg_reward"]
    assert "warning: cannot connect to the model endpoint" in again.stderr
    more = run(url, "4")  # two rollouts are not cached
    assert more.returncode == 1, more.stdout + more.stderr
    assert "Traceback" not in more.stderr and more.stdout == ""
    error = [line for line in more.stderr.splitlines() if not line.startswith("warning:")]
    assert any(
        line.startswith("error: cannot connect to the model endpoint") and url in line
        for line in error
    ), more.stderr
