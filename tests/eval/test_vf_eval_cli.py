"""vf-eval end to end: classic-API environments against a real OpenAI-compatible server,
durable results across kill -9 and --resume, and a run through injected faults. The command
runs in this process, except where a test kills it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.clirun import CliResult, run_cli
from verifiers.testing.server import ServerProcess

EXPECTED_REWARD = {"classic_single": 1.2, "classic_multi": 1.0, "classic_tools": 1.0}


def vf_eval(*args: str, cwd: Path) -> CliResult:
    """``vf-eval ARGS`` run in this process from ``cwd``."""
    with contextlib.chdir(cwd):
        return run_cli(*args, prog="vf-eval")


def results_of(cwd: Path) -> list[dict]:
    files = list(cwd.glob("outputs/evals/*/*/results.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines()]


@pytest.mark.parametrize("env_id", sorted(EXPECTED_REWARD))
def test_classic_environment_runs_unchanged(
    env_id: str, classic_envs_path: Path, tmp_path: Path
) -> None:
    with ServerProcess(responder="responders:solve") as server:
        proc = vf_eval(
            env_id, "-m", "toy", "-b", server.base_url, "-n", "20", "-r", "3", "-s", cwd=tmp_path
        )
    assert proc.returncode == 0, proc.stderr
    records = results_of(tmp_path)
    assert len(records) == 60
    assert Counter((r["example_id"], r["rollout_index"]) for r in records).most_common(1)[0][1] == 1
    assert all(r["error"] is None for r in records)
    assert all(r["reward"] == pytest.approx(EXPECTED_REWARD[env_id]) for r in records)
    meta = json.loads(next(tmp_path.glob("outputs/evals/*/*/metadata.json")).read_text())
    assert meta["summary"]["num_rollouts"] == 60
    assert meta["summary"]["pass_at_k"].keys() == {"1", "2", "3"}
    assert meta["status"] == "completed"


def test_tool_calls_are_saved_as_objects(classic_envs_path: Path, tmp_path: Path) -> None:
    with ServerProcess(responder="responders:solve") as server:
        proc = vf_eval(
            "classic_tools",
            "-m",
            "toy",
            "-b",
            server.base_url,
            "-n",
            "2",
            "-r",
            "1",
            "-s",
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr
    first_call = results_of(tmp_path)[0]["completion"][0]["tool_calls"][0]
    assert first_call["function"]["arguments"] == {"a": 0, "b": 3}


@pytest.mark.parametrize("kill_after", [1, 25])
def test_kill_9_then_resume_keeps_every_rollout_exactly_once(
    kill_after: int, classic_envs_path: Path, tmp_path: Path
) -> None:
    with ServerProcess(responder="responders:solve", latency_ms=40) as server:
        args = [
            "classic_single",
            "-m",
            "toy",
            "-b",
            server.base_url,
            "-n",
            "20",
            "-r",
            "3",
            "-c",
            "4",
            "-s",
        ]
        exe = Path(sys.executable).parent / "vf-eval"
        proc = subprocess.Popen(
            [str(exe), *args], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        lines = 0
        while time.monotonic() < deadline and proc.poll() is None:
            files = list(tmp_path.glob("outputs/evals/*/*/results.jsonl"))
            lines = files[0].read_bytes().count(b"\n") if files else 0
            if lines >= kill_after:
                break
            time.sleep(0.01)  # polling the file for progress, not synchronising on time
        assert proc.poll() is None, "the run finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before = results_of(tmp_path)
        assert 0 < len(before) < 60
        resumed = vf_eval(*args, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    records = results_of(tmp_path)
    keys = Counter((r["example_id"], r["rollout_index"]) for r in records)
    assert len(records) == 60 and set(keys.values()) == {1}
    assert all(r["reward"] == pytest.approx(1.2) for r in records)
    # the kept records were not redone
    kept = {(r["example_id"], r["rollout_index"]) for r in before if r["error"] is None}
    meta = json.loads(next(tmp_path.glob("outputs/evals/*/*/metadata.json")).read_text())
    assert meta["resumed_records"] == len(kept)


def test_run_completes_through_20_percent_faults(classic_envs_path: Path, tmp_path: Path) -> None:
    with ServerProcess(
        responder="responders:solve",
        fault_rate=0.2,
        fault_kinds="500,429,drop,malformed,hang",
        seed=7,
    ) as server:
        proc = vf_eval(
            "classic_single",
            "-m",
            "toy",
            "-b",
            server.base_url,
            "-n",
            "20",
            "-r",
            "3",
            "--timeout",
            "1",
            "--max-retries",
            "8",
            "-s",
            "--json",
            cwd=tmp_path,
        )
        stats = server.stats()
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(proc.stdout)
    summary = meta["summary"]
    assert summary["num_rollouts"] == 60
    failures = summary["request_failures"]
    injected = sum(stats["faults"].values())
    assert injected > 0
    counted = {k: v for k, v in failures.items() if k != "gave_up"}
    # every injected fault is counted once; on a loaded machine a slow answer may also pass
    # the 1 s timeout: extra failures can only be timeouts
    hangs = stats["faults"].get("hang", 0)
    assert sum(v for k, v in counted.items() if k != "timeout") == injected - hangs, counted
    assert counted.get("timeout", 0) >= hangs
    scored = [r for r in results_of(tmp_path) if r["error"] is None]
    assert len(scored) + summary["num_errors"] == 60
    assert all(r["reward"] == pytest.approx(1.2) for r in scored)


def test_config_errors_are_one_line_and_exit_2(classic_envs_path: Path, tmp_path: Path) -> None:
    bad_json = vf_eval("classic_single", "-m", "oracle", "-a", "{not json", cwd=tmp_path)
    assert bad_json.returncode == 2
    assert "--env-args is not valid JSON" in bad_json.stderr
    assert "Traceback" not in bad_json.stderr
    unknown_arg = vf_eval(
        "classic_single", "-m", "oracle", "-a", '{"num_exampels": 3}', cwd=tmp_path
    )
    assert unknown_arg.returncode == 2
    assert "did you mean 'num_examples'" in unknown_arg.stderr
    misspelt = vf_eval("wordel", "-m", "oracle", cwd=tmp_path)
    assert misspelt.returncode == 2
    assert "not installed" in misspelt.stderr and "did you mean: wordle" in misspelt.stderr.lower()
    assert "wordel`" not in misspelt.stderr  # no hint to install the typo
    missing = vf_eval("nothing-like-it", "-m", "oracle", cwd=tmp_path)
    assert missing.returncode == 2
    assert "not installed" in missing.stderr
    assert "vf env install OWNER/nothing-like-it" in missing.stderr


def test_errors_found_after_the_progress_bar_starts_stay_one_line(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    (tmp_path / "taken").write_text("a file, not a directory")
    unwritable = vf_eval("classic_single", "-m", "oracle", "-o", "taken/run", cwd=tmp_path)
    assert unwritable.returncode == 2
    [line] = unwritable.stderr.splitlines()
    assert line.startswith("error: cannot create the run directory taken/run: ")
    assert "-o DIR" in line


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("-n", "0", "-n/--num-examples must be -1 (all) or at least 1, got 0"),
        ("-n", "-5", "-n/--num-examples must be -1 (all) or at least 1, got -5"),
        ("-r", "0", "-r/--rollouts-per-example must be at least 1, got 0"),
        ("-c", "0", "-c/--max-concurrent must be at least 1, got 0"),
    ],
)
def test_bad_counts_are_named_before_anything_runs(
    flag: str, value: str, message: str, classic_envs_path: Path, tmp_path: Path
) -> None:
    proc = vf_eval("classic_single", "-m", "oracle", flag, value, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"error: {message}"]
    assert not (tmp_path / "outputs").exists()


def test_json_output_stays_clean_when_the_environment_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a module name no other test uses: in-process runs share sys.modules
    (tmp_path / "chatty_json_env.py").write_text(
        "import verifiers as vf\n"
        "print('importing')\n"
        "def exact(completion, answer) -> float:\n"
        "    print('scoring')\n"
        "    return float(completion[-1]['content'] == answer)\n"
        "def load_environment():\n"
        "    print('building')\n"
        "    rows = [{'question': 'q', 'answer': 'a'}]\n"
        "    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    proc = vf_eval("chatty_json_env", "-m", "oracle", "-n", "1", "-r", "1", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["avg_reward"] == 1.0
    assert "building" in proc.stderr and "scoring" in proc.stderr


def test_oracle_model_gets_full_reward(classic_envs_path: Path, tmp_path: Path) -> None:
    proc = vf_eval("classic_single", "-m", "oracle", "-n", "5", "-r", "2", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["summary"]
    assert summary["avg_reward"] == pytest.approx(1.2)
    assert summary["num_rollouts"] == 10


def test_endpoint_alias_spreads_groups_over_replicas(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    with (
        ServerProcess(responder="responders:solve") as a,
        ServerProcess(responder="responders:solve") as b,
    ):
        (tmp_path / "endpoints.toml").write_text(
            f'[toy]\nmodel = "toy-model"\nbase_url = ["{a.base_url}", "{b.base_url}"]\n'
        )
        proc = vf_eval(
            "classic_single",
            "-m",
            "toy",
            "-e",
            "endpoints.toml",
            "-n",
            "6",
            "-r",
            "2",
            "--json",
            cwd=tmp_path,
        )
        served = [a.stats()["requests"], b.stats()["requests"]]
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["avg_reward"] == pytest.approx(1.2)
    assert served == [6, 6]  # 3 groups of 2 each, alternating replicas


def test_an_existing_run_in_output_dir_is_never_replaced_silently(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    def rows() -> int:
        return len((tmp_path / "run" / "results.jsonl").read_text().splitlines())

    first = vf_eval(
        "classic_single", "-m", "oracle", "-n", "3", "-r", "2", "-o", "run", cwd=tmp_path
    )
    assert first.returncode == 0, first.stderr
    assert rows() == 6
    other = vf_eval(
        "classic_single", "-m", "oracle", "-n", "1", "-r", "1", "-o", "run", cwd=tmp_path
    )
    assert other.returncode == 2
    [line] = other.stderr.splitlines()
    assert line.startswith(
        "error: the output directory run already holds a run (6 rollouts saved) of another "
        "configuration"
    )
    assert "num_examples 3 -> 1" in line and "rollouts_per_example 2 -> 1" in line
    assert "another output directory (-o DIR), or pass --overwrite" in line
    assert rows() == 6  # untouched
    same = vf_eval(
        "classic_single", "-m", "oracle", "-n", "3", "-r", "2", "-o", "run", cwd=tmp_path
    )
    assert same.returncode == 2
    assert "of this configuration: pass --resume to continue it" in same.stderr
    assert rows() == 6
    resumed = vf_eval(
        "classic_single", "-m", "oracle", "-n", "3", "-r", "2", "-o", "run", "--resume",
        cwd=tmp_path,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert rows() == 6
    both = vf_eval(
        "classic_single", "-m", "oracle", "-o", "run", "--resume", "--overwrite", cwd=tmp_path
    )
    assert both.returncode == 2 and "give one of them" in both.stderr
    replaced = vf_eval(
        "classic_single", "-m", "oracle", "-n", "1", "-r", "1", "-o", "run", "--overwrite",
        cwd=tmp_path,
    )  # fmt: skip
    assert replaced.returncode == 0, replaced.stderr
    assert rows() == 1
    meta = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert meta["config"]["num_examples"] == 1


def test_a_missing_hub_environment_gets_the_right_install_command(tmp_path: Path) -> None:
    proc = vf_eval("alice/vf-nope", "-m", "oracle", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "error: environment 'alice/vf-nope' is not installed: install it with "
        "`vf env install alice/vf-nope` (or add --install to install it from the hub now)"
    ]
    # a package directory is named only where the checkout has one
    (tmp_path / "environments" / "vf-nope").mkdir(parents=True)
    (tmp_path / "environments" / "vf-nope" / "pyproject.toml").write_text("")
    local = vf_eval("vf-nope", "-m", "oracle", cwd=tmp_path)
    assert local.stderr.splitlines() == [
        "error: environment 'vf-nope' is not installed: install it with "
        "`vf env install OWNER/vf-nope`, or `pip install -e environments/vf-nope`"
    ]
