from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

from cli.main import app
from tests.train.toy_env import load_environment
from verifiers.train.local_client import LocalModelClient
from verifiers.train.loss import token_logprobs
from verifiers.train.packing import pack_samples
from verifiers.train.rollout_source import RolloutSource, RolloutSourceConfig

# the shipped example: a user runs it as-is
EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "train-tiny.toml"


async def _packed_recompute(
    model: Any, tokenizer: Any, sample_temp: float, train_temp: float
) -> float:
    """Sample through the real environment and source, pack, recompute: max |diff| on loss tokens."""
    env = load_environment(num_examples=6)
    client = LocalModelClient(model, tokenizer, seed=1)
    cfg = RolloutSourceConfig(
        rollouts_per_example=3,
        groups_per_batch=4,
        max_in_flight=4,
        filter_zero_variance=False,
        sampling_args={"temperature": sample_temp, "max_tokens": 6},
    )
    source = RolloutSource(env, [client], cfg, tokenizer=tokenizer)
    batch = await source.next_batch(0)
    await source.close()
    packed = pack_samples(batch.samples, seq_len=64)
    assert len(packed.micro_batches) < len(batch.samples)  # several samples per row
    worst = 0.0
    with torch.no_grad():
        for mb in packed.micro_batches:
            t = mb.tensors()
            logits = model(
                input_ids=t["input_ids"], position_ids=t["position_ids"], use_cache=False
            ).logits
            lp = token_logprobs(logits, t["input_ids"], train_temp)
            m = t["loss_mask"]
            worst = max(worst, float((lp[m] - t["old_logprobs"][m]).abs().max()))
    return worst


async def test_trainer_recomputes_the_sampling_logprobs(
    tiny_model: Any, char_tokenizer: Any
) -> None:
    assert await _packed_recompute(tiny_model, char_tokenizer, 0.7, 0.7) < 1e-4
    # the same check catches a temperature mismatch
    assert await _packed_recompute(tiny_model, char_tokenizer, 0.7, 1.0) > 1e-2


def _metrics(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_vf_train_raises_reward_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    runner = CliRunner()
    first = runner.invoke(app, ["train", str(EXAMPLE), "--output-dir", str(out)])
    assert first.exit_code == 0, first.output
    assert "step 20/20" in first.output
    # said before the first step, which can take minutes
    assert "vf train: loading model tiny and environment" in first.output
    assert "vf train: step 1/20 starts once 4 groups x 8 rollouts" in first.output
    rows = _metrics(out)
    assert [r["step"] for r in rows] == list(range(20))
    assert rows[0]["reward"] < 0.1  # the random model rarely says A
    late = sum(r["reward"] for r in rows[-3:]) / 3
    assert late > 0.5, [round(r["reward"], 3) for r in rows]
    documented = (
        "step reward loss lr entropy mismatch_kl logprob_diff_mean sync_seconds "
        "masked_fraction dropped_sequences mean_ratio grad_norm off_policy_lag "
        "off_policy_lag_max num_samples num_tokens num_loss_tokens micro_batches "
        "dropped_overlong wait_seconds adapter_seconds adapter_share step_seconds "
        "tokens_per_second counts"
    ).split()
    assert all(set(documented) <= set(r) for r in rows)
    assert (out / "checkpoints" / "step_10" / "trainer_state.pt").is_file()
    assert (out / "checkpoints" / "step_20" / "trainer_state.pt").is_file()

    # resume: continues at step 20 from the latest checkpoint, with its weights and optimizer
    saved = torch.load(out / "checkpoints" / "step_20" / "trainer_state.pt", weights_only=False)
    from verifiers.train.config import load_train_config
    from verifiers.train.trainer import Trainer

    cfg = load_train_config(EXAMPLE)
    cfg.train.output_dir = str(out)
    resumed = Trainer(cfg)
    assert resumed.step == 20
    exp_avg = resumed.optimizer.state_dict()["state"][0]["exp_avg"]
    # saved by parameter name (resumable with any number of processes)
    first_param = next(iter(saved["optimizer"]["state"]))
    assert first_param == "model.embed_tokens.weight"
    assert torch.equal(exp_avg, saved["optimizer"]["state"][first_param]["exp_avg"])
    # the documented continuation (README): the model has mastered the task by now, so every
    # group has the same reward; the run goes on, each such step counted without an update
    again = runner.invoke(app, ["train", str(EXAMPLE), "--output-dir", str(out), "--steps", "22"])
    assert again.exit_code == 0, again.output
    assert "resuming at step 20" in again.output
    assert [r["step"] for r in _metrics(out)] == [*range(20), 20, 21]
    assert _metrics(out)[-1]["reward"] > 0.5  # the resumed model kept what it learned


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[env]\nid = 'x'\n[train]\nstepz = 3\n", "train.stepz"),
        ("[train]\nsteps = 3\n", "env: Field required"),
        ("[env]\nid = 'x'\nfactory = 'a:b'\n", "exactly one of env.id"),
        ("[env]\nid = 'x'\n[inference]\nbackend = 'server'\n", "base_urls"),
        ("[env\n", "not valid TOML"),
        ("[model]\nname = '/no/such/model'\n[env]\nid = 'x'\n", "is not a directory"),
        ("[model]\ndevice = 'gpu0'\n[env]\nid = 'x'\n", "model.device 'gpu0' is not a torch"),
        ("[model]\ndevice = 'cuda:99'\n[env]\nid = 'x'\n", "model.device 'cuda:99': this machine"),
    ],
)
def test_bad_configs_get_one_clear_line(tmp_path: Path, text: str, needle: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    result = CliRunner().invoke(app, ["train", str(cfg)])
    assert result.exit_code == 2
    assert needle in result.output
    assert "Traceback" not in result.output


def test_missing_config_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_vf_train_loads_an_installed_environment_by_id(
    tmp_path: Path, classic_envs_path: Path
) -> None:
    cfg = tmp_path / "train.toml"
    cfg.write_text(
        "[env]\nid = 'classic_tools'\nargs = { num_examples = 4 }\n"
        "[rollouts]\nrollouts_per_example = 2\ngroups_per_batch = 2\nmax_tokens = 8\n"
        "filter_zero_variance = false\n"
        f"[train]\nsteps = 1\nseq_len = 512\noutput_dir = '{tmp_path / 'run'}'\n"
    )
    result = CliRunner().invoke(app, ["train", str(cfg)])
    assert result.exit_code == 0, result.output
    (row,) = _metrics(tmp_path / "run")
    assert row["num_samples"] == 4 and row["num_loss_tokens"] > 0


def test_unknown_environment_id_is_a_clear_error(tmp_path: Path) -> None:
    cfg = tmp_path / "train.toml"
    cfg.write_text(f"[env]\nid = 'no-such-env-xyz'\n[train]\noutput_dir = '{tmp_path}'\n")
    result = CliRunner().invoke(app, ["train", str(cfg)])
    assert result.exit_code == 2
    assert "no-such-env-xyz" in result.output and "Traceback" not in result.output


def test_env_factory_module_next_to_the_config_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))  # undo the insertion afterwards
    monkeypatch.delitem(sys.modules, "user_letter_env", raising=False)
    (tmp_path / "user_letter_env.py").write_text(
        "from tests.train.toy_env import load_environment\n"
    )
    cfg = tmp_path / "train.toml"
    cfg.write_text(
        "[env]\nfactory = 'user_letter_env:load_environment'\nargs = { num_examples = 4 }\n"
        "[rollouts]\nrollouts_per_example = 2\ngroups_per_batch = 1\nmax_tokens = 2\n"
        "filter_zero_variance = false\n"
        f"[train]\nsteps = 1\nseq_len = 64\noutput_dir = '{tmp_path / 'run'}'\n"
    )
    result = CliRunner().invoke(app, ["train", str(cfg)])
    assert result.exit_code == 0, result.output
    assert len(_metrics(tmp_path / "run")) == 1
    sys.modules.pop("user_letter_env", None)


def test_resume_applies_new_hyperparameters_and_refuses_another_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from verifiers.train.config import load_train_config
    from verifiers.train.trainer import Trainer

    out = tmp_path / "run"
    base = (
        "[model]\nhidden_size = {hidden}\n"
        "[env]\nfactory = 'tests.train.toy_env:load_environment'\n"
        "[rollouts]\nrollouts_per_example = 2\ngroups_per_batch = 1\nmax_tokens = 2\n"
        "filter_zero_variance = false\n"
        f"[train]\nsteps = {{steps}}\nlr = {{lr}}\nseq_len = 64\noutput_dir = '{out}'\n"
    )
    cfg = tmp_path / "train.toml"
    cfg.write_text(base.format(hidden=64, steps=1, lr=0.01))
    assert CliRunner().invoke(app, ["train", str(cfg)]).exit_code == 0

    # a new learning rate takes effect (not the checkpoint's) and is named
    cfg.write_text(base.format(hidden=64, steps=2, lr=0.001))
    with caplog.at_level("WARNING", logger="verifiers.train.trainer"):
        resumed = Trainer(load_train_config(cfg))
    assert resumed.step == 1
    assert [g["lr"] for g in resumed.optimizer.param_groups] == [0.001]
    assert "train.lr: 0.01 -> 0.001" in caplog.text and "train.steps" not in caplog.text

    # another model cannot continue this run: one clear line naming what changed
    cfg.write_text(base.format(hidden=32, steps=2, lr=0.001))
    result = CliRunner().invoke(app, ["train", str(cfg)])
    assert result.exit_code == 2, result.output
    assert "model.hidden_size: 64 -> 32" in result.output and "--no-resume" in result.output
    assert "Traceback" not in result.output
    again = CliRunner().invoke(app, ["train", str(cfg), "--no-resume", "--steps", "1"])
    assert again.exit_code == 0, again.output


def test_help_names_every_table_and_key() -> None:
    from verifiers.train.config import TrainConfig

    result = CliRunner().invoke(app, ["train", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "configs/train-tiny.toml" in text and "metrics.jsonl" in text
    for table, field in TrainConfig.model_fields.items():
        assert f"{table}:" in text
        assert field.annotation is not None
        for key in field.annotation.model_fields:
            assert key in text, f"{table}.{key}"


def test_metrics_stay_one_row_per_step_across_resume_and_start_over(tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "run"
    cfg = tmp_path / "train.toml"
    cfg.write_text(
        "[env]\nfactory = 'tests.train.toy_env:load_environment'\n"
        "[rollouts]\nrollouts_per_example = 2\ngroups_per_batch = 1\nmax_tokens = 2\n"
        "filter_zero_variance = false\n"
        f"[train]\nsteps = 3\ncheckpoint_every = 2\nseq_len = 64\noutput_dir = '{out}'\n"
    )
    runner = CliRunner()
    assert runner.invoke(app, ["train", str(cfg)]).exit_code == 0
    # a crash after step 3 was logged but before its checkpoint: resume trains it again
    shutil.rmtree(out / "checkpoints" / "step_3")
    result = runner.invoke(app, ["train", str(cfg)])
    assert result.exit_code == 0, result.output
    assert [r["step"] for r in _metrics(out)] == [0, 1, 2]

    # starting over moves the earlier run aside: a later resume cannot pick up its step_3
    result = runner.invoke(app, ["train", str(cfg), "--no-resume", "--steps", "1"])
    assert result.exit_code == 0, result.output
    assert [r["step"] for r in _metrics(out)] == [0]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_1"]
    (aside,) = out.glob("replaced-*")
    assert sorted(p.name for p in (aside / "checkpoints").iterdir()) == ["step_2", "step_3"]
    assert len((aside / "metrics.jsonl").read_text().splitlines()) == 3
    result = runner.invoke(app, ["train", str(cfg), "--steps", "2"])
    assert result.exit_code == 0, result.output
    assert [r["step"] for r in _metrics(out)] == [0, 1]
    # what vf view reads: each step's rewards and sample rollouts, kept in step with the
    # metrics across the resume, and the run's configuration and status
    kept = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert [r["step"] for r in kept] == [0, 1]
    assert all(len(r["rewards"]) == 2 and 1 <= len(r["rollouts"]) <= 2 for r in kept)
    assert {"prompt", "completion", "reward", "example_id"} <= set(kept[0]["rollouts"][0])
    assert len((aside / "rollouts.jsonl").read_text().splitlines()) == 3
    assert json.loads((aside / "run.json").read_text())["step"] == 3  # the earlier run's
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "completed" and info["step"] == 2 and info["steps"] == 2
    assert info["config"]["rollouts"]["rollouts_per_example"] == 2


@pytest.mark.parametrize("checkpoint_every", [0, 2])
async def test_an_interrupted_run_saves_a_checkpoint_and_resumes_there(
    tmp_path: Path, checkpoint_every: int
) -> None:
    """Ctrl-C (asyncio.run cancels the main task) lands at whatever the loop awaits next: the
    next batch, or with ``checkpoint_every = 2`` the periodic checkpoint of step 2. Either way
    the step under way finishes, a checkpoint of it is written, and a new run resumes there."""
    import asyncio

    from verifiers.train.config import TrainConfig
    from verifiers.train.trainer import Trainer

    data = {
        "env": {"factory": "tests.train.toy_env:load_environment"},
        "rollouts": {
            "rollouts_per_example": 2,
            "groups_per_batch": 1,
            "max_tokens": 2,
            "filter_zero_variance": False,
        },
        "train": {
            "steps": 50, "seq_len": 64, "output_dir": str(tmp_path / "run"),
            "checkpoint_every": checkpoint_every,
        },
    }  # fmt: skip
    task: asyncio.Future[Any] | None = None

    def on_step(m: dict[str, Any]) -> None:
        if m["step"] == 1 and task is not None:
            task.cancel()  # delivered at the loop's next await

    trainer = Trainer(TrainConfig.from_dict(data), on_step=on_step)
    task = asyncio.ensure_future(trainer.run())
    with pytest.raises(asyncio.CancelledError):
        await task
    assert trainer.step == 2
    checkpoints = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert checkpoints == ["step_2"]
    assert (tmp_path / "run" / "checkpoints" / "step_2" / "trainer_state.pt").is_file()
    assert Trainer(TrainConfig.from_dict(data)).step == 2
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (info["status"], info["step"]) == ("interrupted", 2)
    assert info["pid"] == os.getpid()  # whose process: vf view tells a killed run by it


async def test_tensorboard_gets_the_metrics_beside_metrics_jsonl(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from verifiers.train.config import TrainConfig
    from verifiers.train.trainer import Trainer

    cfg = TrainConfig.from_dict(
        {
            "env": {"factory": "verifiers.train.tiny:letter_environment"},
            "rollouts": {"rollouts_per_example": 4, "groups_per_batch": 2, "max_tokens": 4},
            "train": {
                "steps": 2, "lr": 1e-2, "seq_len": 64, "warmup_steps": 2, "tensorboard": True,
                "output_dir": str(tmp_path / "run"),
            },
        }
    )  # fmt: skip
    history = await Trainer(cfg).run()
    assert [h["lr"] for h in history] == [5e-3, 1e-2]  # warmup
    assert all(h["entropy"] > 0 for h in history)
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"reward", "loss", "lr", "entropy", "mismatch_kl", "grad_norm"} <= set(tags)
    assert [e.value for e in events.Scalars("lr")] == pytest.approx([5e-3, 1e-2])


def _toy_config(tmp_path: Path, steps: int) -> dict[str, Any]:
    return {
        "env": {"factory": "tests.train.toy_env:load_environment"},
        "rollouts": {
            "rollouts_per_example": 2,
            "groups_per_batch": 1,
            "max_tokens": 2,
            "filter_zero_variance": False,
        },
        "train": {"steps": steps, "seq_len": 64, "output_dir": str(tmp_path / "run")},
    }


async def test_a_batch_without_usable_groups_is_not_a_step(tmp_path: Path) -> None:
    import dataclasses

    from verifiers.train.config import TrainConfig
    from verifiers.train.trainer import Trainer

    trainer = Trainer(TrainConfig.from_dict(_toy_config(tmp_path, 3)))
    assert trainer.source is not None
    real = trainer.source.next_batch
    calls: list[int] = []
    versions: list[int] = []

    async def with_empty_second_batch(step: int) -> Any:
        calls.append(step)
        versions.append(trainer.source.policy_version)  # type: ignore[union-attr]
        batch = await real(step)
        return dataclasses.replace(batch, samples=[]) if len(calls) == 2 else batch

    trainer.source.next_batch = with_empty_second_batch  # type: ignore[method-assign]
    history = await trainer.run()
    # three optimizer steps, numbered without a gap; the empty batch was asked for again
    assert [h["step"] for h in history] == [0, 1, 2]
    assert calls == [0, 1, 1, 2]
    assert versions == [0, 1, 1, 2]  # the skipped batch did not advance the policy version
    assert [h["skipped_batches"] for h in history] == [0, 1, 0]
    assert trainer.step == 3 and trainer.skipped_batches == 1
    assert [json.loads(line)["step"] for line in _lines(tmp_path)] == [0, 1, 2]


def _lines(tmp_path: Path) -> list[str]:
    return (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()


async def test_many_empty_batches_in_a_row_stop_with_the_cause(tmp_path: Path) -> None:
    import dataclasses

    from verifiers.errors import ConfigError
    from verifiers.train.config import TrainConfig
    from verifiers.train.trainer import Trainer

    trainer = Trainer(TrainConfig.from_dict(_toy_config(tmp_path, 2)))
    trainer.MAX_EMPTY_BATCHES = 3
    assert trainer.source is not None
    real = trainer.source.next_batch

    async def always_empty(step: int) -> Any:
        return dataclasses.replace(await real(step), samples=[])

    trainer.source.next_batch = always_empty  # type: ignore[method-assign]
    with pytest.raises(ConfigError, match="3 batches in a row had no usable group"):
        await trainer.run()
    assert trainer.step == 0
    # vf view shows the run as failed, not as running for ever
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "failed"


async def test_a_batch_whose_groups_all_scored_alike_is_a_step_without_an_update(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A mastered task (every group filtered for zero reward variance) does not stop the run:
    the step is counted and reported, the weights stay as they were."""
    import dataclasses
    from collections import Counter

    from verifiers.train.config import TrainConfig
    from verifiers.train.trainer import Trainer

    trainer = Trainer(TrainConfig.from_dict(_toy_config(tmp_path, 3)))
    trainer.MAX_EMPTY_BATCHES = 1  # the old behaviour stopped here
    assert trainer.source is not None
    real = trainer.source.next_batch
    weights: list[torch.Tensor] = []

    async def mastered_second_batch(step: int) -> Any:
        batch = await real(step)
        weights.append(next(trainer.model.parameters()).detach().clone())
        if step == 1:
            return dataclasses.replace(
                batch, samples=[], unusable=Counter(zero_variance=64, stale=2)
            )
        return batch

    trainer.source.next_batch = mastered_second_batch  # type: ignore[method-assign]
    with caplog.at_level("WARNING", logger="verifiers.train.trainer"):
        history = await trainer.run()
    assert [h["step"] for h in history] == [0, 1, 2]
    assert history[1]["num_samples"] == 0 and history[1]["grad_norm"] == 0.0
    assert torch.equal(weights[1], weights[2])  # no update in step 2
    assert float(trainer.optimizer.state_dict()["state"][0]["step"]) == 2  # steps 1 and 3
    assert trainer.skipped_batches == 0
    said = [r.getMessage() for r in caplog.records if "nothing to learn" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("step 2: nothing to learn"), said
    assert "all 64 groups drawn had the same reward in every rollout" in said[0]
    assert "2 were sampled by weights too many steps old" in said[0]


def test_ctrl_c_in_vf_train_says_interrupted_once_with_the_checkpoint_and_resume_command(
    tmp_path: Path,
) -> None:
    """SIGINT to a running ``vf train``: exit 130 and one message (not the trainer's log line
    and the CLI's "interrupted" both) naming the checkpoint written and the command that
    resumes from it (without --no-resume, which would start over)."""
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "run"
    cfg = tmp_path / "train.toml"
    cfg.write_text(
        "[env]\nfactory = 'tests.train.toy_env:load_environment'\n"
        "[rollouts]\nrollouts_per_example = 2\ngroups_per_batch = 1\nmax_tokens = 2\n"
        "filter_zero_variance = false\n"
        f"[train]\nsteps = 1000\nseq_len = 64\noutput_dir = '{out}'\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "train", str(cfg), "--no-resume"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not ((out / "metrics.jsonl").is_file() and _metrics(out)):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)  # polling for the first step, not synchronising
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stdout + stderr
    assert stderr.count("interrupted") == 1, stderr
    [step] = [int(p.name.removeprefix("step_")) for p in (out / "checkpoints").iterdir()]
    line = next(line for line in stderr.splitlines() if "interrupted" in line)
    assert (
        f"interrupted after step {step}: saved the checkpoint {out}/checkpoints/step_{step}" in line
    )
    assert f"resume with: vf train {cfg})" in line and "--no-resume" not in line
