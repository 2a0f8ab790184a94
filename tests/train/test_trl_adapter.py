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
    calls: list[Any] = []
    import trl.models.utils as trl_utils

    original = trl_utils.unwrap_model_for_generation

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(trl_utils, "unwrap_model_for_generation", spy)
    trainer.train()
    adapter.close()
    assert calls  # sampling in process went through TRL's unwrap_model_for_generation
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 2
    changed = any(not (before[k] == v).all() for k, v in tiny_model.state_dict().items())
    assert changed  # the policy was updated from the environment's rewards
    assert not adapter.counts["dropped_mismatch"]


def test_groups_are_keyed_by_example_id_not_prompt_text() -> None:
    import verifiers as vf
    from verifiers.errors import ConfigError
    from verifiers.train.trl_adapter import TRLAdapter

    rows = [{"question": "same?", "answer": "A"}, {"question": "same?", "answer": "B"}]
    env = vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[]))
    adapter = TRLAdapter(env)
    prompts = adapter.train_dataset()["prompt"]
    assert prompts[0] != prompts[1]  # identical text, told apart by the example id
    assert adapter._groups([prompts[1]] * 2 + [prompts[0]] * 2, 2) == [(1, 2), (0, 2)]
    with pytest.raises(ConfigError, match="split across processes"):
        adapter._groups([prompts[1]] * 2 + [prompts[0]], 2)


def test_weight_sync_needs_an_http_client() -> None:
    from verifiers.errors import ConfigError
    from verifiers.train.trl_adapter import TRLAdapter

    with pytest.raises(ConfigError, match="weight_sync needs a client on an HTTP server"):
        TRLAdapter(load_environment(num_examples=2), weight_sync="reload")
