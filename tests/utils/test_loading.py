"""Finding environments by id."""

from __future__ import annotations

from pathlib import Path

import pytest

import verifiers as vf
from verifiers.loading import parse_env_id


def test_parse_ids() -> None:
    spec = parse_env_id("alice/wordle@1.2.0")
    assert (spec.owner, spec.name, spec.version) == ("alice", "wordle", "1.2.0")
    assert parse_env_id("wordle").owner is None
    with pytest.raises(vf.ConfigError, match="OWNER/NAME"):
        parse_env_id("a/b/c")


def test_unknown_environment_suggests_and_names_install_command() -> None:
    with pytest.raises(vf.EnvironmentNotFoundError) as info:
        vf.load_environment("alice/definitely-not-installed")
    assert "vf env install alice/definitely-not-installed" in str(info.value)


def test_stdlib_module_is_not_mistaken_for_an_environment() -> None:
    with pytest.raises(vf.EnvironmentNotFoundError):
        vf.load_environment("json")


def test_module_fallback_and_argument_checks(classic_envs_path: Path) -> None:
    env = vf.load_environment("classic_single", num_examples=3)
    assert env.env_id == "classic_single" and env.env_args == {"num_examples": 3}
    assert len(env.get_eval_dataset()) == 3
    with pytest.raises(vf.ConfigError, match="did you mean 'num_examples'"):
        vf.load_environment("classic_single", num_exampels=3)


def test_eval_defaults_travel_inside_the_wheel(tmp_path: Path) -> None:
    import subprocess
    import sys

    pkg = tmp_path / "src"
    pkg.mkdir()
    (pkg / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "vf-defaults-probe"\nversion = "1.0"\n'
        '[project.entry-points."verifiers.environments"]\ndefaults-probe = "defaults_probe:load_environment"\n'
        '[tool.hatch.build.targets.wheel]\nonly-include = ["defaults_probe.py"]\n'
        '[tool.hatch.build.targets.wheel.extra-metadata]\n"pyproject.toml" = "pyproject.toml"\n'
        "[tool.verifiers.eval]\nnum_examples = 7\nrollouts_per_example = 2\n"
    )
    (pkg / "defaults_probe.py").write_text("def load_environment(): ...\n")
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(wheels),
            str(pkg),
        ],
        check=True,
        capture_output=True,
    )
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            *map(str, wheels.iterdir()),
        ],
        check=True,
        capture_output=True,
    )
    code = "from verifiers.loading import eval_defaults; print(eval_defaults('defaults-probe'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "{'num_examples': 7, 'rollouts_per_example': 2}"
