"""The reference training loop behind ``vf train CONFIG.toml``.

Each process holds a Hugging Face causal LM with fp32 master weights and AdamW state (bf16
compute on GPUs, :mod:`verifiers.train.learner`) and trains it with the masked
importance-sampling loss on batches from a :class:`RolloutSource`. Under ``torchrun`` the
model is sharded with FSDP2 and rank 0 runs the rollouts (:mod:`verifiers.train.distributed`).
Rollouts come from an inference backend:

* ``local``: the trainer's own model samples in process (:class:`LocalModelClient`; one
  process only); the sampling weights are always the current ones.
* ``server``: one or more OpenAI-compatible endpoints that return token ids and logprobs
  (vLLM). The sampling arguments the loss assumes are pinned (``top_p`` 1, ``top_k`` -1,
  ``min_p`` 0, no penalties, the configured temperature); start vLLM with ``--logprobs-mode
  processed_logprobs`` (logprobs of the temperature-scaled distribution) and
  ``--generation-config vllm`` (no defaults from the model's generation config). After each
  step the new weights are pushed (``inference.weight_sync``, :mod:`verifiers.train.
  weight_sync`) and the policy version advances only once every server has confirmed. The
  train step runs in a worker thread so that rollouts keep streaming.

Each step's rewards and ``train.sample_rollouts`` of its rollouts (shortened) go to
``OUTPUT_DIR/rollouts.jsonl`` (bounded: :class:`~verifiers.train.run_files.RolloutLog`), the
configuration and status to ``OUTPUT_DIR/run.json``: what ``vf view OUTPUT_DIR`` shows beside
the metrics. Metrics go to ``OUTPUT_DIR/metrics.jsonl`` (one JSON object per step), optionally to
TensorBoard (``train.tensorboard``, ``OUTPUT_DIR/tensorboard``) and to the ``on_step``
callback; checkpoints (Hugging Face weights, tokenizer, optimizer, data order) go to
``OUTPUT_DIR/checkpoints/step_N`` and a run with ``resume = true`` continues from the latest.
An interrupted run (Ctrl-C, or the task running :meth:`Trainer.run` cancelled) finishes the
optimizer step under way, saves a checkpoint (``Trainer.checkpoint``: the newest) and then
stops; the caller tells the user (``vf train`` prints one line with the resume command).

What the trainer loads from its config (device, dtypes, model, environment) is
:mod:`verifiers.train.model_loading`; the sampling arguments and the rollout source's settings
are :mod:`verifiers.train.rollout_settings`.

Each ``metrics.jsonl`` line has: ``step`` (0-based), ``reward`` (mean over the batch's groups,
zero-variance ones included), ``reward/<task>`` (several tasks), ``loss``, ``lr``,
``masked_fraction`` (loss tokens the ratio bounds or a dropped sequence masked),
``dropped_sequences``, ``mean_ratio``, ``entropy`` (mean per loss token, of the trainer's
temperature-scaled distribution), ``mismatch_kl`` (mean per loss token, k3 estimate of
KL(sampler || trainer)) and ``logprob_diff_mean`` (mean absolute difference between the
server's and the trainer's logprobs), ``grad_norm`` (before clipping), ``off_policy_lag`` and
``off_policy_lag_max`` (steps between the weights that sampled a group and those trained),
``num_samples``, ``num_tokens``, ``num_loss_tokens``, ``micro_batches``,
``dropped_overlong`` (samples longer than ``seq_len`` left by the packer), ``wait_seconds``
(waiting for rollouts), ``adapter_seconds`` and ``adapter_share`` (building samples,
advantages and packing), ``sync_seconds`` (pushing weights), ``step_seconds``,
``tokens_per_second`` and ``counts`` (events of the step: ``zero_variance_groups``,
``errored_rollouts``, ``stale_cancelled``, ``stale_dropped``, ``split``,
``dropped_mismatch``, ``overlong``, ``logprob_length_mismatch``, ``short_batches``, ...) and
``skipped_batches`` (batches before this step in which no group was usable: they train nothing
and are not counted as steps, so step numbers and ``train.steps`` count optimizer steps).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import shutil
import socket
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from verifiers.clients.base import Client, as_client
from verifiers.errors import ConfigError, InfraError
from verifiers.train.config import TrainConfig
from verifiers.train.distributed import (
    DistInfo,
    broadcast_object,
    full_model_state,
    init_distributed,
)
from verifiers.train.learner import Learner
from verifiers.train.local_client import LocalModelClient
from verifiers.train.model_loading import (
    compute_dtype,
    load_env,
    load_model,
    param_dtype,
    pick_device,
)
from verifiers.train.rollout_settings import pinned_sampling_args, rollout_source_config
from verifiers.train.rollout_source import Batch, RolloutSource, describe_unusable, env_rows
from verifiers.train.run_files import (
    STATE_FILE,
    MetricsLog,
    RolloutLog,
    config_changes,
    latest_checkpoint,
    prepare_output_dir,
    write_run_info,
)
from verifiers.train.weight_sync import make_weight_sync

if TYPE_CHECKING:
    from verifiers.train.env_server import ServedEnvironment

__all__ = ["Trainer", "latest_checkpoint", "pinned_sampling_args"]

logger = logging.getLogger(__name__)

# mean per-token KL(sampler || trainer) above which an on-policy batch is reported as
# sampled from another distribution than the one the loss assumes
MISMATCH_KL_WARN = 1e-3


class Trainer:
    """Runs the reference loop for one :class:`TrainConfig`.

    ``env`` overrides the configured environment (for programmatic use); ``on_step`` receives
    each step's metrics dict (on rank 0).
    """

    def __init__(
        self,
        config: TrainConfig,
        *,
        env: Any | None = None,
        on_step: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.config = config
        self.on_step = on_step
        self.output_dir = Path(config.train.output_dir)
        self.step = 0
        self._saved_step = 0  # the step of the newest checkpoint
        self.checkpoint: Path | None = None  # the newest checkpoint (written or resumed from)
        self.skipped_batches = 0  # batches with no usable group: not trained, not counted
        self._resume_from = latest_checkpoint(self.output_dir) if config.train.resume else None
        random.seed(config.model.seed)
        torch.manual_seed(config.model.seed)
        self.device = pick_device(config.model.device)
        self.dist: DistInfo = init_distributed(self.device.type)
        if self.dist.enabled and self.device.type == "cuda":
            self.device = torch.device("cuda", self.dist.local_rank)
        if self.dist.enabled and config.inference.backend != "server":
            raise ConfigError(
                "several processes (torchrun / --nproc) need inference.backend = 'server': "
                "a sharded model cannot sample in process"
            )
        self.model, self.tokenizer = load_model(config, self._resume_from, self.device, self.dist)
        self._owns_env = env is None
        self.temperature = config.rollouts.temperature
        self.env: Any = None
        self.clients: list[Client] = []
        self.source: RolloutSource | None = None
        self.served_env: ServedEnvironment | None = None
        if self.dist.is_main:
            self.env = env if env is not None else load_env(config)
            self.clients = self._clients()
            self.source = RolloutSource(
                self._group_runner(),
                self.clients,
                rollout_source_config(config),
                rows=env_rows(self.env),
                tokenizer=self.tokenizer,
            )
        t = config.train
        self.learner = Learner(
            self.model,
            device=self.device,
            compute_dtype=self.compute_dtype,
            lr=t.lr,
            betas=t.betas,
            weight_decay=t.weight_decay,
            max_grad_norm=t.max_grad_norm,
            warmup_steps=t.warmup_steps,
            lr_schedule=t.lr_schedule,
            min_lr_ratio=t.min_lr_ratio,
            total_steps=t.steps,
            ratio_low=t.ratio_low,
            ratio_high=t.ratio_high,
            drop_below=t.drop_below,
            logprob_chunk=t.logprob_chunk,
            dist=self.dist,
        )
        inf = config.inference
        self.weight_sync = make_weight_sync(
            inf.weight_sync if inf.backend == "server" else "none",
            inf.base_urls,
            **(
                {
                    "model": self.model,
                    "rank": self.dist.rank,
                    "host": inf.nccl_host,
                    "port": inf.nccl_port,
                }
                if inf.weight_sync == "nccl"
                else {}
            ),
        )
        self.metrics_log = MetricsLog(self.output_dir, tensorboard=config.train.tensorboard)
        self.rollout_log = RolloutLog(self.output_dir)
        self._warned_mismatch = False
        if self._resume_from is not None:
            self._load_trainer_state(self._resume_from)

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The learner's AdamW."""
        return self.learner.optimizer

    # ------------------------------------------------------------------ setup

    @property
    def param_dtype(self) -> torch.dtype:
        """Master weights and optimizer state: fp32 unless ``model.dtype`` says otherwise."""
        return param_dtype(self.config)

    @property
    def compute_dtype(self) -> torch.dtype:
        """Forward and backward: bf16 on GPUs, fp32 on the CPU, unless configured."""
        return compute_dtype(self.config, self.device)

    def _group_runner(self) -> Any:
        """The environment, or with ``env.server`` a :class:`ServedEnvironment` running it
        in an env-server process."""
        cfg = self.config.env
        if not cfg.server:
            return self.env
        from verifiers.train.env_server import ServedEnvironment

        self.served_env = ServedEnvironment(
            self.env,
            env_id=cfg.factory or cfg.id or "",
            env_args=cfg.args,
            clients=self.clients,
            base_urls=self.config.inference.base_urls,
            num_workers=cfg.num_workers,
            log_dir=str(self.output_dir / "env_server"),
        )
        return self.served_env

    def _clients(self) -> list[Client]:
        inf = self.config.inference
        if inf.backend == "local":
            return [
                LocalModelClient(
                    self.model,
                    self.tokenizer,
                    max_batch_size=inf.max_batch_size,
                    default_max_tokens=self.config.rollouts.max_tokens,
                    seed=self.config.model.seed,
                )
            ]
        return [as_client(url) for url in inf.base_urls]

    # ------------------------------------------------------------------ the loop

    async def run(self) -> list[dict[str, Any]]:
        """Train until ``train.steps`` (counting steps done before a resume); the metrics of
        the steps run now (on rank 0; other ranks return an empty list)."""
        history: list[dict[str, Any]] = []
        if self.dist.is_main:
            prepare_output_dir(self.output_dir, self.step)
            self._write_run_info("running")
        cfg = self.config.train
        in_thread = self.config.inference.backend == "server"
        if in_thread and self.dist.is_main:
            await asyncio.to_thread(self._check_endpoints)
        if in_thread:
            await asyncio.to_thread(self.weight_sync.setup)
        if in_thread and self.step > 0:
            # resumed: the servers still serve the weights they started with
            await asyncio.to_thread(self._push_weights)
        interrupted = False
        status = "failed"
        try:
            while self.step < cfg.steps and not interrupted:
                interrupted = await self._loop_turn(history, in_thread)
            if interrupted and self.step > self._saved_step:
                path = await self._in_thread(self.save_checkpoint)
                # not a warning: the caller says it (vf train names this checkpoint and the
                # command that resumes; ``self.checkpoint`` holds it)
                logger.info("interrupted: saved %s; run again to resume", path)
            status = "interrupted" if interrupted or self._cancelled else "completed"
        except (asyncio.CancelledError, KeyboardInterrupt):
            status = "interrupted"
            raise
        finally:
            try:
                await self._close()
            finally:
                if self.dist.is_main:
                    self._write_run_info(status)
        if interrupted or self._cancelled:
            raise asyncio.CancelledError
        return history

    _cancelled = False  # this rank was cancelled; the ranks stop together at the next turn

    async def _loop_turn(self, history: list[dict[str, Any]], in_thread: bool) -> bool:
        """One turn of the loop: a batch, a step, the weights pushed, metrics, a checkpoint.
        Returns whether every rank agreed to stop. A cancel (Ctrl-C) anywhere in the turn lets
        the part under way finish, so that weights, optimizer and step stay consistent and the
        checkpoint written on the way out is the state of a finished step."""
        cfg = self.config.train
        started = time.perf_counter()
        batch: Batch | None = None
        if self.source is not None and not self._cancelled:
            try:
                batch = await self.source.next_batch(self.step)
            except asyncio.CancelledError:
                self._cancelled = True
        batch = await self._in_thread(broadcast_object, batch, self.dist)
        if batch is None:  # rank 0 was interrupted before a batch
            return True
        if not batch.samples and not batch.nothing_to_learn:
            self._skip_empty_batch(batch)  # errored or stale: no step counted
            return False
        if not batch.samples:  # every group scored the same in all its rollouts
            self._report_nothing_to_learn(batch)
        empty_before, self._empty_in_a_row = self._empty_in_a_row, 0
        if in_thread:
            metrics = await self._in_thread(self.train_step, batch)
        else:
            metrics = self.train_step(batch)
        self.step += 1
        metrics["sync_seconds"] = 0.0
        if in_thread:
            metrics["sync_seconds"] = await self._in_thread(self._push_weights)
        if self.source is not None:  # every server confirmed the new weights
            self.source.set_policy_version(self.step)
        stop = bool(await self._in_thread(broadcast_object, self._cancelled, self.dist))
        self._finish_metrics(metrics, started)
        metrics["skipped_batches"] = empty_before
        if self.dist.is_main:
            self.metrics_log.write(metrics)
            if self.config.train.sample_rollouts or batch.rewards:
                self.rollout_log.write(
                    metrics["step"],
                    batch.rewards,
                    batch.rollouts[: self.config.train.sample_rollouts],
                )
            history.append(metrics)
            self._write_run_info("running")  # the step reached, and when (vf view)
            if self.on_step is not None:
                self.on_step(metrics)
        every = cfg.checkpoint_every
        if (every and self.step % every == 0) or self.step == cfg.steps:
            await self._in_thread(self.save_checkpoint)
        return stop

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker thread; a cancel meanwhile waits for the thread to finish
        (so that weights and optimizer stay consistent) and is remembered (see ``_loop_turn``)."""
        task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            self._cancelled = True
            return await task

    _empty_in_a_row = 0
    MAX_EMPTY_BATCHES = 20

    def _report_nothing_to_learn(self, batch: Batch) -> None:
        """A batch whose groups were all filtered for zero reward variance (the policy solves,
        or fails, every example it drew) is a step without an update: counted, its metrics
        written (``num_samples`` 0, ``counts.zero_variance_groups``), the weights unchanged. A
        mastered task thus runs to ``train.steps`` and says so instead of stopping."""
        groups = batch.unusable["zero_variance"]
        logger.warning(
            "step %d: nothing to learn, weights unchanged: all %d groups drawn had the same "
            "reward in every rollout (mean reward %.3f)%s; set rollouts.filter_zero_variance = "
            "false to train on them anyway, or use harder examples (rollouts.difficulty)",
            self.step + 1,
            groups,
            batch.metrics.get("reward", 0.0),
            f", {describe_unusable(batch.unusable - Counter(zero_variance=groups))}"
            if len(batch.unusable) > 1
            else "",
        )

    def _skip_empty_batch(self, batch: Batch) -> None:
        """A batch in which no group was usable because groups errored or were stale trains
        nothing: the step number and the policy version stay, so that ``train.steps`` counts
        steps. Many in a row stop the run with the cause."""
        self.skipped_batches += 1
        self._empty_in_a_row += 1
        logger.warning(
            "step %d: no usable group in this batch (%s); %d such batches in a row, "
            "generating another",
            self.step + 1,
            describe_unusable(batch.unusable),
            self._empty_in_a_row,
        )
        if self._empty_in_a_row >= self.MAX_EMPTY_BATCHES:
            raise ConfigError(
                f"{self._empty_in_a_row} batches in a row had no usable group (last: "
                f"{describe_unusable(batch.unusable)}): check that the environment runs and "
                "scores rollouts with vf-eval and the same model, and the inference endpoints"
            )

    async def _close(self) -> None:
        if self.source is not None:
            await self.source.close()
        if self.served_env is not None:
            await self.served_env.close()
        if self._owns_env and callable(getattr(self.env, "close", None)):
            await self.env.close()
        self.weight_sync.close()
        self.metrics_log.close()

    _started_at: str | None = None

    def _write_run_info(self, status: str) -> None:
        """``OUTPUT_DIR/run.json``: what ``vf view`` shows beside the metrics (the
        configuration, the status, the planned steps)."""
        from datetime import UTC, datetime

        now = datetime.now(UTC).isoformat(timespec="seconds")
        if self._started_at is None:
            self._started_at = now
        try:
            write_run_info(
                self.output_dir,
                {
                    "kind": "train",
                    "status": status,
                    "pid": os.getpid(),  # a killed run reads as "died" (vf view)
                    "host": socket.gethostname(),
                    "started_at": self._started_at,
                    "updated_at": now,
                    "step": self.step,
                    "steps": self.config.train.steps,
                    "model": self.config.model.name,
                    "env": self.config.env.id or self.config.env.factory,
                    "config": self.config.model_dump(mode="json"),
                },
            )
        except OSError as e:  # the viewer's file must not stop training
            logger.warning("cannot write %s/run.json: %s", self.output_dir, e)

    def _finish_metrics(self, metrics: dict[str, Any], started: float) -> None:
        elapsed = time.perf_counter() - started
        metrics["step_seconds"] = elapsed
        metrics["tokens_per_second"] = metrics["num_tokens"] / elapsed if elapsed else 0.0
        metrics["adapter_share"] = metrics["adapter_seconds"] / elapsed if elapsed else 0.0
        if (
            metrics["off_policy_lag_max"] == 0
            and metrics["num_loss_tokens"]
            and metrics["mismatch_kl"] > MISMATCH_KL_WARN
        ):
            metrics["counts"]["logprob_mismatch_steps"] = 1
            if not self._warned_mismatch:
                self._warned_mismatch = True
                logger.warning(
                    "step %d: the server's logprobs disagree with the trainer's on weights that "
                    "should be the same (mismatch_kl %.2e, mean |diff| %.2e): the server is not "
                    "sampling from the distribution the loss assumes. Start vLLM with "
                    "--logprobs-mode processed_logprobs --generation-config vllm, leave top_k, "
                    "top_p and min_p unset in rollouts.sampling_args, and serve the trained "
                    "model's weights in the same precision",
                    metrics["step"],
                    metrics["mismatch_kl"],
                    metrics["logprob_diff_mean"],
                )

    def train_step(self, batch: Batch) -> dict[str, Any]:
        """One optimizer step on ``batch`` (every rank, the same batch); the step's metrics."""
        pad = self.tokenizer.pad_token_id
        self._check_token_ids(batch)
        out = self.learner.step(
            batch.samples,
            step=self.step,
            seq_len=self.config.train.seq_len,
            temperature=self.temperature,
            pad_token_id=int(pad or 0),
        )
        m = batch.metrics
        pack_seconds = out.pop("pack_seconds")
        return {
            "step": self.step,
            "reward": m["reward"],
            **out,
            "off_policy_lag": m["off_policy_lag_mean"],
            "off_policy_lag_max": m["off_policy_lag_max"],
            "num_samples": len(batch.samples),
            "wait_seconds": m["wait_seconds"],
            "adapter_seconds": m["build_seconds"] + pack_seconds,
            "counts": dict(batch.counts),
            **{k: v for k, v in m.items() if k.startswith("reward/")},
        }

    def _check_token_ids(self, batch: Batch) -> None:
        """A clear error instead of an embedding IndexError when the inference backend's
        token ids are not the trained model's (the server serves another model or tokenizer)."""
        vocab_size = int(self.model.get_input_embeddings().num_embeddings)
        ids = [
            t for s in batch.samples for t in (min(s.token_ids), max(s.token_ids)) if s.token_ids
        ]
        if not ids:
            return
        low, high = min(ids), max(ids)
        if low < 0 or high >= vocab_size:
            bad = high if high >= vocab_size else low
            raise ConfigError(
                f"the inference backend returned token id {bad}, outside the vocabulary of "
                f"model {self.config.model.name!r} ({vocab_size} tokens): the endpoints in "
                "inference.base_urls must serve the model being trained, with its tokenizer"
            )

    # ------------------------------------------------------------------ weights and checkpoints

    def _check_endpoints(self) -> None:
        """Fail at once, naming the URL, when an inference endpoint cannot be reached (rather
        than after many groups' retries). Any HTTP answer counts as reachable."""
        import httpx

        for url in self.config.inference.base_urls:
            try:
                httpx.get(url.rstrip("/") + "/models", timeout=30.0)
            except httpx.TransportError as e:
                raise InfraError(
                    f"cannot reach the inference endpoint {url} ({type(e).__name__}: {e}); "
                    "start the server or fix inference.base_urls"
                ) from None

    def _push_weights(self) -> float:
        """Make every server serve the current weights (all ranks call it: gathering sharded
        weights is collective); returns the seconds the push took on rank 0."""
        sync = self.weight_sync
        if self.config.inference.weight_sync == "none":
            return 0.0
        started = time.perf_counter()
        if getattr(sync, "all_ranks", False):  # NCCL: every rank gathers, rank 0 sends
            sync.push(self.step, None, None)
            broadcast_object(None, self.dist)
            return time.perf_counter() - started
        state = full_model_state(self.model, self.dist)
        seconds = 0.0
        if self.dist.is_main:
            directory = None
            root = self.output_dir / "weights"
            if sync.needs_directory:
                directory = root / f"step_{self.step}"
                self._save_hf(directory, state)
            sync.push(self.step, directory, None)
            seconds = time.perf_counter() - started
            for old in root.glob("step_*"):
                if old != directory:
                    shutil.rmtree(old, ignore_errors=True)
        del state
        broadcast_object(None, self.dist)  # the others wait for rank 0's confirmation
        return seconds

    def _save_hf(self, path: Path, state: dict[str, torch.Tensor]) -> None:
        """Hugging Face format (safetensors, config, tokenizer) from a full state dict."""
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path, state_dict=state)
        self.tokenizer.save_pretrained(path)

    def save_checkpoint(self) -> Path:
        """Write ``checkpoints/step_N`` (HF weights, tokenizer, optimizer, data order, RNG).
        Every rank calls it (gathering is collective); rank 0 writes."""
        self._saved_step = self.step
        path = self.output_dir / "checkpoints" / f"step_{self.step}"
        self.checkpoint = path
        weights = full_model_state(self.model, self.dist)
        learner_state = self.learner.state_dict()
        if self.dist.is_main:
            self._save_hf(path, weights)
            state: dict[str, Any] = {
                "step": self.step,
                **learner_state,
                "source": self.source.state_dict() if self.source is not None else {},
                "torch_rng": torch.get_rng_state(),
                "python_rng": random.getstate(),
                "client_rng": [
                    c.generator.get_state() for c in self.clients if isinstance(c, LocalModelClient)
                ],
                "config": self.config.model_dump(mode="json"),
            }
            tmp = path / (STATE_FILE + ".tmp")
            torch.save(state, tmp)
            tmp.replace(path / STATE_FILE)  # written last: marks the checkpoint complete
        broadcast_object(None, self.dist)
        return path

    def _check_resumable(self, path: Path, saved: dict[str, Any]) -> None:
        """Refuse to resume when [model] or [env] changed (the checkpoint is another run);
        name the other changed settings, which the resumed run applies."""
        changes = config_changes(saved, self.config.model_dump(mode="json"))
        fixed = [c for c in changes if c.split(".")[0] in ("model", "env")]
        if fixed:
            raise ConfigError(
                f"{self.output_dir} holds a checkpoint ({path.name}) of a run with other "
                f"settings: {'; '.join(fixed)}. Resume with the same [model] and [env], or "
                "start a new run: --no-resume, or another train.output_dir (model.name may "
                "point at the checkpoint directory to start from its weights)"
            )
        if changes and self.dist.is_main:
            logger.warning("resuming from %s with changed settings: %s", path, "; ".join(changes))

    def _load_trainer_state(self, path: Path) -> None:
        state = torch.load(path / STATE_FILE, map_location="cpu", weights_only=False)
        if "config" in state:
            self._check_resumable(path, state["config"])
        self.step = self._saved_step = int(state["step"])
        self.checkpoint = path
        t = self.config.train
        self.learner.load_state_dict(
            state, lr_overrides={"betas": t.betas, "weight_decay": t.weight_decay}
        )
        self.learner.set_lr(self.step)
        if self.source is not None:
            self.source.load_state_dict(state["source"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
        locals_ = [c for c in self.clients if isinstance(c, LocalModelClient)]
        for client, rng in zip(locals_, state["client_rng"], strict=False):
            client.generator.set_state(rng)
        logger.info("resumed from %s at step %d", path, self.step)
