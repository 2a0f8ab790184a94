"""``vf.evaluate_async`` run directories, in process."""

from __future__ import annotations

from pathlib import Path

import pytest

import verifiers as vf


def exact(completion: vf.Messages, answer: str) -> float:
    return float(completion[-1]["content"] == answer)


def env() -> vf.SingleTurnEnv:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))


async def test_resume_with_other_settings_names_what_changed(tmp_path: Path) -> None:
    await vf.evaluate_async(env(), model="oracle", num_examples=2, output_dir=tmp_path)
    with pytest.raises(vf.ConfigError) as err:
        await vf.evaluate_async(
            env(), model="oracle", num_examples=3, output_dir=tmp_path, resume=True
        )
    assert "num_examples 2 -> 3" in str(err.value)
    assert "rollouts_per_example" not in str(err.value)


async def test_resume_over_an_unreadable_metadata_file_says_what_to_do(tmp_path: Path) -> None:
    await vf.evaluate_async(env(), model="oracle", output_dir=tmp_path)
    (tmp_path / "metadata.json").write_text("{torn")
    with pytest.raises(vf.ConfigError, match=r"metadata\.json is unreadable .* delete it"):
        await vf.evaluate_async(env(), model="oracle", output_dir=tmp_path, resume=True)
    (tmp_path / "metadata.json").unlink()
    result = await vf.evaluate_async(env(), model="oracle", output_dir=tmp_path, resume=True)
    assert result.metadata["resumed_records"] == 3
