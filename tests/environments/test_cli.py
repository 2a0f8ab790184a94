"""``vf-eval ENV -m oracle`` runs every environment from the command line, with its
``[tool.verifiers.eval]`` defaults, and saves its results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import run_cli
from verifiers.loading import eval_defaults

from .conftest import ENVIRONMENTS

PRESENT = sorted(ENVIRONMENTS)


@pytest.mark.parametrize("name", PRESENT)
def test_vf_eval_oracle_gets_full_reward(name: str, tmp_path: Path) -> None:
    # found by entry point when installed, by module name from the checkout (conftest puts
    # every package directory on sys.path) otherwise
    args = ["-n", "2", "-r", "1", "-o", str(tmp_path / "run"), "--json"]
    if name == "logic":
        args += ["-a", '{"num_examples": 13}']
    proc = run_cli(name, "-m", "oracle", *args, prog="vf-eval")
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads(proc.stdout)
    assert meta["summary"]["avg_reward"] == 1.0
    assert meta["summary"]["num_errors"] == 0
    defaults = eval_defaults(name)
    assert meta["sampling_args"]["max_tokens"] == defaults["max_tokens"]
    records = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert [json.loads(r)["reward"] for r in records] == [1.0, 1.0]
