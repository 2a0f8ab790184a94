"""One Learner run on fixed samples, as one process or under torchrun (FSDP2 + gloo).

Usage: ``python tests/train/fsdp_worker.py OUT.pt`` or ``python -m torch.distributed.run
--nproc-per-node 2 tests/train/fsdp_worker.py OUT.pt``. Rank 0 writes to OUT.pt the gradients
of the first batch (before any update), the losses and gradient norms of three steps and the
final weights, all gathered to full tensors.
"""

from __future__ import annotations

import random
import sys

import torch

from verifiers.train.distributed import full_model_state, init_distributed, shard_model
from verifiers.train.learner import Learner
from verifiers.train.samples import Sample
from verifiers.train.tiny import build_char_tokenizer, build_tiny_model


def fixed_samples(vocab: int, n: int = 7, seed: int = 1) -> list[Sample]:
    rng = random.Random(seed)
    samples = []
    for i in range(n):
        length = rng.randint(12, 40)
        prompt = rng.randint(3, 8)
        ids = [rng.randrange(3, vocab) for _ in range(length)]
        mask = [False] * prompt + [True] * (length - prompt)
        lps = [0.0] * prompt + [-rng.uniform(3.0, 6.0) for _ in range(length - prompt)]
        samples.append(
            Sample(ids, mask, lps, reward=float(i % 2), advantage=(i % 3) - 1.0, group_id=i)
        )
    return samples


def full_grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    out = {}
    for name, p in model.named_parameters():
        g = p.grad
        full = getattr(g, "full_tensor", None)
        out[name] = (full() if full is not None else g).detach().cpu().clone()
    return out


def main(out_path: str) -> None:
    torch.set_num_threads(1)
    info = init_distributed("cpu")
    tok = build_char_tokenizer()
    model = build_tiny_model(len(tok), seed=0)
    if info.enabled:
        shard_model(model, torch.float32)
    learner = Learner(
        model, device=torch.device("cpu"), compute_dtype=torch.float32, lr=1e-3, dist=info
    )
    samples = fixed_samples(len(tok))
    # gradients of the first batch, before any update (the rows spread over the ranks)
    from verifiers.train.packing import pack_samples

    rows = pack_samples(samples, 64).micro_batches
    total = sum(r.num_loss_tokens for r in rows)
    sums: dict[str, float] = dict.fromkeys(
        ("loss", "masked", "dropped", "ratio", "entropy", "mismatch_kl", "mismatch_abs"), 0.0
    )
    for row in learner.my_rows(rows):
        learner._accumulate(row, 64, 0, 1.0, total, sums)
    grads = full_grads(model)
    learner.optimizer.zero_grad(set_to_none=True)
    steps = [learner.step(samples, step=i, seq_len=64, temperature=1.0) for i in range(3)]
    weights = full_model_state(model, info)
    if info.is_main:
        torch.save(
            {
                "grads": grads,
                "losses": [s["loss"] for s in steps],
                "grad_norms": [s["grad_norm"] for s in steps],
                "rows": len(rows),
                "weights": weights,
            },
            out_path,
        )
    if info.enabled:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
