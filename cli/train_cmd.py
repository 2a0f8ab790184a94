"""``vf train CONFIG.toml``: the reference RL training loop (needs ``verifiers[train]``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from cli._common import CLIError, handle_errors, run_async

HELP = "\n\n".join(
    [
        "Train a model on an environment with the reference RL loop (asynchronous off-policy "
        "rollouts, masked importance-sampling loss, AdamW). Example: vf train "
        "configs/train-tiny.toml (a tiny model on CPU, nothing downloaded).",
        "CONFIG.toml has these tables; only env is required (the module verifiers.train.config "
        "documents every key):",
        "model: name ('tiny' builds a random model in process; else a Hugging Face id or "
        "path), dtype (master weights and optimizer state; fp32 by default), compute_dtype "
        "(forward and backward; bf16 on GPUs by default), device, seed; hidden_size, num_layers, num_heads, max_positions size "
        "the tiny model.",
        "env: id (an installed environment) or factory ('module:function'; the module may sit "
        "next to the config), args.",
        "inference: backend ('local': the trained model samples in process; 'server': "
        "OpenAI-compatible endpoints that return token ids, e.g. vLLM), base_urls, "
        "model (the served name), weight_sync ('reload': vLLM's dev-mode collective_rpc "
        "reload of a saved checkpoint; 'nccl': vLLM's weight transfer on GPUs; 'prime-rl'; "
        "'none'), update_weights (false: 'none'), nccl_host, nccl_port, max_batch_size "
        "(local).",
        "rollouts: rollouts_per_example, groups_per_batch, max_in_flight, "
        "max_off_policy_steps, temperature, max_tokens, filter_zero_variance, on_mismatch, "
        "overlong (truncate, mask, zero or drop rollouts longer than train.seq_len), "
        "sampling_args (overrides of the pinned sampling arguments), "
        "difficulty (a sub-table: easy_ratio, normal_ratio, hard_ratio, easy_at, hard_at, "
        "pass_threshold).",
        "train: steps, lr, warmup_steps, lr_schedule (constant, linear, cosine), min_lr_ratio, "
        "weight_decay, betas, max_grad_norm, seq_len, ratio_low, ratio_high, drop_below, "
        "logprob_chunk, activation_checkpointing, checkpoint_every, tensorboard, output_dir, "
        "resume, sample_rollouts (rollouts kept per step for vf view; 0: none).",
        "--nproc N runs N processes with torchrun (FSDP2, one GPU each; gloo on the CPU); "
        "the same as: torchrun --standalone --nproc-per-node N -m cli.main train CONFIG.toml.",
        "Writes OUTPUT_DIR/metrics.jsonl (one JSON object per step: step, reward, loss, "
        "masked_fraction, off_policy_lag, tokens_per_second, ...) and "
        "OUTPUT_DIR/checkpoints/step_N, OUTPUT_DIR/rollouts.jsonl (each step's rewards and a "
        "few sample rollouts, bounded) and OUTPUT_DIR/run.json (the configuration and "
        "status); `vf view OUTPUT_DIR` shows the run live. Resumes from the latest "
        "checkpoint unless --no-resume.",
    ]
)


app = typer.Typer()


@app.command("train", help=HELP)
@handle_errors
def train_command(
    config: Path = typer.Argument(..., help="Training config (TOML).", show_default=False),
    steps: int | None = typer.Option(None, "--steps", min=1, help="Override train.steps."),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Override train.output_dir."),
    no_resume: bool = typer.Option(
        False, "--no-resume", help="Start from scratch even if OUTPUT_DIR has checkpoints."
    ),
    nproc: int = typer.Option(
        1, "--nproc", min=1, help="Processes (GPUs) to train with: torchrun + FSDP2."
    ),
    env_server: bool = typer.Option(
        False,
        "--env-server",
        help="Run the environment in an env-server process (env.server = true; needs "
        "inference.backend = 'server').",
    ),
    env_workers: int | None = typer.Option(
        None, "--env-workers", min=1, help="Override env.num_workers (env-server workers)."
    ),
) -> None:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        raise CLIError(
            f"vf train needs torch and transformers ({e.name} is not installed)",
            hint="pip install 'verifiers[train]'",
        ) from None
    import os

    if nproc > 1 and "WORLD_SIZE" not in os.environ:
        extra = ["--env-server"] if env_server else []
        if env_workers is not None:
            extra += ["--env-workers", str(env_workers)]
        status = _torchrun(nproc, config, steps, output_dir, no_resume, extra)
        if status:
            raise SystemExit(status)
        return
    rank = int(os.environ.get("RANK", "0"))

    from transformers.utils import logging as hf_logging

    from verifiers.train.config import TrainConfig, load_train_config
    from verifiers.train.trainer import Trainer

    cfg = load_train_config(config)
    if steps is not None:
        cfg.train.steps = steps
    if output_dir is not None:
        cfg.train.output_dir = str(output_dir)
    if no_resume:
        cfg.train.resume = False
    if env_server or env_workers is not None:
        base_dir = cfg.base_dir
        data = cfg.model_dump()
        data["env"]["server"] = data["env"]["server"] or env_server
        if env_workers is not None:
            data["env"]["num_workers"] = env_workers
        cfg = TrainConfig.from_dict(data, source=f"{config} with --env-server")
        cfg._base_dir = base_dir
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    if rank == 0:  # the first step can take minutes: say what is happening meanwhile
        env = cfg.env.id or cfg.env.factory
        print(f"vf train: loading model {cfg.model.name} and environment {env}", file=sys.stderr)
    trainer = Trainer(cfg, on_step=_printer(cfg.train.steps))
    if trainer.step and rank == 0:
        print(f"resuming at step {trainer.step} from {cfg.train.output_dir}", file=sys.stderr)
    if trainer.step >= cfg.train.steps:
        if rank == 0:
            print(f"nothing to do: already trained {trainer.step} of {cfg.train.steps} steps")
        return
    if rank == 0:
        r = cfg.rollouts
        print(
            f"vf train: step {trainer.step + 1}/{cfg.train.steps} starts once "
            f"{r.groups_per_batch} groups x {r.rollouts_per_example} rollouts are generated",
            file=sys.stderr,
            flush=True,
        )
    try:
        history = run_async(trainer.run())
    except KeyboardInterrupt:
        if rank != 0:
            raise SystemExit(130) from None
        raise _interrupted(trainer.step, trainer.checkpoint) from None
    if rank != 0:
        return
    last = history[-1]
    print(
        f"done: {trainer.step} steps, reward {last['reward']:.3f}, "
        f"metrics in {Path(cfg.train.output_dir) / 'metrics.jsonl'}"
    )


def _torchrun(
    nproc: int,
    config: Path,
    steps: int | None,
    output_dir: Path | None,
    no_resume: bool,
    extra: list[str] | None = None,
) -> int:
    """Run this command in ``nproc`` processes under torchrun; its exit status."""
    import subprocess

    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone",
        "--nproc-per-node", str(nproc), "-m", "cli.main", "train", str(config),
    ]  # fmt: skip
    if steps is not None:
        cmd += ["--steps", str(steps)]
    if output_dir is not None:
        cmd += ["--output-dir", str(output_dir)]
    if no_resume:
        cmd.append("--no-resume")
    cmd += extra or []
    return subprocess.call(cmd)


def _interrupted(step: int, checkpoint: Path | None) -> CLIError:
    """Ctrl-C: the one message, naming the checkpoint the run stopped at and the command
    that resumes from it (this one, without --no-resume)."""
    import shlex

    args = [a for a in sys.argv[1:] if a != "--no-resume"]
    if args[:1] != ["train"]:
        args = ["train", *args]
    if checkpoint is None:
        return CLIError(
            f"interrupted at step {step}, before the first checkpoint: nothing was saved",
            hint=f"start again with: vf {shlex.join(args)}",
            exit_code=130,
        )
    return CLIError(
        f"interrupted after step {step}: saved the checkpoint {checkpoint}",
        hint=f"resume with: vf {shlex.join(args)}",
        exit_code=130,
    )


def _printer(total: int) -> Any:
    """A per-step line: rich-formatted on a terminal, plain otherwise."""
    if sys.stdout.isatty():
        from rich.console import Console

        console = Console()

        def show_rich(m: dict[str, Any]) -> None:
            console.print(
                f"[bold]step {m['step'] + 1}/{total}[/] reward [green]{m['reward']:.3f}[/] "
                f"loss {m['loss']:+.4f} lr {m['lr']:.2e} entropy {m['entropy']:.3f} "
                f"masked {m['masked_fraction']:.1%} kl {m['mismatch_kl']:.1e} "
                f"lag {m['off_policy_lag']:.1f} {m['tokens_per_second']:.0f} tok/s "
                f"[dim]({m['step_seconds']:.2f}s, adapter {m['adapter_share']:.1%})[/]"
            )

        return show_rich

    def show_plain(m: dict[str, Any]) -> None:
        print(
            f"step {m['step'] + 1}/{total} reward {m['reward']:.3f} loss {m['loss']:+.4f} "
            f"lr {m['lr']:.2e} entropy {m['entropy']:.3f} masked {m['masked_fraction']:.3f} "
            f"kl {m['mismatch_kl']:.1e} lag {m['off_policy_lag']:.1f} "
            f"tok/s {m['tokens_per_second']:.0f}",
            flush=True,
        )

    return show_plain
