"""``vf.evaluate`` and ``vf-eval`` take their defaults from one place, the library: the
caller's values, else the environment's ``[tool.verifiers.eval]``, else 5 examples x 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import verifiers as vf

MODULE = "vf_defaults_probe_env"

ENV_SOURCE = """
import verifiers as vf


def load_environment():
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(6)]
    exact = lambda completion, answer: float(completion[-1]["content"] == answer)
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))
"""

PYPROJECT = """
[project]
name = "vf-defaults-probe-env"
version = "0.1.0"

[tool.verifiers.eval]
num_examples = 4
rollouts_per_example = 2
max_tokens = 77
temperature = 0.3
"""


@pytest.fixture
def probe_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment checkout (module + pyproject.toml) importable by module name."""
    src = tmp_path / "src"
    src.mkdir()
    (src / f"{MODULE}.py").write_text(ENV_SOURCE)
    (src / "pyproject.toml").write_text(PYPROJECT)
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)  # each test imports its own copy
    return src


def run_vf_eval(probe_dir: Path, cwd: Path, *args: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(probe_dir), env.get("PYTHONPATH", "")])
    exe = Path(sys.executable).with_name("vf-eval")
    proc = subprocess.run(
        [str(exe), MODULE, "-m", "oracle", "--json", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta: dict = json.loads(proc.stdout)
    return meta


def test_vf_evaluate_and_vf_eval_apply_the_same_declared_defaults(
    probe_dir: Path, tmp_path: Path
) -> None:
    cli = run_vf_eval(probe_dir, tmp_path)
    lib = vf.evaluate(MODULE, model="oracle")
    for meta in (cli, lib.metadata):
        assert meta["num_examples"] == 4
        assert meta["rollouts_per_example"] == 2
        assert meta["sampling_args"] == {"max_tokens": 77, "temperature": 0.3}
        assert meta["summary"]["num_rollouts"] == 8
    assert cli["config_hash"] == lib.metadata["config_hash"]


def test_given_values_win_over_declared_defaults_in_both(probe_dir: Path, tmp_path: Path) -> None:
    cli = run_vf_eval(probe_dir, tmp_path, "-n", "1", "-r", "3", "-T", "0.9")
    lib = vf.evaluate(
        MODULE,
        model="oracle",
        num_examples=1,
        rollouts_per_example=3,
        sampling_args={"temperature": 0.9},
    )
    assert cli["config_hash"] == lib.metadata["config_hash"]
    assert lib.metadata["sampling_args"] == {"max_tokens": 77, "temperature": 0.9}
    assert lib.summary["num_rollouts"] == 3


def test_without_declared_defaults_the_library_runs_5_examples_3_times() -> None:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(8)]
    result = vf.evaluate(vf.SingleTurnEnv(dataset=rows), model="oracle")
    assert (result.metadata["num_examples"], result.metadata["rollouts_per_example"]) == (5, 3)
    assert result.summary["num_rollouts"] == 15


async def test_the_classic_evaluate_keeps_its_own_defaults() -> None:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(8)]
    env = vf.SingleTurnEnv(dataset=rows)
    result = await env.evaluate(vf.OracleClient(), "oracle")
    assert result.summary["num_rollouts"] == 8  # all rows, once: classic env.evaluate()


def test_a_malformed_declared_default_names_the_table(probe_dir: Path) -> None:
    (probe_dir / "pyproject.toml").write_text(PYPROJECT.replace("= 4", '= "four"'))
    with pytest.raises(vf.ConfigError, match=r"\[tool.verifiers.eval\] num_examples = 'four'"):
        vf.evaluate(MODULE, model="oracle")
