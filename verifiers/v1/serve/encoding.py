"""msgpack framing of the v1 serve wire: maps with string keys, binary data as msgpack bin."""

from __future__ import annotations

import dataclasses
import sys
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from typing import Any
from uuid import UUID

import msgpack
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

__all__ = ["TENSOR_TAG", "encode_default", "msgpack_encoder", "pack", "unpack"]

TENSOR_TAG = "__torch_tensor__"
"""The key marking an encoded array (a numpy array or torch tensor) in a msgpack payload
(:func:`msgpack_encoder`), so a reader tells it from any other map."""


def encode_default(obj: Any) -> Any:
    """What msgpack cannot encode natively, as plain data (called only for such values)."""
    if isinstance(obj, (Path, UUID)):
        return str(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", serialize_as_any=True)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, numpy.generic):
        return obj.item()
    if numpy is not None and isinstance(obj, numpy.ndarray):
        return obj.tolist()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return to_jsonable_python(obj)


def pack(payload: Any) -> bytes:
    data: bytes = msgpack.packb(payload, default=encode_default, use_bin_type=True)
    return data


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def _tagged_array(array: Any) -> dict[str, Any]:
    return {
        TENSOR_TAG: True,
        "dtype": str(array.dtype),
        "shape": list(array.shape),
        "data": array.tobytes(),
    }


def msgpack_encoder(obj: Any) -> Any:
    """0.4.0's ``default`` hook for ``msgpack.packb`` (called only for what msgpack cannot
    encode itself): paths and UUIDs as strings, sets as lists, enums as their values, dates
    in ISO form, numpy scalars as Python numbers, numpy arrays and torch tensors (torch is
    never imported for this) as ``{TENSOR_TAG: True, "dtype", "shape", "data": raw bytes}``,
    pydantic models by ``model_dump()``, dataclasses as dicts, anything else by pydantic's
    JSON conversion (which raises for what it cannot convert). Tuples, unlike in
    :func:`encode_default`, are msgpack's own (arrays)."""
    if isinstance(obj, (Path, UUID)):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, (numpy.integer, numpy.floating)):
        return obj.item()
    if numpy is not None and isinstance(obj, numpy.ndarray):
        return _tagged_array(obj)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _tagged_array(obj.detach().cpu().contiguous().numpy())
    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return to_jsonable_python(obj)
