"""0.3.x's normalisation of an environment's section in an eval config file (TOML)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["config_table", "normalize_env_config_sections"]


def config_table(value: object, field: str) -> dict[str, object]:
    """``value`` as a dict (``None`` as an empty one); ``ValueError`` naming ``field`` when it
    is not a table."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{field} must be a table.")
    return {str(k): v for k, v in value.items()}


def _disjoint(first: Mapping[str, object], second: Mapping[str, object], message: str) -> None:
    shared = set(first) & set(second)
    if shared:
        raise ValueError(message.format(shared))


def normalize_env_config_sections(raw: Mapping[str, object]) -> dict[str, object]:
    """Merge ``args`` into ``env_args`` and move top-level ``taskset``/``harness`` tables into
    ``env_args["config"]``; a key given twice is a ``ValueError``. Other keys are kept."""
    config = dict(raw)
    env_args = config_table(config.pop("env_args", {}), "env_args")
    args = config_table(config.pop("args", {}), "args")
    _disjoint(env_args, args, "Environment arg key(s) {} appear in both args and env_args.")
    env_args.update(args)
    sections = {
        key: config_table(value, key)
        for key in ("taskset", "harness")
        if (value := config.pop(key, None)) is not None
    }
    if sections:
        existing = config_table(env_args.get("config", {}), "env_args.config")
        _disjoint(
            existing,
            sections,
            "Environment config section(s) {} appear in both config and top-level sections.",
        )
        env_args["config"] = {**existing, **sections}
    if env_args:
        config["env_args"] = env_args
    return config


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
