"""FSDP2 under torchrun on the CPU (gloo, 2 processes): the same step as one process, Hugging
Face checkpoints from sharded state, resume, and ``vf train --nproc``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from tests.train.hf_server import HFServer
from verifiers.train.tiny import build_tiny_model

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("fsdp_worker.py")


def _env() -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    return env


def _run(cmd: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done


def test_fsdp2_two_processes_match_one(tmp_path: Path) -> None:
    single, sharded = tmp_path / "one.pt", tmp_path / "two.pt"
    _run([sys.executable, str(WORKER), str(single)])
    _run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(WORKER), str(sharded)]
    )  # fmt: skip
    a, b = torch.load(single), torch.load(sharded)
    assert a["rows"] >= 3  # the rows really were spread over both ranks (one padded)
    grad_diff = max(float((a["grads"][k] - b["grads"][k]).abs().max()) for k in a["grads"])
    weight_diff = max(float((a["weights"][k] - b["weights"][k]).abs().max()) for k in a["weights"])
    loss_diff = max(abs(x - y) for x, y in zip(a["losses"], b["losses"], strict=True))
    print(
        f"FSDP2 vs one process: grads {grad_diff:.2e}, loss {loss_diff:.2e}, weights {weight_diff:.2e}"
    )
    assert any(float(g.abs().max()) > 0 for g in a["grads"].values())
    assert grad_diff < 1e-6
    assert loss_diff < 1e-6
    assert weight_diff < 1e-5
    assert a["grad_norms"] == pytest.approx(b["grad_norms"], rel=1e-5)
    assert set(a["weights"]) == set(b["weights"])


def _config(path: Path, url: str, out: Path) -> Path:
    path.write_text(
        f"""
[model]
name = "tiny"
[env]
factory = "tests.train.toy_env:load_environment"
[inference]
backend = "server"
base_urls = ["{url}"]
[rollouts]
rollouts_per_example = 4
groups_per_batch = 2
max_in_flight = 2
max_off_policy_steps = 0
max_tokens = 4
[train]
steps = 2
lr = 1e-2
seq_len = 64
checkpoint_every = 1
output_dir = "{out}"
"""
    )
    return path


def test_vf_train_nproc_2_checkpoints_in_hf_format_and_resumes(
    tmp_path: Path, char_tokenizer: Any
) -> None:
    from transformers import AutoModelForCausalLM

    server_model = build_tiny_model(len(char_tokenizer), seed=0)
    out = tmp_path / "run"
    vf = [sys.executable, "-m", "cli.main", "train"]
    with HFServer(server_model, char_tokenizer) as server:
        cfg = _config(tmp_path / "cfg.toml", server.base_url, out)
        first = _run([*vf, str(cfg), "--nproc", "2"])
        assert "step 2/2" in first.stdout
        assert server.updates == [1, 2]  # rank 0 pushed after each step
        ckpt = out / "checkpoints" / "step_2"
        loaded = AutoModelForCausalLM.from_pretrained(ckpt)
        # the checkpoint holds the whole model, gathered from the shards: the server got the
        # same weights by reload
        for name, p in loaded.state_dict().items():
            assert torch.equal(p, server_model.state_dict()[name]), name
        state = torch.load(ckpt / "trainer_state.pt", weights_only=False)
        assert state["step"] == 2 and state["optimizer"]["state"]
        second = _run([*vf, str(cfg), "--nproc", "2", "--steps", "3"])
        assert "resuming at step 2" in second.stderr
        assert "step 3/3" in second.stdout
        assert server.updates == [1, 2, 2, 3]  # the restarted run first re-pushed step 2
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert all(r["off_policy_lag_max"] == 0 for r in rows)
    # on-policy, the server on the pushed weights: the logprobs the server sent match
    assert all(r["mismatch_kl"] < 1e-6 for r in rows)
