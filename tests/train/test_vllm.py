"""The trainer against a real vLLM (its CPU build, one server for the session): weight push,
logprob agreement and mismatch detection, a tool-call rollout into samples, training."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

torch = pytest.importorskip("torch")

import verifiers as vf
from verifiers.train.trainer import pinned_sampling_args
from verifiers.train.weight_sync import ReloadSync

pytestmark = pytest.mark.vllm

PROMPT = [{"role": "user", "content": "What is 1 + 2? Say A."}]


def _chat(server: Any, **kw: Any) -> dict[str, Any]:
    body = {"model": server.served_name, "messages": PROMPT, **kw}
    r = httpx.post(server.base_url + "/chat/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def _greedy(server: Any) -> list[int]:
    out = _chat(server, temperature=0.0, max_tokens=16, return_token_ids=True, ignore_eos=True)
    ids: list[int] = out["choices"][0]["token_ids"]
    return ids


def _perturbed_copy(src: Path, dst: Path, seed: int = 1) -> Path:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(src)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.5)
    model.save_pretrained(dst)
    AutoTokenizer.from_pretrained(src).save_pretrained(dst)
    return dst


def test_pushed_weights_serve_like_a_fresh_server_on_them(
    vllm_on_base: Any, vllm_python: str, tiny_qwen_dir: Path, tmp_path: Path
) -> None:
    from tests.train.conftest import VLLM_ENV
    from verifiers.train.vllm_launch import VLLMServer

    before = _greedy(vllm_on_base)
    new = _perturbed_copy(tiny_qwen_dir, tmp_path / "step_1")
    push_seconds = ReloadSync([vllm_on_base.base_url]).push(1, new, None)
    after = _greedy(vllm_on_base)
    assert after != before
    with VLLMServer(
        vllm_python, new, dtype="float32", max_model_len=1024, enforce_eager=True, env=VLLM_ENV,
        log_path=tmp_path / "fresh.log",
    ) as fresh:  # fmt: skip
        assert _greedy(fresh) == after
        start_seconds = fresh.start_seconds
    print(f"vLLM push {push_seconds:.2f}s, fresh start {start_seconds:.1f}s")


def _trainer_logprobs(
    model_dir: Path, prompt_ids: list[int], completion: list[int], t: float
) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    from verifiers.train.loss import chunked_token_logprobs

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ids = torch.tensor([prompt_ids + completion])
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits
    lp, _ = chunked_token_logprobs(logits, ids, t, chunk_size=7)
    return lp[0, len(prompt_ids) :]


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_server_logprobs_match_the_trainers_recompute(
    vllm_on_base: Any, tiny_qwen_dir: Path, temperature: float
) -> None:
    args = pinned_sampling_args(temperature, 24)
    body = {k: v for k, v in args.items() if k != "extra_body"} | args["extra_body"]
    worst = 0.0
    for seed in range(3):
        out = _chat(vllm_on_base, seed=seed, **body)
        choice = out["choices"][0]
        completion = choice["token_ids"]
        server = torch.tensor([c["logprob"] for c in choice["logprobs"]["content"]])
        mine = _trainer_logprobs(tiny_qwen_dir, out["prompt_token_ids"], completion, temperature)
        assert len(completion) == len(server) > 0
        worst = max(worst, float((mine - server).abs().max()))
    print(f"logprob max |trainer - vLLM| at T={temperature}: {worst:.2e}")
    assert worst < 1e-3


def _train_config(url: str, out: Path, model: Path, **rollouts: Any) -> Any:
    from verifiers.train.config import TrainConfig

    return TrainConfig.from_dict(
        {
            "model": {"name": str(model)},
            "env": {"factory": "verifiers.train.tiny:letter_environment"},
            "inference": {"backend": "server", "base_urls": [url], "model": "policy"},
            "rollouts": {
                "rollouts_per_example": 4,
                "groups_per_batch": 2,
                "max_in_flight": 2,
                "max_off_policy_steps": 0,
                "max_tokens": 8,
                "temperature": 0.8,
                "filter_zero_variance": False,
                **rollouts,
            },
            "train": {"steps": 2, "lr": 5e-2, "seq_len": 256, "output_dir": str(out)},
        }
    )


async def test_training_against_vllm_pushes_each_step_and_stays_on_policy(
    vllm_on_base: Any, tiny_qwen_dir: Path, tmp_path: Path
) -> None:
    from verifiers.train.trainer import Trainer

    cfg = _train_config(vllm_on_base.base_url, tmp_path / "run", tiny_qwen_dir)
    trainer = Trainer(cfg)
    history = await trainer.run()
    assert [h["step"] for h in history] == [0, 1]
    assert trainer.source is not None and trainer.source.policy_version == 2
    # step 1 was sampled by the weights pushed after step 0: if the reload had not taken,
    # the server's logprobs would be the old weights' and mismatch_kl far from 0
    for h in history:
        print(
            f"step {h['step']}: mismatch_kl {h['mismatch_kl']:.2e}, push {h['sync_seconds']:.2f}s"
        )
        assert h["mismatch_kl"] < 1e-4 and h["masked_fraction"] == 0.0
        assert h["num_loss_tokens"] > 0 and h["sync_seconds"] > 0
    assert "logprob_mismatch_steps" not in history[-1]["counts"]


async def test_sampling_from_another_distribution_is_reported(
    vllm_on_base: Any, tiny_qwen_dir: Path, tmp_path: Path, caplog: Any
) -> None:
    from verifiers.train.trainer import Trainer

    caplog.set_level(logging.WARNING)
    cfg = _train_config(
        vllm_on_base.base_url, tmp_path / "run", tiny_qwen_dir, sampling_args={"top_k": 3}
    )
    cfg.train.steps = 1
    cfg.inference.weight_sync = "none"
    history = await Trainer(cfg).run()
    (h,) = history
    print(f"top_k=3: mismatch_kl {h['mismatch_kl']:.2e}")
    assert h["mismatch_kl"] > 1e-2
    assert h["counts"]["logprob_mismatch_steps"] == 1
    assert "the server's logprobs disagree with the trainer's" in caplog.text
    assert "change the pinned sampling arguments" in caplog.text


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


TOOL_CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'


async def test_a_tool_call_rollout_becomes_samples(vllm_on_base: Any, tiny_qwen_dir: Path) -> None:
    from transformers import AutoTokenizer

    from verifiers.clients.base import as_client
    from verifiers.train.samples import build_samples

    tok = AutoTokenizer.from_pretrained(tiny_qwen_dir)
    env = vf.ToolEnv(tools=[add], dataset=[{"question": "1 + 2?", "answer": "3"}], max_turns=2)
    args = pinned_sampling_args(1.0, 160)
    # the random model calls the tool because its output is constrained to a hermes call
    args["extra_body"]["structured_outputs"] = {"regex": re.escape(TOOL_CALL)}
    row = env.get_rows("train")[0]
    states = await env.run_group(row, as_client(vllm_on_base.base_url), "policy", 2, args)
    for state in states:
        assert state["error"] is None, state["error"]
        steps = state["trajectory"]
        assert len(steps) == 2
        first = steps[0]["completion"][0]
        assert first["tool_calls"][0]["function"]["name"] == "add"
        assert json.loads(first["tool_calls"][0]["function"]["arguments"]) == {"a": 1, "b": 2}
        assert any(m["role"] == "tool" and m["content"] == "3" for m in state["completion"])
        built = build_samples(state, tokenizer=tok)
        server_tokens = [t for s in steps for t in s["tokens"]["completion_ids"]]
        trained = [t for s in built.samples for t, m in zip(s.token_ids, s.mask, strict=True) if m]
        # exactly the model's tokens are trained, with the server's logprobs
        assert trained == server_tokens
        for sample in built.samples:
            assert sample.logprobs is not None
            assert all(lp <= 0 for lp in sample.logprobs)
            assert any(lp < 0 for lp, m in zip(sample.logprobs, sample.mask, strict=True) if m)
        text = tok.decode(built.samples[-1].token_ids)
        assert "<tool_response>\n3\n</tool_response>" in text
        assert built.counts["split"] == len(built.samples) - 1


def test_trl_grpo_samples_from_vllm_and_pushes_each_step(
    vllm_on_base: Any, tiny_qwen_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from verifiers.clients.base import as_client
    from verifiers.train.trl_adapter import TRLAdapter

    def length(completion: Any, **_: Any) -> float:  # varies between rollouts: a signal
        return len(completion[-1]["content"] or "") / 20

    rows = [{"question": f"Say A ({i})", "answer": "A"} for i in range(4)]
    env = vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[length]))
    adapter = TRLAdapter(
        env,
        client=as_client(vllm_on_base.base_url),
        sampling_args=pinned_sampling_args(1.0, 6),
        weight_sync="reload",
        weights_dir=tmp_path / "weights",
    )
    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"), per_device_train_batch_size=4, num_generations=4,
        max_completion_length=6, max_steps=2, learning_rate=5e-2, report_to=[], use_cpu=True,
        bf16=False, save_strategy="no", dataloader_num_workers=0, seed=0, logging_steps=1,
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_qwen_dir),
        processing_class=AutoTokenizer.from_pretrained(tiny_qwen_dir),
        args=args,
        train_dataset=adapter.train_dataset(),
        reward_funcs=adapter.reward_func,
        rollout_func=adapter.rollout_func,
    )
    trainer.train()
    adapter.close()
    assert trainer.state.global_step == 2
    assert adapter.synced_steps == [0, 1]  # the step-1 rollouts waited for the step-1 weights
    # the server now serves what was pushed: its logprobs are those of weights/step_1
    body = {k: v for k, v in pinned_sampling_args(1.0, 12).items() if k != "extra_body"}
    out = _chat(vllm_on_base, seed=3, **body, **pinned_sampling_args(1.0, 12)["extra_body"])
    choice = out["choices"][0]
    server = torch.tensor([c["logprob"] for c in choice["logprobs"]["content"]])
    pushed = _trainer_logprobs(
        tmp_path / "weights" / "step_1", out["prompt_token_ids"], choice["token_ids"], 1.0
    )
    assert float((pushed - server).abs().max()) < 1e-3
    base = _trainer_logprobs(tiny_qwen_dir, out["prompt_token_ids"], choice["token_ids"], 1.0)
    assert float((base - server).abs().max()) > 1e-2
