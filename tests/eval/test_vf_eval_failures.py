"""vf-eval fails loudly: an unreachable or wrong endpoint, a run where every rollout errored, an
unset key variable, an unknown alias; and shows what a user expects (samples, progress lines)."""

from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verifiers.testing.server import ServerProcess


def vf_eval(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "vf-eval"
    return subprocess.run(
        [str(exe), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_nothing_listening_fails_fast_with_the_cause(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    proc = vf_eval("classic_single", "-m", "x", "-b", url, "-n", "2", cwd=tmp_path)
    assert time.monotonic() - started < 60  # no minute of retries per rollout
    assert proc.returncode == 1
    [line, *_] = proc.stderr.splitlines()
    assert "cannot connect to the model endpoint" in line and "connection refused" in line
    assert "-b" in line and "Traceback" not in proc.stderr
    assert "status: completed" not in proc.stdout


def test_a_base_url_without_v1_is_named(classic_envs_path: Path, tmp_path: Path) -> None:
    with ServerProcess(responder="responders:solve") as server:
        root = server.base_url.rsplit("/v1", 1)[0]
        proc = vf_eval("classic_single", "-m", "x", "-b", root, "-n", "2", cwd=tmp_path)
    assert proc.returncode == 1
    assert "404" in proc.stderr and f"try -b {root}/v1" in proc.stderr


def test_every_rollout_errored_exits_1_and_shows_the_first_error(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    # the server answers /models but every completion request gets a 500
    with ServerProcess(responder="responders:solve", fault_rate=1.0, fault_kinds="500") as server:
        proc = vf_eval(
            "classic_single",
            "-m",
            "x",
            "-b",
            server.base_url,
            "-n",
            "2",
            "-r",
            "1",
            "--max-retries",
            "0",
            "-s",
            cwd=tmp_path,
        )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "first EndpointError:" in proc.stdout  # the cause, on screen
    assert "every rollout errored: 2 rollouts (first: EndpointError:" in proc.stderr


def test_max_error_rate_fails_a_partly_errored_run(classic_envs_path: Path, tmp_path: Path) -> None:
    args = ["classic_single", "-m", "x", "-n", "10", "-r", "1", "--max-retries", "0"]
    with ServerProcess(
        responder="responders:solve", fault_rate=0.5, fault_kinds="500", seed=3
    ) as server:
        ok = vf_eval(*args, "-b", server.base_url, "--json", cwd=tmp_path)
        summary = json.loads(ok.stdout)["summary"]
        assert 0 < summary["num_errors"] < 10, summary  # some errored, not all: exit 0
        assert ok.returncode == 0, ok.stderr
        strict = vf_eval(*args, "-b", server.base_url, "--max-error-rate", "0", cwd=tmp_path)
    assert strict.returncode == 1 and "above --max-error-rate 0" in strict.stderr


def test_an_unset_key_variable_is_an_error(classic_envs_path: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MY_MISSING_KEY"}
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "vf-eval"),
            "classic_single",
            "-m",
            "x",
            "-b",
            "http://127.0.0.1:9/v1",
            "-k",
            "MY_MISSING_KEY",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "$MY_MISSING_KEY (named by -k) is not set" in proc.stderr


def test_an_alias_whose_key_variable_is_unset_is_an_error(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    """Like -k with an unset variable: no request goes out without the key the alias names."""
    with ServerProcess(responder="responders:solve") as server:
        (tmp_path / "endpoints.toml").write_text(
            f'[keyed]\nmodel = "toy"\nbase_url = "{server.base_url}"\n'
            'api_key_var = "MY_UNSET_ALIAS_KEY"\n'
        )
        env = {k: v for k, v in os.environ.items() if k != "MY_UNSET_ALIAS_KEY"}
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "vf-eval"), "classic_single", "-m", "keyed",
             "-e", "endpoints.toml", "-n", "1", "-r", "1"],
            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        served = server.stats()["requests"]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert (
        "error: alias 'keyed' in endpoints.toml takes its API key from $MY_UNSET_ALIAS_KEY, "
        "which is not set (export MY_UNSET_ALIAS_KEY=..." in line
    ), line
    assert served == 0


def test_an_unknown_alias_lists_the_aliases(classic_envs_path: Path, tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    registry = repo / "configs" / "endpoints.toml"
    proc = vf_eval("classic_single", "-m", "qwn", "-e", str(registry), cwd=tmp_path)
    assert proc.returncode == 2
    assert "'qwn' is not an alias in" in proc.stderr
    assert "gpt-4.1-mini, qwen, qwen-replicas" in proc.stderr


def test_a_package_directory_evaluates_without_installing(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    proc = vf_eval(
        str(repo / "environments" / "wordle"), "-m", "oracle", "-n", "2", "-r", "1", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "1.0000" in proc.stdout  # the oracle solves every game


def test_samples_and_progress_lines_off_a_terminal(classic_envs_path: Path, tmp_path: Path) -> None:
    proc = vf_eval("classic_single", "-m", "oracle", "-n", "4", "-r", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "sample rollouts (3 of 4):" in proc.stdout
    assert proc.stdout.count("  completion: ") == 3 and "  reward:     " in proc.stdout
    # not a terminal: progress comes as plain lines, ending with the total
    lines = [line for line in proc.stderr.splitlines() if "rollouts, reward" in line]
    assert lines and lines[-1].startswith("classic_single · oracle: 4/4 rollouts, reward ")
    none = vf_eval("classic_single", "-m", "oracle", "-n", "2", "--samples", "0", cwd=tmp_path)
    assert "sample rollouts" not in none.stdout


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_json_mode_keeps_the_exit_code_on_total_failure(
    extra: list[str], classic_envs_path: Path, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = vf_eval("classic_single", "-m", "x", "-b", url, *extra, cwd=tmp_path)
    assert proc.returncode == 1


def _sigint_to_another_thread(pid: int) -> None:
    """SIGINT to one of ``pid``'s threads other than its main thread (tgkill), as the kernel
    may deliver a Ctrl-C meant for the whole process."""
    import ctypes
    import platform
    import signal

    numbers = {"x86_64": 234, "aarch64": 131}  # SYS_tgkill
    if platform.machine() not in numbers:
        pytest.skip(f"no tgkill number known for {platform.machine()}")
    others = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir() if int(t.name) != pid]
    assert others, "vf-eval has no thread besides its main one (its progress ticker runs)"
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(numbers[platform.machine()], pid, others[0], signal.SIGINT) == 0


@pytest.mark.parametrize("receiver", ["process", "another-thread"])
def test_ctrl_c_names_the_run_directory_and_the_resume_command(
    receiver: str, classic_envs_path: Path, tmp_path: Path
) -> None:
    """Ctrl-C stops the run at once, also when the kernel hands the signal to a thread other
    than the main one while every request is held (the loop then waits on no timer)."""
    import shlex
    import signal

    # the server answers three requests, then holds the others until the test releases them:
    # the interrupt lands mid-run however slow the machine is
    release = tmp_path / "release"
    with ServerProcess(
        responder="responders:solve_then_hold", env={"VF_TEST_RELEASE": str(release)}
    ) as server:
        args = ["classic_single", "-m", "toy", "-b", server.base_url, "-n", "20", "-r", "2"]
        exe = Path(sys.executable).parent / "vf-eval"
        proc = subprocess.Popen(
            [str(exe), *args, "-c", "2", "-s"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            # a hang below is reported with every thread's stack (SIGABRT dumps them)
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            files = list(tmp_path.glob("outputs/evals/*/*/results.jsonl"))
            if files and files[0].read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.01)  # polling the file for progress, not synchronising on time
        assert proc.poll() is None, "the run finished before it could be interrupted"
        if receiver == "process":
            proc.send_signal(signal.SIGINT)
        else:
            _sigint_to_another_thread(proc.pid)
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            try:
                _, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            pytest.fail(f"vf-eval did not stop within 120 s of Ctrl-C; its stderr:\n{err}")
        assert proc.returncode == 130, err
        [run_dir] = tmp_path.glob("outputs/evals/*/*")
        assert (
            f"interrupted: the finished rollouts are saved in {run_dir.relative_to(tmp_path)}"
            in err
        )
        command = err.split("continue with: ", 1)[1].rsplit(")", 1)[0]
        argv = shlex.split(command)
        assert (
            argv[0] == "vf-eval"
            and "--resume" in argv
            and str(run_dir.relative_to(tmp_path)) in argv
        )
        assert not (run_dir / ".lock").exists()  # no lock file left behind
        assert len((run_dir / "results.jsonl").read_text().splitlines()) < 40
        release.touch()
        resumed = vf_eval(*argv[1:], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    assert len(lines) == 40


RAISING_ENV = """
import verifiers as vf

def judged(completion, answer) -> float:
    raise ValueError("the judge is down")

def load_environment():
    rows = [{"question": "q1", "answer": "a1"}, {"question": "q2", "answer": "a2"}]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[judged]))
"""


def test_a_raising_reward_function_is_named_with_its_message_and_fails_the_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "raising_reward_env.py").write_text(RAISING_ENV)
    proc = vf_eval(
        "raising_reward_env", "-m", "oracle", "-n", "2", "-r", "1", "-o", "run",
        cwd=tmp_path, env={"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "reward function judged raised in 2 rollouts, first: ValueError: the judge is down"
        in proc.stdout
    )
    assert (
        "every rollout errored: 2 rollouts (first: reward function judged: ValueError: the "
        "judge is down)" in proc.stderr
    )
    summary = json.loads((tmp_path / "run" / "metadata.json").read_text())["summary"]
    assert summary["num_failed"] == 2 and summary["num_reward_errors"] == 2


def test_the_summary_says_what_each_figure_counts_when_rollouts_errored(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    """--max-retries 0 and 4 of 20 rollouts lost to HTTP 500s: nothing was retried (the row
    says so, counting each failed request once), and the reward mean and pass@k name the 16
    scored rollouts they are over, the same in the table, --json and metadata.json."""
    import contextlib

    from tests.clirun import run_cli
    from verifiers.testing import OpenAITestServer

    solve = importlib.import_module("responders").solve  # on the path: classic_envs_path
    runs = []
    for extra in ([], ["--json"]):
        out = tmp_path / f"run{len(runs)}"
        with (
            OpenAITestServer(responder=solve, fault_sequence=["500"] * 4) as server,
            contextlib.chdir(tmp_path),
        ):
            args = ["classic_single", "-m", "toy", "-b", server.base_url, "-n", "10", "-r", "2"]
            args += ["-c", "1", "--max-retries", "0", "-o", str(out), "--samples", "0", *extra]
            runs.append(run_cli(*args, prog="vf-eval"))
        assert runs[-1].returncode == 0, runs[-1].stderr
    table, as_json = runs
    meta = json.loads((tmp_path / "run0" / "metadata.json").read_text())["summary"]
    summary = json.loads(as_json.stdout)["summary"]
    assert meta["num_scored"] == summary["num_scored"] == 16
    assert meta["request_failures"] == {"http_500": 4, "gave_up": 4}
    [note] = summary["notes"]
    assert meta["notes"] == [note]
    assert "16 scored rollouts" in note and "4 errored rollouts" in note and "pass@k" in note
    text = table.stdout
    assert "reward (mean of 16 scored ± s.e.)" in text and "pass@1 (16 scored)" in text
    assert f"note: {note}" in text
    row = next(line for line in text.splitlines() if "failed requests" in line)
    assert "4 (http_500: 4), none retried" in row, row
    assert "retried)" not in text and "gave_up" not in text
