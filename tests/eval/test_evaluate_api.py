"""``vf.evaluate_async`` run directories, in process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import verifiers as vf


def exact(completion: vf.Messages, answer: str) -> float:
    return float(completion[-1]["content"] == answer)


def env() -> vf.SingleTurnEnv:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))


async def test_resume_with_other_settings_names_what_changed(tmp_path: Path) -> None:
    await vf.evaluate_async(
        env(), model="oracle", rollouts_per_example=1, num_examples=2, output_dir=tmp_path
    )
    with pytest.raises(vf.ConfigError) as err:
        await vf.evaluate_async(
            env(),
            model="oracle",
            rollouts_per_example=1,
            num_examples=3,
            output_dir=tmp_path,
            resume=True,
        )
    assert "num_examples 2 -> 3" in str(err.value)
    assert "rollouts_per_example" not in str(err.value)


async def test_resume_over_an_unreadable_metadata_file_says_what_to_do(tmp_path: Path) -> None:
    await vf.evaluate_async(env(), model="oracle", rollouts_per_example=1, output_dir=tmp_path)
    (tmp_path / "metadata.json").write_text("{torn")
    with pytest.raises(vf.ConfigError, match=r"metadata\.json is unreadable .* delete it"):
        await vf.evaluate_async(
            env(), model="oracle", rollouts_per_example=1, output_dir=tmp_path, resume=True
        )
    (tmp_path / "metadata.json").unlink()
    result = await vf.evaluate_async(
        env(), model="oracle", rollouts_per_example=1, output_dir=tmp_path, resume=True
    )
    assert result.metadata["resumed_records"] == 3


async def test_runs_started_together_get_their_own_directories(tmp_path: Path) -> None:
    # same configuration, same second: the timestamped names collide
    first, second = await asyncio.gather(
        vf.evaluate_async(
            env(), model="oracle", rollouts_per_example=1, save_results=True, results_root=tmp_path
        ),
        vf.evaluate_async(
            env(), model="oracle", rollouts_per_example=1, save_results=True, results_root=tmp_path
        ),
    )
    assert first.path != second.path
    for result in (first, second):
        assert result.path is not None
        assert len((result.path / "results.jsonl").read_text().splitlines()) == 3


async def test_a_directory_in_use_by_another_run_is_refused(tmp_path: Path) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def held(completion: vf.Messages) -> float:
        started.set()
        await release.wait()
        return 1.0

    slow = vf.SingleTurnEnv(
        dataset=[{"question": "q", "answer": "a"}], rubric=vf.Rubric(funcs=[held])
    )
    running = asyncio.create_task(
        vf.evaluate_async(slow, model="oracle", rollouts_per_example=1, output_dir=tmp_path)
    )
    await started.wait()
    with pytest.raises(vf.ConfigError, match="another run is writing to"):
        second = vf.evaluate_async(
            slow, model="oracle", rollouts_per_example=1, output_dir=tmp_path, resume=True
        )
        await asyncio.wait_for(second, timeout=30)  # were it let in, it would wait on `held`
    release.set()
    assert (await running).avg_reward == 1.0
    resumed = await vf.evaluate_async(
        slow, model="oracle", rollouts_per_example=1, output_dir=tmp_path, resume=True
    )
    assert resumed.metadata["resumed_records"] == 1


async def test_result_files_follow_the_umask(tmp_path: Path) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        await vf.evaluate_async(env(), model="oracle", output_dir=tmp_path / "a")
        # resume rewrites results.jsonl through a temporary file too
        await vf.evaluate_async(env(), model="oracle", output_dir=tmp_path / "a", resume=True)
        os.umask(0o077)
        await vf.evaluate_async(env(), model="oracle", output_dir=tmp_path / "b")
    finally:
        os.umask(old)
    for name in ("results.jsonl", "metadata.json"):
        assert stat.S_IMODE((tmp_path / "a" / name).stat().st_mode) == 0o644, name
        assert stat.S_IMODE((tmp_path / "b" / name).stat().st_mode) == 0o600, name
