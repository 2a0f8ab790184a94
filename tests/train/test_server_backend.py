"""The reference loop against a real HTTP inference server: token ids over the wire, weight
sync after every step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from tests.train.hf_server import HFServer
from verifiers.train.config import TrainConfig
from verifiers.train.tiny import build_tiny_model
from verifiers.train.trainer import Trainer


async def test_server_backend_trains_and_syncs_weights(tmp_path: Path, char_tokenizer: Any) -> None:
    server_model = build_tiny_model(len(char_tokenizer), seed=0)  # same init as the trainer's
    with HFServer(server_model, char_tokenizer) as server:
        cfg = TrainConfig.from_dict(
            {
                "model": {"name": "tiny", "seed": 0},
                "env": {"factory": "tests.train.toy_env:load_environment"},
                "inference": {"backend": "server", "base_urls": [server.base_url]},
                "rollouts": {
                    "rollouts_per_example": 4,
                    "groups_per_batch": 2,
                    "max_in_flight": 2,
                    "max_off_policy_steps": 0,
                    "max_tokens": 4,
                    "temperature": 0.8,
                },
                "train": {
                    "steps": 3,
                    "lr": 1e-2,
                    "seq_len": 128,
                    "output_dir": str(tmp_path / "run"),
                    "activation_checkpointing": True,
                },
            }
        )
        trainer = Trainer(cfg)
        assert trainer.model.is_activation_checkpointing
        history = await trainer.run()
        assert server.updates == [1, 2, 3]
        for name, p in trainer.model.state_dict().items():
            assert torch.equal(p, server_model.state_dict()[name]), name
    # on-policy (max_off_policy_steps = 0): every batch was sampled by the weights
    # being trained, so the recomputed logprobs match the server's and nothing is masked
    assert all(h["off_policy_lag"] == 0 for h in history)
    assert all(h["masked_fraction"] == 0.0 for h in history)
    assert all(abs(h["mean_ratio"] - 1.0) < 1e-3 for h in history)
    assert all(h["num_samples"] > 0 for h in history)
    assert sorted(p.name for p in (tmp_path / "run" / "weights").iterdir()) == ["step_3"]

    # a resumed run first brings a freshly started server to the checkpoint's weights
    restarted = build_tiny_model(len(char_tokenizer), seed=0)
    with HFServer(restarted, char_tokenizer) as server:
        cfg.inference.base_urls = [server.base_url]
        cfg.train.steps = 4
        trainer = Trainer(cfg)
        assert trainer.step == 3
        more = await trainer.run()
        assert server.updates == [3, 4]
        assert [h["step"] for h in more] == [3]
        assert more[0]["masked_fraction"] == 0.0 and abs(more[0]["mean_ratio"] - 1.0) < 1e-3


async def test_a_refused_weight_push_is_a_clear_error_and_the_version_stays(
    tmp_path: Path, char_tokenizer: Any
) -> None:
    from verifiers.errors import InfraError

    with HFServer(build_tiny_model(len(char_tokenizer), seed=0), char_tokenizer) as server:
        server.refuse = True
        cfg = TrainConfig.from_dict(
            {
                "env": {"factory": "tests.train.toy_env:load_environment"},
                "inference": {"backend": "server", "base_urls": [server.base_url]},
                "rollouts": {
                    "rollouts_per_example": 2,
                    "groups_per_batch": 1,
                    "max_tokens": 2,
                    "filter_zero_variance": False,
                },
                "train": {"steps": 1, "seq_len": 64, "output_dir": str(tmp_path / "run")},
            }
        )
        trainer = Trainer(cfg)
        with pytest.raises(InfraError, match=r"refused the weight update .*HTTP 500.*DEV_MODE"):
            await trainer.run()
        # the server never confirmed: the rollouts are still attributed to version 0
        assert trainer.source is not None and trainer.source.policy_version == 0


def test_the_old_update_weights_path_setting_names_its_replacement() -> None:
    from verifiers.errors import ConfigError

    with pytest.raises(ConfigError, match=r"update_weights_path is gone.*weight_sync"):
        TrainConfig.from_dict(
            {
                "env": {"factory": "m:f"},
                "inference": {
                    "backend": "server",
                    "base_urls": ["http://x/v1"],
                    "update_weights_path": "/u",
                },
            }
        )


async def test_token_ids_of_another_model_are_a_clear_error(tmp_path: Path) -> None:
    """The project's OpenAI test server answers with byte-level toy token ids, most of them
    outside the tiny model's vocabulary: one clear ConfigError, not an embedding IndexError."""
    from verifiers.errors import ConfigError
    from verifiers.testing import OpenAITestServer

    async with OpenAITestServer() as server:
        cfg = TrainConfig.from_dict(
            {
                "env": {"factory": "tests.train.toy_env:load_environment"},
                "inference": {
                    "backend": "server",
                    "base_urls": [server.base_url],
                    "update_weights": False,
                },
                "rollouts": {
                    "rollouts_per_example": 2,
                    "groups_per_batch": 1,
                    "max_tokens": 4,
                    "filter_zero_variance": False,
                },
                "train": {"steps": 1, "seq_len": 512, "output_dir": str(tmp_path / "run")},
            }
        )
        with pytest.raises(ConfigError, match=r"token id \d+, outside the vocabulary"):
            await Trainer(cfg).run()


async def test_an_unreachable_endpoint_is_named_before_any_rollout(tmp_path: Path) -> None:
    import socket

    from verifiers.errors import InfraError

    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        cfg = TrainConfig.from_dict(
            {
                "env": {"factory": "tests.train.toy_env:load_environment"},
                "inference": {"backend": "server", "base_urls": [url]},
                "rollouts": {"rollouts_per_example": 2, "groups_per_batch": 1},
                "train": {"steps": 1, "output_dir": str(tmp_path / "run")},
            }
        )
        trainer = Trainer(cfg)
        with pytest.raises(InfraError, match=f"cannot reach the inference endpoint {url}"):
            await trainer.run()
        assert trainer.source.client_groups == [0]  # nothing was launched


async def test_interrupt_during_a_threaded_step_finishes_it_then_checkpoints(
    tmp_path: Path, char_tokenizer: Any
) -> None:
    """Cancelled while the train step runs in its worker thread: the step completes (weights
    and optimizer stay consistent), is counted, and the checkpoint is of that step."""
    import asyncio
    import threading

    server_model = build_tiny_model(len(char_tokenizer), seed=0)
    with HFServer(server_model, char_tokenizer) as server:
        cfg = TrainConfig.from_dict(
            {
                "env": {"factory": "tests.train.toy_env:load_environment"},
                "inference": {"backend": "server", "base_urls": [server.base_url]},
                "rollouts": {
                    "rollouts_per_example": 2,
                    "groups_per_batch": 1,
                    "max_tokens": 2,
                    "filter_zero_variance": False,
                },
                "train": {"steps": 50, "seq_len": 64, "output_dir": str(tmp_path / "run")},
            }
        )
        trainer = Trainer(cfg)
        in_step, release = asyncio.Event(), threading.Event()
        loop = asyncio.get_running_loop()
        train_step = trainer.train_step

        def blocking_step(batch: Any) -> dict[str, Any]:
            loop.call_soon_threadsafe(in_step.set)
            release.wait(timeout=30)
            return train_step(batch)

        trainer.train_step = blocking_step  # type: ignore[method-assign]
        task = asyncio.ensure_future(trainer.run())
        waiter = asyncio.ensure_future(in_step.wait())
        # a run that fails before its first step ends the wait too (and the test) instead of
        # leaving it waiting for a step that never comes
        await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiter.cancel()
            task.result()
            pytest.fail("the run ended before its first step")
        task.cancel()  # queued before the thread can finish: run() sees it mid-step
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert trainer.step == 1 and server.updates == [1]
        assert (tmp_path / "run" / "checkpoints" / "step_1" / "trainer_state.pt").is_file()
