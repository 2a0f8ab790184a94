from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.train.toy_env import load_environment

pytest.importorskip("trl")


def test_grpo_trainer_runs_two_steps_on_an_environment(
    tmp_path: Path, tiny_model: Any, char_tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from verifiers.train.trl_adapter import TRLAdapter

    adapter = TRLAdapter(load_environment(num_examples=4))
    before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=4,
        max_steps=2,
        learning_rate=1e-2,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        dataloader_num_workers=0,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=char_tokenizer,
        args=args,
        train_dataset=adapter.train_dataset(),
        reward_funcs=adapter.reward_func,
        rollout_func=adapter.rollout_func,
    )
    trainer.train()
    adapter.close()
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 2
    changed = any(not (before[k] == v).all() for k, v in tiny_model.state_dict().items())
    assert changed  # the policy was updated from the environment's rewards
    assert not adapter.counts["dropped_mismatch"]
