#!/usr/bin/env bash
# A short training run on a GPU, printing reward and throughput: against a real vLLM, or with
# the trainer's in-process sampling (inference.backend = "local") where vLLM is not installed.
#
#   bash scripts/gpu_check.sh                 # the tiny Qwen2 model built locally, 20 steps
#   MODEL=Qwen/Qwen3-0.6B STEPS=30 bash scripts/gpu_check.sh   # a model in the local HF cache
#   WEIGHT_SYNC=nccl bash scripts/gpu_check.sh                 # vLLM's NCCL weight transfer
#   BACKEND=local bash scripts/gpu_check.sh                    # no vLLM: the model samples itself
#
# Needs a GPU and the project's .venv (bash scripts/bootstrap.sh; PY=python3 for another
# interpreter). BACKEND: vllm (vLLM with CUDA in VLLM_PYTHON's environment, default: $PY),
# local (LocalModelClient in the trainer's process: no server, no weight sync), or auto (the
# default: vllm when VLLM_PYTHON imports vllm, else local, saying so). vLLM takes GPU_MEM
# (default 0.3) of the GPU; the trainer the rest. Nothing is downloaded unless MODEL is not
# cached. GPU_CHECK_ALLOW_CPU=1 lets the local backend run on the CPU (a dry run of the script).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
VLLM_PYTHON=${VLLM_PYTHON:-$PY}
STEPS=${STEPS:-20}
GPU_MEM=${GPU_MEM:-0.3}
WEIGHT_SYNC=${WEIGHT_SYNC:-reload}
OUT=${OUT:-runs/gpu-check}
BACKEND=${BACKEND:-auto}
vllm_checked=0
case "$BACKEND" in
  vllm | server) BACKEND=vllm ;;
  local) ;;
  auto)
    if "$VLLM_PYTHON" -c "import vllm" >/dev/null 2>&1; then
      BACKEND=vllm vllm_checked=1
    else
      echo "gpu_check: vLLM is not importable by $VLLM_PYTHON: training with the in-process local backend instead (BACKEND=local)"
      BACKEND=local
    fi ;;
  *) echo "gpu_check: BACKEND must be vllm, local or auto, not '$BACKEND'" >&2; exit 2 ;;
esac
if [ "$BACKEND" = local ] && [ "${GPU_CHECK_ALLOW_CPU:-0}" = 1 ]; then
  "$PY" -c "import torch; torch.cuda.is_available() or print('gpu_check: no CUDA GPU: running on the CPU (GPU_CHECK_ALLOW_CPU=1)')"
else
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_check: no CUDA GPU visible to torch')"
fi
if [ "$BACKEND" = vllm ] && [ "$vllm_checked" = 0 ]; then
  "$VLLM_PYTHON" -c "import vllm" || { echo "gpu_check: vLLM is not importable by $VLLM_PYTHON" >&2; exit 1; }
fi
export VF_GPU_CHECK_STEPS=$STEPS VF_GPU_CHECK_MEM=$GPU_MEM VF_GPU_CHECK_SYNC=$WEIGHT_SYNC \
  VF_GPU_CHECK_OUT=$OUT VF_GPU_CHECK_VLLM=$VLLM_PYTHON VF_GPU_CHECK_MODEL=${MODEL:-} \
  VF_GPU_CHECK_BACKEND=$BACKEND
exec "$PY" - <<'PYEOF'
import asyncio, contextlib, json, os, time
from pathlib import Path

from verifiers.train.config import TrainConfig
from verifiers.train.tiny_qwen import write_tiny_qwen
from verifiers.train.trainer import Trainer

out = Path(os.environ["VF_GPU_CHECK_OUT"])
model = os.environ["VF_GPU_CHECK_MODEL"] or str(write_tiny_qwen(out / "tiny-qwen2"))
backend = os.environ["VF_GPU_CHECK_BACKEND"]
sync = os.environ["VF_GPU_CHECK_SYNC"] if backend == "vllm" else "none"
out.mkdir(parents=True, exist_ok=True)


def num(m, key, fmt):
    """A metric formatted, or n/a where this backend does not report it."""
    value = m.get(key)
    return "n/a" if value is None else format(value, fmt)


def on_step(m):
    print(f"step {m['step'] + 1} reward {m['reward']:.3f} loss {num(m, 'loss', '+.4f')} "
          f"kl {num(m, 'mismatch_kl', '.1e')} tok/s {num(m, 'tokens_per_second', '.0f')} "
          f"sync {num(m, 'sync_seconds', '.2f')}s", flush=True)


if backend == "vllm":
    from verifiers.train.vllm_launch import VLLMServer

    extra = ["--gpu-memory-utilization", os.environ["VF_GPU_CHECK_MEM"]]
    if sync == "nccl":
        extra += ["--weight-transfer-config", '{"backend": "nccl"}']
    server = VLLMServer(os.environ["VF_GPU_CHECK_VLLM"], model, dtype="bfloat16",
                        max_model_len=2048, extra_args=extra, log_path=out / "vllm.log")
    inference = {"backend": "server", "base_urls": [server.base_url], "model": "policy",
                 "weight_sync": sync}
else:
    server = contextlib.nullcontext()
    inference = {"backend": "local"}
with server:
    if backend == "vllm":
        print(f"vLLM ready in {server.start_seconds:.1f}s ({model})", flush=True)
    else:
        import torch

        device = torch.cuda.get_device_name() if torch.cuda.is_available() else "the CPU"
        print(f"local backend: in-process sampling on {device} ({model})", flush=True)
    cfg = TrainConfig.from_dict({
        "model": {"name": model},
        "env": {"factory": "verifiers.train.tiny:letter_environment", "args": {"num_examples": 64}},
        "inference": inference,
        "rollouts": {"rollouts_per_example": 8, "groups_per_batch": 8, "max_tokens": 64,
                     "max_off_policy_steps": 1},
        "train": {"steps": int(os.environ["VF_GPU_CHECK_STEPS"]), "lr": 1e-4 if os.environ["VF_GPU_CHECK_MODEL"] else 3e-3,
                  "warmup_steps": 2, "seq_len": 2048, "output_dir": str(out / "run"), "resume": False},
    })
    started = time.perf_counter()
    history = asyncio.run(Trainer(cfg, on_step=on_step).run())
    wall = time.perf_counter() - started
if not history:
    raise SystemExit("gpu_check: the run trained no step")
tokens = sum(h.get("num_tokens", 0) for h in history)
syncs = [h["sync_seconds"] for h in history if h.get("sync_seconds") is not None]
kls = [h["mismatch_kl"] for h in history if h.get("mismatch_kl") is not None]
summary = {
    "reward_first": history[0]["reward"], "reward_last": history[-1]["reward"],
    "tokens_per_second": tokens / wall, "steps": len(history),
    "sync_seconds_mean": sum(syncs) / len(syncs) if syncs else None,
    "mismatch_kl_max": max(kls) if kls else None, "weight_sync": sync,
}
if backend != "vllm":
    summary["backend"] = backend
print(json.dumps(summary))
PYEOF
