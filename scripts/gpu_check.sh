#!/usr/bin/env bash
# A short training run on a GPU against a real vLLM, printing reward and throughput.
#
#   bash scripts/gpu_check.sh                 # the tiny Qwen2 model built locally, 20 steps
#   MODEL=Qwen/Qwen3-0.6B STEPS=30 bash scripts/gpu_check.sh   # a model in the local HF cache
#   WEIGHT_SYNC=nccl bash scripts/gpu_check.sh                 # vLLM's NCCL weight transfer
#
# Needs a GPU, the project's .venv (bash scripts/bootstrap.sh) and vLLM with CUDA in
# VLLM_PYTHON's environment (default: .venv/bin/python). vLLM takes GPU_MEM (default 0.3) of
# the GPU; the trainer the rest. Nothing is downloaded unless MODEL is not cached.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
VLLM_PYTHON=${VLLM_PYTHON:-$PY}
STEPS=${STEPS:-20}
GPU_MEM=${GPU_MEM:-0.3}
WEIGHT_SYNC=${WEIGHT_SYNC:-reload}
OUT=${OUT:-runs/gpu-check}
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_check: no CUDA GPU visible to torch')"
"$VLLM_PYTHON" -c "import vllm" || { echo "gpu_check: vLLM is not importable by $VLLM_PYTHON" >&2; exit 1; }
export VF_GPU_CHECK_STEPS=$STEPS VF_GPU_CHECK_MEM=$GPU_MEM VF_GPU_CHECK_SYNC=$WEIGHT_SYNC \
  VF_GPU_CHECK_OUT=$OUT VF_GPU_CHECK_VLLM=$VLLM_PYTHON VF_GPU_CHECK_MODEL=${MODEL:-}
exec "$PY" - <<'PYEOF'
import asyncio, json, os, time
from pathlib import Path

from verifiers.train.config import TrainConfig
from verifiers.train.tiny_qwen import write_tiny_qwen
from verifiers.train.trainer import Trainer
from verifiers.train.vllm_launch import VLLMServer

out = Path(os.environ["VF_GPU_CHECK_OUT"])
model = os.environ["VF_GPU_CHECK_MODEL"] or str(write_tiny_qwen(out / "tiny-qwen2"))
sync = os.environ["VF_GPU_CHECK_SYNC"]
extra = ["--gpu-memory-utilization", os.environ["VF_GPU_CHECK_MEM"]]
if sync == "nccl":
    extra += ["--weight-transfer-config", '{"backend": "nccl"}']
server = VLLMServer(os.environ["VF_GPU_CHECK_VLLM"], model, dtype="bfloat16",
                    max_model_len=2048, extra_args=extra, log_path=out / "vllm.log")
out.mkdir(parents=True, exist_ok=True)
with server:
    print(f"vLLM ready in {server.start_seconds:.1f}s ({model})", flush=True)
    cfg = TrainConfig.from_dict({
        "model": {"name": model},
        "env": {"factory": "verifiers.train.tiny:letter_environment", "args": {"num_examples": 64}},
        "inference": {"backend": "server", "base_urls": [server.base_url], "model": "policy",
                      "weight_sync": sync},
        "rollouts": {"rollouts_per_example": 8, "groups_per_batch": 8, "max_tokens": 64,
                     "max_off_policy_steps": 1},
        "train": {"steps": int(os.environ["VF_GPU_CHECK_STEPS"]), "lr": 1e-4 if os.environ["VF_GPU_CHECK_MODEL"] else 3e-3,
                  "warmup_steps": 2, "seq_len": 2048, "output_dir": str(out / "run"), "resume": False},
    })
    started = time.perf_counter()
    history = asyncio.run(Trainer(cfg, on_step=lambda m: print(
        f"step {m['step'] + 1} reward {m['reward']:.3f} loss {m['loss']:+.4f} "
        f"kl {m['mismatch_kl']:.1e} tok/s {m['tokens_per_second']:.0f} sync {m['sync_seconds']:.2f}s",
        flush=True)).run())
    wall = time.perf_counter() - started
tokens = sum(h["num_tokens"] for h in history)
summary = {
    "reward_first": history[0]["reward"], "reward_last": history[-1]["reward"],
    "tokens_per_second": tokens / wall, "steps": len(history),
    "sync_seconds_mean": sum(h["sync_seconds"] for h in history) / len(history),
    "mismatch_kl_max": max(h["mismatch_kl"] for h in history), "weight_sync": sync,
}
print(json.dumps(summary))
PYEOF
