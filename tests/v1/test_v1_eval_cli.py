"""``vf-eval`` with verifiers 0.4's v1 command line: dotted flags onto ``EvalConfig``,
``@ FILE.toml`` under the flags, the run saved where ``vf view`` and ``--resume`` find it, and
clear errors for unknown flags, classic-only flags and classic environments."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import CliResult, run_cli
from verifiers.testing.server import ServerProcess

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parents[2]


@pytest.fixture(autouse=True)
def fixtures_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")])
    )


@pytest.fixture(scope="module")
def server() -> Any:
    path = os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")])
    with ServerProcess(responder="v1_responders:count_words", env={"PYTHONPATH": path}) as srv:
        yield srv


def vf_eval(cwd: Path, *args: str) -> CliResult:
    with contextlib.chdir(cwd):
        return run_cli(*args, prog="vf-eval")


def records(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_upstream_flags_run_a_v1_taskset_and_save_where_vf_view_reads(
    tmp_path: Path, server: Any
) -> None:
    from verifiers.web.viewer import Viewer

    result = vf_eval(
        tmp_path,
        "count-words-v1",
        "-m", "toy",
        "--client.base-url", server.base_url,
        "--client.api-key-var", "VF_TEST_UNSET_KEY",
        "-n", "1", "-r", "2",
        "--env.agent.max-turns", "4",
        "--env.taskset.sentences", "a b c", "d e",
        "--sampling.max-tokens", "512",
        "--run.name", "first",
        "--no-rich", "--no-push",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run_dir = tmp_path / "outputs" / "first"
    got = records(run_dir)
    assert [r["reward"] for r in got] == [1.0, 1.0]  # one task (-n 1), two rollouts (-r 2)
    assert {r["info"]["v1_task"]["answer"] for r in got} == {3}
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["sampling_args"]["max_tokens"] == 512
    saved = json.loads((run_dir / "configs" / "eval.json").read_text())
    assert saved["env"]["agent"]["max_turns"] == 4 and saved["select"]["limit"] == 1
    assert saved["env"]["taskset"]["sentences"] == ["a b c", "d e"]
    assert saved["client"]["base_url"] == server.base_url and saved["push"] is False
    page = Viewer(run_dir).handle("/run/@root/")
    assert page.status == 200 and b"count-words-v1" in page.body
    # 0.4.0's run file beside ours: one episode record per rollout, read back as episodes
    from verifiers.v1.utils.trace_store import read_episodes

    episodes = read_episodes(run_dir)
    assert len(episodes) == 2
    assert [e.traces[0].stop_condition for e in episodes] == ["agent_completed"] * 2
    assert [e.traces[0].reward for e in episodes] == [1.0, 1.0]

    # the saved config resumes the run: nothing is left to rerun
    again = vf_eval(tmp_path, "@", str(run_dir / "configs" / "eval.json"), "--resume")
    assert again.returncode == 0, again.stderr
    assert len(records(run_dir)) == 2
    # under another config the run is not resumed
    changed = vf_eval(tmp_path, "@", str(run_dir / "configs" / "eval.json"), "-r", "3", "--resume")
    assert changed.returncode == 2 and "num_rollouts" in changed.stderr
    # without --resume or --clean an existing run is not overwritten
    refused = vf_eval(tmp_path, "@", str(run_dir / "configs" / "eval.json"))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr


def test_a_toml_file_loads_the_config_and_flags_override_it(tmp_path: Path, server: Any) -> None:
    config = tmp_path / "eval.toml"
    config.write_text(
        f"""
model = "toy"
rollouts_per_example = 3
output_dir = "runs"

[run]
name = "from-file"

[client]
base_url = "{server.base_url}"
api_key_var = "VF_TEST_UNSET_KEY"

[env.taskset]
id = "count-words-v1"
sentences = ["one", "two words", "three more words"]

[env.agent]
max_turns = 2

[select]
limit = 1
"""
    )
    result = vf_eval(tmp_path, "@", str(config), "-r", "1", "--select.skip", "1", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    run_dir = tmp_path / "runs" / "from-file"
    assert tmp_path / out["path"] == run_dir
    got = records(run_dir)
    assert len(got) == 1  # -r 1 beats the file's rollouts_per_example = 3
    assert got[0]["info"]["v1_task"]["answer"] == 2 and got[0]["reward"] == 1.0
    saved = json.loads((run_dir / "configs" / "eval.json").read_text())
    assert saved["num_rollouts"] == 1 and saved["env"]["agent"]["max_turns"] == 2


def test_dry_run_writes_the_resolved_config_and_runs_nothing(tmp_path: Path) -> None:
    result = vf_eval(
        tmp_path, "count-words-v1", "-o", "out", "--run.name", "dry", "--dry-run", "--clean"
    )
    assert result.returncode == 0, result.stderr
    saved = json.loads((tmp_path / "out" / "dry" / "configs" / "eval.json").read_text())
    assert saved["env"]["taskset"]["id"] == "count-words-v1"
    assert not (tmp_path / "out" / "dry" / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--env.agent.max-turn", "4"],
            "unknown flag --env.agent.max-turn (did you mean --env.agent.max-turns",
        ),
        (["--sampling.max-token", "5"], "did you mean --sampling.max-tokens"),
        (["--env.taskset.sentence", "a"], "did you mean --env.taskset.sentences"),
        (["--client", "x"], "--client is a group of settings"),
        (["--env.agent.max-turns", "0"], "--env.agent.max-turns: Input should be greater"),
        (["-b", "http://x", "--no-rich"], "-b: write --client.base-url URL"),
        (["-t", "5", "--no-push"], "-t: write --sampling.max-tokens N"),
        (["--env.id", "x", "--env.taskset.id", "other"], "give one of them"),
    ],
)
def test_bad_flags_are_named_with_what_to_write(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = vf_eval(tmp_path, "count-words-v1", *args)
    assert result.returncode == 2, result.stdout
    assert message in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_help_lists_the_narrowed_flags(tmp_path: Path) -> None:
    result = vf_eval(tmp_path, "count-words-v1", "--no-push", "--help")
    assert result.returncode == 0
    assert "--env.taskset.sentences LIST" in result.stdout
    assert "-n, --select.limit" in result.stdout and "--client.base-url" in result.stdout


def test_v1_flags_on_a_classic_environment_are_refused(tmp_path: Path) -> None:
    module = tmp_path / "classic_words.py"
    module.write_text(
        "import verifiers as vf\n"
        "from datasets import Dataset\n"
        "def load_environment():\n"
        "    rows = [{'question': 'q', 'answer': 'a'}]\n"
        "    return vf.SingleTurnEnv(eval_dataset=Dataset.from_list(rows))\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        result = vf_eval(tmp_path, "classic-words", "--sampling.max-tokens", "5")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("classic_words", None)
    assert result.returncode == 2
    assert "classic-words is a classic environment" in result.stderr
    assert "--sampling.max-tokens" in result.stderr and "-t MAX_TOKENS" in result.stderr


def test_classic_flags_keep_their_meaning_for_a_v1_environment(tmp_path: Path, server: Any) -> None:
    # -s is --save-results and -o the run directory itself, as before
    result = vf_eval(
        tmp_path, "count-words-v1", "-m", "toy", "-b", server.base_url, "-n", "1", "-r", "1",
        "-s", "-o", "classic-run",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(records(tmp_path / "classic-run")) == 1


def test_the_installed_vf_eval_script_takes_the_upstream_shape(tmp_path: Path, server: Any) -> None:
    """As upstream's tests/v1/test_envs.py runs it: a process of its own."""
    cmd = [
        sys.executable, "-c", "from cli.main import eval_main; eval_main()",
        "count-words-v1", "-m", "toy",
        "--client.base-url", server.base_url, "--client.api-key-var", "VF_TEST_UNSET_KEY",
        "-n", "1", "-r", "1", "--env.agent.max-turns", "4",
        "--sampling.max-tokens", "512", "--no-rich", "--no-push",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FIXTURES), str(REPO)])}
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (results,) = tmp_path.glob("outputs/*/results.jsonl")
    assert [json.loads(line)["reward"] for line in results.read_text().splitlines()] == [1.0]


@pytest.mark.parametrize(
    ("args", "v1"),
    [
        (["env", "-m", "gpt", "-n", "2", "-s", "-o", "out", "--resume"], False),
        (["env", "-m", "@preset/fast", "-b", "http://x"], False),
        (["env", "--no-such-flag"], False),  # the classic parser names it
        (["env", "--client.base-url", "http://x"], True),
        (["env", "--env.agent.max-turns=4"], True),
        (["@", "eval.toml"], True),
        (["@eval.toml", "-n", "1"], True),
        (["env", "--no-rich"], True),
        (["env", "--clean"], True),
        (["env", "--num-rollouts", "2"], True),
    ],
)
def test_which_command_lines_take_the_v1_shape(args: list[str], v1: bool) -> None:
    import typer.main

    from cli import eval_cmd
    from cli.eval_v1 import is_v1_command_line

    params = typer.main.get_command(eval_cmd.app).params
    assert is_v1_command_line(args, params) is v1


def test_vf_eval_subcommand_takes_the_v1_shape_too(tmp_path: Path) -> None:
    with contextlib.chdir(tmp_path):
        result = run_cli("eval", "count-words-v1", "--env.agent.max-turn", "4", prog="vf")
    assert result.returncode == 2
    assert "did you mean --env.agent.max-turns" in result.stderr


def test_a_run_with_04_flags_records_the_installed_wheel_it_ran(tmp_path: Path) -> None:
    # a v1 package installed from its wheel (as `vf env install` does): the run made with
    # 0.4's flags names its distribution, version and wheel sha256, so `vf eval push` can pin
    # it to the release (they were null, and the push was refused)
    import hashlib

    pkg_parent = tmp_path / "src"
    pkg_parent.mkdir()
    vf = str(Path(sys.executable).parent / "vf")
    made = subprocess.run(
        [vf, "env", "init", "prov-task", "--v1", "--path", str(pkg_parent)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    pkg = next(p for p in pkg_parent.rglob("pyproject.toml")).parent
    built = subprocess.run(
        [vf, "env", "build", str(pkg), "-o", str(tmp_path / "dist")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site)]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(FIXTURES), str(REPO)])}
    cmd = [
        sys.executable, "-c", "from cli.main import eval_main; eval_main()",
        "prov-task", "-m", "toy", "--client.base-url", "URL",
        "--client.api-key-var", "VF_TEST_UNSET_KEY", "-n", "1", "-r", "1",
        "--no-rich", "--no-push",
    ]  # fmt: skip
    with ServerProcess() as echo:  # the scaffold's task, answered by the echo model
        cmd[cmd.index("--client.base-url") + 1] = echo.base_url
        proc = subprocess.run(
            cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (meta_path,) = tmp_path.glob("outputs/*/metadata.json")
    meta = json.loads(meta_path.read_text())
    assert meta["env_distribution"] == "prov-task"
    assert meta["env_version"] == "0.1.0"
    assert meta["env_wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
