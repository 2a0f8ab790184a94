"""Classic helpers: load_example_dataset, setup_logging, print_prompt_completions_sample."""

from __future__ import annotations

import logging

import pytest

import verifiers as vf


def test_unknown_example_dataset_suggests_a_name() -> None:
    with pytest.raises(vf.ConfigError, match="did you mean 'gsm8k'"):
        vf.load_example_dataset("gsm8")


def test_example_dataset_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", "/nonexistent-vf-cache")
    with pytest.raises((vf.InfraError, vf.ConfigError)) as info:
        vf.load_example_dataset("math500")
    assert "math500" in str(info.value)


def test_setup_logging_configures_the_verifiers_logger(capsys: pytest.CaptureFixture[str]) -> None:
    vf.setup_logging("DEBUG")
    vf.setup_logging("DEBUG")  # idempotent: one handler, not two
    logging.getLogger("verifiers.envs").debug("hello from the driver")
    err = capsys.readouterr().err
    assert err.count("hello from the driver") == 1
    vf.setup_logging("WARNING")


@pytest.mark.parametrize("shape", ["classic", "with_errors"])
def test_print_prompt_completions_sample(shape: str, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = [[{"role": "user", "content": "2+2?"}]]
    completions = [[{"role": "assistant", "content": "4"}]]
    if shape == "classic":
        vf.print_prompt_completions_sample(prompts, completions, [1.0], 7)
    else:
        vf.print_prompt_completions_sample(prompts, completions, [None], [1.0], 7)
    out = capsys.readouterr().out
    assert "step 7" in out and "2+2?" in out and "1.000" in out
