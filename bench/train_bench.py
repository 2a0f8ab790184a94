"""What the trainer adapter costs per step: sample building, advantages and packing.

    .venv/bin/python bench/train_bench.py [--steps 20] [--groups 64] [--rollouts 16]

Two measurements:

1. The reference loop (``vf train``) on CPU with the tiny random model and the toy environment
   (in-process sampling): median step time, the adapter's time per step (building samples and
   advantages inside the rollout source, packing in the trainer) and its share of the step.
   On CPU the model is tiny, so this share is an upper bound of what a real run sees.
2. The adapter alone at production scale on synthetic rollouts: ``--groups`` groups of
   ``--rollouts`` four-turn rollouts with server token ids (about 2,300 tokens each), turned into
   samples with group-mean advantages and packed first-fit-decreasing into 16k-token rows,
   including conversion to torch tensors. Reported as milliseconds per step and tokens per
   second, to set against a GPU step's time for the same number of tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def loop_bench(steps: int) -> None:
    import torch
    from transformers.utils import logging as hf_logging

    from verifiers.train.config import TrainConfig
    from verifiers.train.trainer import Trainer

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    with tempfile.TemporaryDirectory() as out:
        cfg = TrainConfig.from_dict(
            {
                "model": {"name": "tiny", "seed": 0},
                "env": {"factory": "verifiers.train.tiny:letter_environment"},
                "rollouts": {
                    "rollouts_per_example": 8,
                    "groups_per_batch": 8,
                    "max_tokens": 16,
                    "temperature": 1.0,
                    "filter_zero_variance": False,
                },
                "train": {"steps": steps, "lr": 1e-3, "seq_len": 512, "output_dir": out},
            }
        )
        history = asyncio.run(Trainer(cfg).run())
    rows = history[2:]  # skip warm-up steps
    step = statistics.median(h["step_seconds"] for h in rows)
    adapter = statistics.median(h["adapter_seconds"] for h in rows)
    share = statistics.median(h["adapter_share"] for h in rows)
    tps = statistics.median(h["tokens_per_second"] for h in rows)
    print("reference loop, CPU, tiny model, 64 rollouts/step (median over steps 3..):")
    print(f"  step time          {step * 1000:8.1f} ms")
    print(f"  adapter per step   {adapter * 1000:8.2f} ms   (samples + advantages + packing)")
    print(f"  adapter share      {share:8.2%}")
    print(f"  trained tokens/s   {tps:8.0f}")


def synthetic_states(groups: int, rollouts: int, seed: int = 0) -> list[list[dict[str, object]]]:
    from verifiers.types import ModelResponse, State

    rng = random.Random(seed)
    out = []
    for g in range(groups):
        group = []
        for _ in range(rollouts):
            prompt = [rng.randrange(50_000) for _ in range(512)]
            ids = list(prompt)
            trajectory = []
            for _turn in range(4):
                completion = [rng.randrange(50_000) for _ in range(rng.randint(200, 300))]
                trajectory.append(
                    {
                        "prompt_len": 1,
                        "completion": [],
                        "response": ModelResponse(message={"role": "assistant", "content": ""}),
                        "tokens": {
                            "prompt_ids": list(ids),
                            "completion_ids": completion,
                            "completion_logprobs": [-rng.random() for _ in completion],
                        },
                        "is_truncated": False,
                        "extras": {},
                    }
                )
                ids += completion + [rng.randrange(50_000) for _ in range(30)]  # tool output
            group.append(
                State(
                    trajectory=trajectory,
                    reward=float(rng.random() < 0.5),
                    metrics={"correct": 1.0},
                    error=None,
                    example_id=g,
                    task="bench",
                )
            )
        out.append(group)
    return out


def adapter_bench(groups: int, rollouts: int, rounds: int = 3) -> None:
    from verifiers.train.packing import pack_samples
    from verifiers.train.rollout_source import group_mean_advantages
    from verifiers.train.samples import build_samples

    data = synthetic_states(groups, rollouts)
    times: list[tuple[float, float, float]] = []
    n_tokens = 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        samples = []
        for gid, group in enumerate(data):
            advantages = group_mean_advantages([float(s["reward"]) for s in group])  # type: ignore[arg-type]
            for state, adv in zip(group, advantages, strict=True):
                for sample in build_samples(state, group_id=gid).samples:
                    sample.advantage = adv
                    samples.append(sample)
        t1 = time.perf_counter()
        packed = pack_samples(samples, seq_len=16_384)
        t2 = time.perf_counter()
        for mb in packed.micro_batches:
            mb.tensors()
        t3 = time.perf_counter()
        times.append((t1 - t0, t2 - t1, t3 - t2))
        n_tokens = sum(len(s) for s in samples)
    build, pack, tens = (statistics.median(x[i] for x in times) for i in range(3))
    total = build + pack + tens
    print(
        f"adapter alone, {groups} groups x {rollouts} rollouts x 4 turns "
        f"({n_tokens / 1e6:.2f}M tokens, {len(packed.micro_batches)} rows of 16k):"
    )
    print(f"  samples + advantages {build * 1000:8.1f} ms")
    print(f"  packing (FFD)        {pack * 1000:8.1f} ms")
    print(f"  to torch tensors     {tens * 1000:8.1f} ms")
    print(
        f"  total per step       {total * 1000:8.1f} ms   ({n_tokens / total / 1e6:.1f}M tokens/s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--groups", type=int, default=64)
    ap.add_argument("--rollouts", type=int, default=16)
    args = ap.parse_args()
    loop_bench(args.steps)
    adapter_bench(args.groups, args.rollouts)


if __name__ == "__main__":
    main()
