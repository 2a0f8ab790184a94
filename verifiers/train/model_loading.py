"""What the trainer loads from its :class:`~verifiers.train.config.TrainConfig` before it
trains: the device, the dtypes of the master weights and of the forward pass, the model and
its tokenizer (a Hugging Face model, a checkpoint, or the built-in tiny model), and the
environment (an installed id, or ``env.factory``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import torch

from verifiers.errors import ConfigError
from verifiers.train.config import TrainConfig
from verifiers.train.distributed import DistInfo, shard_model

__all__ = ["compute_dtype", "load_env", "load_model", "param_dtype", "pick_device"]

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def pick_device(wanted: str) -> torch.device:
    """``model.device``: ``auto`` (CUDA when there is one), or a torch device this machine
    has."""
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


def param_dtype(config: TrainConfig) -> torch.dtype:
    """Master weights and optimizer state: fp32 unless ``model.dtype`` says otherwise."""
    name = config.model.dtype
    return torch.float32 if name == "auto" else _DTYPES[name]


def compute_dtype(config: TrainConfig, device: torch.device) -> torch.dtype:
    """Forward and backward: bf16 on GPUs, fp32 on the CPU, unless configured."""
    name = config.model.compute_dtype
    if name == "auto":
        params = param_dtype(config)
        if params != torch.float32:
            return params
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return _DTYPES[name]


def load_model(
    config: TrainConfig, resume_from: Path | None, device: torch.device, dist: DistInfo
) -> tuple[Any, Any]:
    """The model (on ``device``, in training mode, sharded under several processes) and its
    tokenizer: from the checkpoint ``resume_from``, else ``model.name`` (a Hugging Face id or
    directory, or ``tiny``)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cfg = config.model
    params = param_dtype(config)
    source: str | None = str(resume_from) if resume_from else None
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
        if source.startswith(("/", "./", "../", "~")) and not Path(source).expanduser().is_dir():
            raise ConfigError(
                f"model.name {source!r} is not a directory: give a Hugging Face model id, "
                "a directory written by save_pretrained, or 'tiny'"
            )
        try:
            tokenizer = AutoTokenizer.from_pretrained(source)
            model = AutoModelForCausalLM.from_pretrained(source, dtype=params)
        except OSError as e:
            raise ConfigError(f"cannot load model {source!r}: {e}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device=device, dtype=params)
    if config.train.activation_checkpointing:
        # recompute activations in the backward pass: less memory for long packed rows
        enable = getattr(model, "activation_checkpointing_enable", None)
        (enable or model.gradient_checkpointing_enable)()
    model.train()
    if dist.enabled:
        shard_model(model, compute_dtype(config, device))
    return model, tokenizer


def load_env(config: TrainConfig) -> Any:
    """The environment: ``env.factory`` (``module:function``) called with ``env.args``, else
    the installed environment ``env.id``."""
    cfg = config.env
    if cfg.factory is not None:
        module_name, _, attr = cfg.factory.partition(":")
        if not attr:
            raise ConfigError(f"env.factory must look like 'module:function', got {cfg.factory!r}")
        _make_importable(config, module_name)
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as e:
            raise ConfigError(f"cannot import env.factory {cfg.factory!r}: {e}") from None
        return factory(**cfg.args)
    from verifiers.loading import load_environment

    assert cfg.id is not None
    return load_environment(cfg.id, **cfg.args)


def _make_importable(config: TrainConfig, module_name: str) -> None:
    """Put the config file's directory or the working directory on ``sys.path`` when the
    factory's top-level module lives there (as ``python script.py`` would for a script)."""
    top = module_name.split(".")[0]
    for d in (config.base_dir, Path.cwd()):
        if d is None or str(d) in sys.path:
            continue
        if (d / f"{top}.py").is_file() or (d / top / "__init__.py").is_file():
            sys.path.insert(0, str(d))
            return
