"""Small helpers the v1 modules share: merging config blocks, resolving generic arguments."""

from __future__ import annotations

from typing import Any, TypeVar, get_args, get_origin

from pydantic import BaseModel, ValidationError

from verifiers.v1.types import SamplingConfig

__all__ = ["T", "concrete_type", "deep_merge", "merge_defaults", "prefix_validation_error"]

T = TypeVar("T")

_IDENTITY = ("id", "type")


def prefix_validation_error(error: ValidationError, prefix: tuple[Any, ...]) -> ValidationError:
    """``error`` with ``prefix`` put before every error's location (a block validated inside
    a ``mode="before"`` validator reports at the validator's location; the prefix restores
    the path the user wrote)."""
    details: list[Any] = [
        {**e, "loc": prefix + tuple(e["loc"])} for e in error.errors(include_url=False)
    ]
    return ValidationError.from_exception_data(error.title, details)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` laid on ``base``: nested dicts merge key by key, anything else replaces.
    A nested block whose ``id`` / ``type`` differs on the two sides is taken from
    ``override`` whole (one plugin's fields never leak into another's)."""
    merged = dict(base)
    for key, value in override.items():
        held = merged.get(key)
        if isinstance(value, dict) and isinstance(held, dict):
            switched = any(k in value and k in held and value[k] != held[k] for k in _IDENTITY)
            merged[key] = value if switched else deep_merge(held, value)
        else:
            merged[key] = value
    return merged


def merge_defaults(defaults: BaseModel, raw: dict[str, Any] | None) -> dict[str, Any]:
    """``raw`` (a config block as given) completed with the values ``defaults`` sets: only
    the fields set on ``defaults`` (not its plain defaults), nested blocks key by key, a value
    in ``raw`` always kept. A block for which ``raw`` names another ``id`` / ``type`` (at any
    depth) is ``raw``'s alone. E.g. with ``defaults`` set as ``{type = "grpo", kl = 0.1}``:
    ``{}`` gives ``{type = "grpo", kl = 0.1}``, ``{kl = 0.5}`` gives
    ``{type = "grpo", kl = 0.5}``, ``{type = "max_rl"}`` stays as it is."""
    block = dict(raw or {})
    if isinstance(defaults, SamplingConfig):
        block = SamplingConfig.model_validate(block).model_dump(exclude_unset=True)
    fields = type(defaults).model_fields
    identity = {k: getattr(defaults, k) for k in _IDENTITY if k in fields}
    if any(k in block and block[k] != v for k, v in identity.items()):
        return block
    for name, value in defaults:
        if isinstance(value, BaseModel) and isinstance(block.get(name), dict):
            block[name] = merge_defaults(value, block[name])
    return deep_merge({**identity, **_set_fields(defaults)}, block)


def _set_fields(config: BaseModel) -> dict[str, Any]:
    """The fields set on ``config`` (extra fields included) as a nested dict. A nested
    block not set on its parent counts when its own fields were changed, unless it equals
    the field's default; a nested block's dump names its ``id`` / ``type``, so a merge can
    tell a switch."""
    out: dict[str, Any] = {}
    for name, field in type(config).model_fields.items():
        value = getattr(config, name)
        if isinstance(value, BaseModel):
            nested = _set_fields(value)
            if name not in config.model_fields_set:
                default = field.get_default(
                    call_default_factory=True, validated_data=config.__dict__
                )
                if isinstance(default, BaseModel) and nested == _set_fields(default):
                    continue
            if nested or name in config.model_fields_set:
                keys = [k for k in _IDENTITY if k in type(value).model_fields]
                out[name] = {**{k: getattr(value, k) for k in keys}, **nested}
        elif name in config.model_fields_set:
            out[name] = config.model_dump(include={name})[name]
    out.update(config.model_dump(include=set(config.model_extra or {})))
    return out


def concrete_type(cls: type, bound: type[T], *, origin: type | None = None) -> type[T] | None:
    """The first generic argument subclassing ``bound`` among the bases of ``cls``'s MRO,
    most derived first (only bases parametrising ``origin``, when given); None if none."""
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if origin is not None and get_origin(base) is not origin:
                continue
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, bound):
                    return arg
    return None
