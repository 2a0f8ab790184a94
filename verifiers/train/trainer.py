"""The reference training loop behind ``vf train CONFIG.toml``.

One process holds a Hugging Face causal LM (bf16 on GPU, fp32 on CPU) and trains it with the
masked importance-sampling loss on batches from a :class:`RolloutSource`. Rollouts come from
an inference backend:

* ``local``: the trainer's own model samples in process (:class:`LocalModelClient`); the
  sampling weights are always the current ones.
* ``server``: one or more OpenAI-compatible endpoints that return token ids and logprobs (vLLM;
  start it with ``--logprobs-mode processed_logprobs`` so that the logprobs are those of the
  temperature-scaled distribution the trainer recomputes). After each step the weights are
  saved under ``OUTPUT_DIR/weights/step_N`` and every endpoint is told to load them with
  ``POST {server root}{inference.update_weights_path} {"path": ..., "step": N}`` (default
  path ``/update_weights``, as in prime-rl's vLLM server; stock ``vllm serve`` needs such an
  endpoint added); the train step runs in a worker thread so that rollouts keep streaming.

Each step packs the samples into ``seq_len`` rows, accumulates gradients over the rows
(normalised by the step's loss tokens), clips and applies AdamW. Metrics go to
``OUTPUT_DIR/metrics.jsonl`` (one JSON object per step) and to the ``on_step`` callback;
checkpoints (weights, tokenizer, optimizer, data order) go to
``OUTPUT_DIR/checkpoints/step_N`` and a run with ``resume = true`` continues from the latest.
An interrupted run (Ctrl-C, or the task running :meth:`Trainer.run` cancelled) finishes the
optimizer step under way, saves a checkpoint and then stops.

Each ``metrics.jsonl`` line has: ``step`` (0-based), ``reward`` (mean over the batch's groups,
zero-variance ones included), ``reward/<task>`` (several tasks), ``loss``, ``masked_fraction``
(loss tokens the ratio bounds or a dropped sequence masked), ``dropped_sequences``,
``mean_ratio``, ``grad_norm``, ``off_policy_lag`` and ``off_policy_lag_max`` (steps between
the weights that sampled a group and those trained), ``num_samples``, ``num_tokens``,
``num_loss_tokens``, ``micro_batches``, ``dropped_overlong`` (samples longer than ``seq_len``),
``wait_seconds`` (waiting for rollouts), ``adapter_seconds`` and ``adapter_share`` (building
samples, advantages and packing), ``step_seconds``, ``tokens_per_second`` and ``counts``
(events of the step: ``zero_variance_groups``, ``errored_rollouts``, ``stale_cancelled``,
``stale_dropped``, ``split``, ``dropped_mismatch``, ``short_batches``, ...).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import math
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from verifiers.clients.base import Client, as_client
from verifiers.errors import ConfigError, InfraError
from verifiers.train.config import TrainConfig
from verifiers.train.local_client import LocalModelClient
from verifiers.train.loss import masked_importance_sampling_loss, token_logprobs
from verifiers.train.packing import pack_samples
from verifiers.train.rollout_source import (
    Batch,
    DifficultyConfig,
    RolloutSource,
    RolloutSourceConfig,
)

__all__ = ["Trainer", "latest_checkpoint"]

logger = logging.getLogger(__name__)

STATE_FILE = "trainer_state.pt"


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest complete checkpoint under ``output_dir/checkpoints`` (or None)."""
    root = Path(output_dir) / "checkpoints"
    if not root.is_dir():
        return None
    done = [p for p in root.glob("step_*") if (p / STATE_FILE).is_file()]
    return max(done, key=lambda p: int(p.name.split("_")[1]), default=None)


class Trainer:
    """Runs the reference loop for one :class:`TrainConfig`.

    ``env`` overrides the configured environment (for programmatic use); ``on_step`` receives
    each step's metrics dict.
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
        self._resume_from = latest_checkpoint(self.output_dir) if config.train.resume else None
        self._seed()
        self.device = self._device()
        self.model, self.tokenizer = self._load_model()
        self._owns_env = env is None
        self.env = env if env is not None else self._load_env()
        self.temperature = config.rollouts.temperature
        self.clients = self._clients()
        self.source = RolloutSource(
            self.env, self.clients, self._source_config(), tokenizer=self.tokenizer
        )
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(),
            lr=config.train.lr,
            betas=config.train.betas,
            weight_decay=config.train.weight_decay,
        )
        if self._resume_from is not None:
            self._load_trainer_state(self._resume_from)

    # ------------------------------------------------------------------ setup

    def _seed(self) -> None:
        seed = self.config.model.seed
        random.seed(seed)
        torch.manual_seed(seed)

    def _device(self) -> torch.device:
        wanted = self.config.model.device
        if wanted == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            device = torch.device(wanted)
        except RuntimeError:
            raise ConfigError(
                f"model.device {wanted!r} is not a torch device (try 'auto', 'cpu' or 'cuda:0')"
            ) from None
        if device.type == "cuda":
            count = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if count == 0 or (device.index or 0) >= count:
                raise ConfigError(
                    f"model.device {wanted!r}: this machine has {count} CUDA device(s); "
                    "use 'auto' or 'cpu'"
                )
        return device

    def _dtype(self) -> torch.dtype:
        name = self.config.model.dtype
        if name == "auto":
            return torch.bfloat16 if self.device.type == "cuda" else torch.float32
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[
            name
        ]

    def _load_model(self) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        cfg = self.config.model
        source: str | None = str(self._resume_from) if self._resume_from else None
        if source is None and cfg.name != "tiny":
            source = cfg.name
        if source is None:
            from verifiers.train.tiny import build_char_tokenizer, build_tiny_model

            tokenizer = build_char_tokenizer()
            model = build_tiny_model(
                len(tokenizer),
                hidden_size=cfg.hidden_size,
                num_layers=cfg.num_layers,
                num_heads=cfg.num_heads,
                max_positions=cfg.max_positions,
                seed=cfg.seed,
            )
        else:
            if (
                source.startswith(("/", "./", "../", "~"))
                and not Path(source).expanduser().is_dir()
            ):
                raise ConfigError(
                    f"model.name {source!r} is not a directory: give a Hugging Face model id, "
                    "a directory written by save_pretrained, or 'tiny'"
                )
            try:
                tokenizer = AutoTokenizer.from_pretrained(source)
                model = AutoModelForCausalLM.from_pretrained(source, dtype=self._dtype())
            except OSError as e:
                raise ConfigError(f"cannot load model {source!r}: {e}") from None
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        model.to(device=self.device, dtype=self._dtype())
        if self.config.train.activation_checkpointing:
            # recompute activations in the backward pass: less memory for long packed rows
            enable = getattr(model, "activation_checkpointing_enable", None)
            (enable or model.gradient_checkpointing_enable)()
        model.train()
        return model, tokenizer

    def _load_env(self) -> Any:
        cfg = self.config.env
        if cfg.factory is not None:
            module_name, _, attr = cfg.factory.partition(":")
            if not attr:
                raise ConfigError(
                    f"env.factory must look like 'module:function', got {cfg.factory!r}"
                )
            self._make_importable(module_name)
            try:
                factory = getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError) as e:
                raise ConfigError(f"cannot import env.factory {cfg.factory!r}: {e}") from None
            return factory(**cfg.args)
        from verifiers.loading import load_environment

        assert cfg.id is not None
        return load_environment(cfg.id, **cfg.args)

    def _make_importable(self, module_name: str) -> None:
        """Put the config file's directory or the working directory on ``sys.path`` when the
        factory's top-level module lives there (as ``python script.py`` would for a script)."""
        top = module_name.split(".")[0]
        for d in (self.config.base_dir, Path.cwd()):
            if d is None or str(d) in sys.path:
                continue
            if (d / f"{top}.py").is_file() or (d / top / "__init__.py").is_file():
                sys.path.insert(0, str(d))
                return

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

    def _source_config(self) -> RolloutSourceConfig:
        r = self.config.rollouts
        difficulty = DifficultyConfig(**r.difficulty.model_dump()) if r.difficulty else None
        return RolloutSourceConfig(
            model=self.config.inference.model or self.config.model.name,
            rollouts_per_example=r.rollouts_per_example,
            groups_per_batch=r.groups_per_batch,
            max_in_flight=r.max_in_flight or 2 * r.groups_per_batch,
            max_off_policy_steps=r.max_off_policy_steps,
            sampling_args=self._sampling_args(),
            filter_zero_variance=r.filter_zero_variance,
            difficulty=difficulty,
            on_mismatch=r.on_mismatch,
            seed=self.config.model.seed,
        )

    def _sampling_args(self) -> dict[str, Any]:
        r = self.config.rollouts
        args: dict[str, Any] = {"temperature": r.temperature, "max_tokens": r.max_tokens}
        if self.config.inference.backend == "server":
            # vLLM: token ids and the sampled tokens' logprobs in the answer
            args["logprobs"] = True
            args["extra_body"] = {"return_token_ids": True}
        return args

    # ------------------------------------------------------------------ the loop

    async def run(self) -> list[dict[str, Any]]:
        """Train until ``train.steps`` (counting steps done before a resume); the metrics of
        the steps run now."""
        history: list[dict[str, Any]] = []
        self._prepare_output_dir()
        cfg = self.config.train
        in_thread = self.config.inference.backend == "server"
        sync = in_thread and self.config.inference.update_weights
        if in_thread:
            await asyncio.to_thread(self._check_endpoints)
        if sync and self.step > 0:
            # resumed: the servers still serve the weights they started with
            await asyncio.to_thread(self._push_weights)
        interrupted = False
        try:
            while self.step < cfg.steps and not interrupted:
                started = time.perf_counter()
                try:
                    batch = await self.source.next_batch(self.step)
                except asyncio.CancelledError:
                    interrupted = True
                    break
                if in_thread:
                    metrics, interrupted = await self._finish_in_thread(self.train_step, batch)
                else:
                    metrics = self.train_step(batch)
                self.step += 1
                if sync:
                    _, stop = await self._finish_in_thread(self._push_weights)
                    interrupted = interrupted or stop
                self.source.set_policy_version(self.step)
                elapsed = time.perf_counter() - started
                metrics["step_seconds"] = elapsed
                metrics["tokens_per_second"] = metrics["num_tokens"] / elapsed if elapsed else 0.0
                metrics["adapter_share"] = metrics["adapter_seconds"] / elapsed if elapsed else 0.0
                self._log(metrics)
                history.append(metrics)
                if self.on_step is not None:
                    self.on_step(metrics)
                every = cfg.checkpoint_every
                if (every and self.step % every == 0) or self.step == cfg.steps:
                    self.save_checkpoint()
            if interrupted and self.step > self._saved_step:
                path = self.save_checkpoint()
                logger.warning("interrupted: saved %s; run again to resume", path)
        finally:
            await self.source.close()
            if self._owns_env and callable(getattr(self.env, "close", None)):
                await self.env.close()
        if interrupted:
            raise asyncio.CancelledError
        return history

    @staticmethod
    async def _finish_in_thread(fn: Callable[..., Any], *args: Any) -> tuple[Any, bool]:
        """Run ``fn`` in a worker thread; when cancelled meanwhile, wait for the thread to
        finish (so that weights and optimizer stay consistent) and report the interruption."""
        task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        try:
            return await asyncio.shield(task), False
        except asyncio.CancelledError:
            return await task, True

    def _prepare_output_dir(self) -> None:
        """Keep ``metrics.jsonl`` one row per step of this run's history.

        A resumed run forgets the rows of steps after its checkpoint (they are trained again).
        A run that starts from step 0 (``resume = false``, or no complete checkpoint) moves an
        earlier run's checkpoints, weights and metrics to ``OUTPUT_DIR/replaced-<time>`` so
        that nothing is lost and a later resume cannot pick up the other run's checkpoints.
        """
        self.output_dir.mkdir(parents=True, exist_ok=True)
        metrics = self.output_dir / "metrics.jsonl"
        if self.step > 0:
            if metrics.is_file():
                kept = [
                    line
                    for line in metrics.read_text(encoding="utf-8").splitlines()
                    if _logged_step(line) < self.step
                ]
                metrics.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
            return
        earlier = [
            self.output_dir / name
            for name in ("checkpoints", "weights", "metrics.jsonl")
            if (self.output_dir / name).exists()
        ]
        if not earlier:
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.output_dir / f"replaced-{stamp}"
        n = 1
        while aside.exists():
            n += 1
            aside = self.output_dir / f"replaced-{stamp}-{n}"
        aside.mkdir()
        for path in earlier:
            path.rename(aside / path.name)
        logger.warning(
            "starting over in %s: the earlier run's %s moved to %s",
            self.output_dir,
            ", ".join(p.name for p in earlier),
            aside,
        )

    def _log(self, metrics: dict[str, Any]) -> None:
        with open(self.output_dir / "metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(metrics) + "\n")

    def train_step(self, batch: Batch) -> dict[str, Any]:
        """One optimizer step on ``batch``; returns the step's metrics."""
        cfg = self.config.train
        t0 = time.perf_counter()
        pad = self.tokenizer.pad_token_id
        packed = pack_samples(batch.samples, cfg.seq_len, pad_token_id=int(pad or 0))
        pack_seconds = time.perf_counter() - t0
        total_loss_tokens = sum(mb.num_loss_tokens for mb in packed.micro_batches)
        loss_sum = 0.0
        masked = dropped = 0
        ratio_sum = 0.0
        grad_norm = 0.0
        self.model.train()
        vocab_size = int(self.model.get_input_embeddings().num_embeddings)
        for mb in packed.micro_batches:
            t = mb.tensors(self.device)
            self._check_token_ids(t["input_ids"], vocab_size)
            # no attention mask and no cache: the model builds a block-diagonal causal mask
            # from the position restarts, so packed samples do not attend to each other
            logits = self.model(
                input_ids=t["input_ids"], position_ids=t["position_ids"], use_cache=False
            ).logits
            lp = token_logprobs(logits, t["input_ids"], self.temperature)
            old = t["old_logprobs"]
            old = torch.where(torch.isnan(old), lp.detach(), old)
            out = masked_importance_sampling_loss(
                lp,
                old,
                t["advantages"],
                t["loss_mask"],
                sequence_ids=t["sequence_ids"],
                low=cfg.ratio_low,
                high=cfg.ratio_high,
                drop_below=cfg.drop_below,
                normalizer=total_loss_tokens,
            )
            out.loss.backward()  # type: ignore[no-untyped-call]
            loss_sum += float(out.loss.detach())
            masked += out.num_masked_tokens
            dropped += out.num_dropped_sequences
            ratio_sum += out.mean_ratio * out.num_loss_tokens
        if packed.micro_batches:
            grad_norm = float(
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
            )
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        m = batch.metrics
        return {
            "step": self.step,
            "reward": m["reward"],
            "loss": loss_sum,
            "masked_fraction": masked / total_loss_tokens if total_loss_tokens else 0.0,
            "dropped_sequences": dropped,
            "mean_ratio": ratio_sum / total_loss_tokens if total_loss_tokens else 1.0,
            "grad_norm": grad_norm,
            "off_policy_lag": m["off_policy_lag_mean"],
            "off_policy_lag_max": m["off_policy_lag_max"],
            "num_samples": len(batch.samples),
            "num_tokens": sum(mb.num_tokens for mb in packed.micro_batches),
            "num_loss_tokens": total_loss_tokens,
            "micro_batches": len(packed.micro_batches),
            "dropped_overlong": packed.dropped_overlong,
            "wait_seconds": m["wait_seconds"],
            "adapter_seconds": m["build_seconds"] + pack_seconds,
            "counts": dict(batch.counts),
            **{k: v for k, v in m.items() if k.startswith("reward/")},
        }

    def _check_token_ids(self, input_ids: torch.Tensor, vocab_size: int) -> None:
        """A clear error instead of an embedding IndexError when the inference backend's
        token ids are not the trained model's (the server serves another model or tokenizer)."""
        low, high = int(input_ids.min()), int(input_ids.max())
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

    def _push_weights(self) -> None:
        """Save the current weights and ask every endpoint to load them."""
        import httpx

        root = self.output_dir / "weights"
        path = root / f"step_{self.step}"
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        for url in self.config.inference.base_urls:
            server = url.rstrip("/").removesuffix("/v1")
            try:
                r = httpx.post(
                    server + self.config.inference.update_weights_path,
                    json={"path": str(path.resolve()), "step": self.step},
                    timeout=600.0,
                )
                r.raise_for_status()
            except httpx.HTTPError as e:
                path_ = self.config.inference.update_weights_path
                raise InfraError(
                    f"could not update the weights of {server} ({e}). The server must accept "
                    f'POST {path_} {{"path", "step"}} (inference.update_weights_path); set '
                    "inference.update_weights = false to train without syncing."
                ) from None
        for old in root.glob("step_*"):
            if old != path:
                shutil.rmtree(old, ignore_errors=True)

    def save_checkpoint(self) -> Path:
        """Write ``checkpoints/step_N`` (weights, tokenizer, optimizer, data order, RNG)."""
        self._saved_step = self.step
        path = self.output_dir / "checkpoints" / f"step_{self.step}"
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        state: dict[str, Any] = {
            "step": self.step,
            "optimizer": self.optimizer.state_dict(),
            "source": self.source.state_dict(),
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
        return path

    def _check_resumable(self, path: Path, saved: dict[str, Any]) -> None:
        """Refuse to resume when [model] or [env] changed (the checkpoint is another run);
        name the other changed settings, which the resumed run applies."""
        changes = _config_changes(saved, self.config.model_dump(mode="json"))
        fixed = [c for c in changes if c.split(".")[0] in ("model", "env")]
        if fixed:
            raise ConfigError(
                f"{self.output_dir} holds a checkpoint ({path.name}) of a run with other "
                f"settings: {'; '.join(fixed)}. Resume with the same [model] and [env], or "
                "start a new run: --no-resume, or another train.output_dir (model.name may "
                "point at the checkpoint directory to start from its weights)"
            )
        if changes:
            logger.warning("resuming from %s with changed settings: %s", path, "; ".join(changes))

    def _load_trainer_state(self, path: Path) -> None:
        state = torch.load(path / STATE_FILE, map_location="cpu", weights_only=False)
        if "config" in state:
            self._check_resumable(path, state["config"])
        self.step = self._saved_step = int(state["step"])
        self.optimizer.load_state_dict(state["optimizer"])
        for group in self.optimizer.param_groups:  # the config's values, not the checkpoint's
            group["lr"] = self.config.train.lr
            group["betas"] = self.config.train.betas
            group["weight_decay"] = self.config.train.weight_decay
        self.source.load_state_dict(state["source"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
        locals_ = [c for c in self.clients if isinstance(c, LocalModelClient)]
        for client, rng in zip(locals_, state["client_rng"], strict=False):
            client.generator.set_state(rng)
        logger.info("resumed from %s at step %d", path, self.step)


def _logged_step(line: str) -> float:
    """The step of a metrics.jsonl line (infinity for a line cut short by a crash)."""
    try:
        return float(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return math.inf


# settings that may differ between a run and its resumption without being reported
_RUNTIME_KEYS = {
    "model.device",
    "model.dtype",
    "train.steps",
    "train.output_dir",
    "train.resume",
    "inference.base_urls",
}


def _config_changes(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """``"section.key: old -> new"`` for every setting that differs (nested tables flattened)."""
    changes: list[str] = []
    for key in sorted(set(old) | set(new)):
        name = f"{prefix}{key}"
        a, b = old.get(key), new.get(key)
        if name in _RUNTIME_KEYS or a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict) and name.count(".") < 1:
            changes.extend(_config_changes(a, b, name + "."))
        else:
            changes.append(f"{name}: {a!r} -> {b!r}")
    return changes
