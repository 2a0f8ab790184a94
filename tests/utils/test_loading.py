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
