"""The grader's side of the grading worker: the untrusted program's modules as proxies.

Trusted test code runs here, in the grader's process; every name it takes from the program is
a :class:`Remote` proxy whose calls and attribute reads go to the worker in the sandbox. A reply
is decoded into fresh plain objects (``int``, ``float``, ``str``, ``bytes``, ``list``, ``tuple``,
``dict``, ``set``, ``frozenset``, ``complex``, ``None``, ``bool``): whatever the program's
objects do to comparison, hashing, ``str`` or ``len`` stays in the sandbox. Anything else comes
back as an opaque proxy that can be called or have attributes read, and refuses to be compared,
hashed, tested for truth or measured: a test that does so fails.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import math
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from verifiers.sandbox import SandboxProcess

__all__ = ["GradingClient", "ProgramAborted", "Remote", "decode", "encode"]

MAX_FRAME = 1 << 20


class ProgramAborted(BaseException):
    """The program's process ended (exit, crash, kill, timeout) or broke the protocol before
    the test finished. A ``BaseException``, so that a test's ``except Exception`` cannot
    swallow it and pass."""


class NotPlainValue(TypeError):
    """The program answered with an object that is not plain data where a value was needed."""


class Remote:
    """An object living in the sandbox: callable, with readable attributes, nothing else."""

    __slots__ = ("_vf_client", "_vf_handle", "_vf_type")

    def __init__(self, client: GradingClient, handle: int, type_name: str) -> None:
        object.__setattr__(self, "_vf_client", client)
        object.__setattr__(self, "_vf_handle", handle)
        object.__setattr__(self, "_vf_type", type_name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._vf_client.request(
            {
                "op": "call",
                "h": self._vf_handle,
                "args": [encode(a) for a in args],
                "kwargs": {str(k): encode(v) for k, v in kwargs.items()},
            }
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._vf_client.request({"op": "getattr", "h": self._vf_handle, "name": name})

    def __setattr__(self, name: str, value: Any) -> None:
        raise NotPlainValue("objects of the program cannot be changed by the grader")

    def __iter__(self) -> Any:
        value = self._vf_client.request({"op": "iter", "h": self._vf_handle})
        return iter(value if isinstance(value, list) else [])

    def _refuse(self, *_: Any) -> Any:
        raise NotPlainValue(
            f"the program answered with a {self._vf_type!r} object, not a plain value "
            "(numbers, strings, lists, tuples, dicts, sets, bytes, None)"
        )

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __bool__ = __len__ = __hash__ = __contains__ = __getitem__ = _refuse  # type: ignore[assignment]
    __add__ = __sub__ = __mul__ = __truediv__ = __mod__ = _refuse
    __radd__ = __rsub__ = __rmul__ = __rtruediv__ = __rmod__ = _refuse
    __index__ = __int__ = __float__ = __abs__ = __neg__ = _refuse

    def __repr__(self) -> str:
        return f"<{self._vf_type} object of the program>"


def encode(value: Any) -> Any:
    """A trusted value (the test's argument) as tagged JSON for the worker."""
    if isinstance(value, Remote):
        return {"h": value._vf_handle}
    t = type(value)
    if value is None or t in (bool, int, str):
        return value
    if t is float:
        return value if math.isfinite(value) else {"x": repr(value)}
    if t in (bytes, bytearray):
        return {"b": bytes(value).hex()}
    if t is complex:
        return {"c": [encode(value.real), encode(value.imag)]}
    name = getattr(value, "__name__", None)
    if isinstance(name, str) and getattr(builtins, name, None) is value and callable(value):
        return {"n": name}  # a built-in function or type (``len``, ``str``): by name
    if isinstance(value, list):
        return {"l": [encode(v) for v in value]}
    if isinstance(value, tuple):
        return {"t": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"d": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, frozenset):
        return {"f": [encode(v) for v in value]}
    if isinstance(value, set):
        return {"s": [encode(v) for v in value]}
    raise TypeError(
        f"a test passed a {t.__name__} to the program: only plain values (and the program's "
        "own objects) can cross into the sandbox"
    )


_TAGS = frozenset({"x", "b", "c", "l", "t", "d", "s", "f", "h"})


def decode(value: Any, client: GradingClient | None = None, depth: int = 0) -> Any:
    """The worker's tagged JSON as fresh plain objects (``Remote`` for handles)."""
    if depth > 200:
        raise ProgramAborted("the program's answer is nested too deeply")
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is not dict or len(value) not in (1, 2):
        raise ProgramAborted("the grading worker sent a malformed value")
    tag = next(iter(value))
    if tag not in _TAGS:
        raise ProgramAborted("the grading worker sent a malformed value")
    v = value[tag]
    d = depth + 1
    if tag == "x":
        if v not in ("nan", "inf", "-inf"):
            raise ProgramAborted("the grading worker sent a malformed float")
        return float(v)
    if tag == "b":
        return bytes.fromhex(str(v))
    if tag == "c":
        return complex(float(decode(v[0], client, d)), float(decode(v[1], client, d)))
    if tag == "h":
        if client is None or type(v) is not int:
            raise ProgramAborted("the grading worker sent a malformed handle")
        return Remote(client, v, str(value.get("type", "?"))[:100])
    if type(v) is not list:
        raise ProgramAborted("the grading worker sent a malformed value")
    if tag == "l":
        return [decode(x, client, d) for x in v]
    if tag == "t":
        return tuple(decode(x, client, d) for x in v)
    if tag == "d":
        return {_hashable(decode(k, client, d)): decode(x, client, d) for k, x in v}
    if tag == "s":
        return {_hashable(decode(x, client, d)) for x in v}
    return frozenset(_hashable(decode(x, client, d)) for x in v)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError as e:
        raise ProgramAborted("the program's answer has an unhashable key") from e
    return value


def raise_remote(info: Any) -> None:
    """Raise, in the grader, what the program raised: the nearest built-in exception class
    (so that a test's ``except ValueError`` works), never a class the program defined."""
    if not isinstance(info, dict):
        raise ProgramAborted("the grading worker sent a malformed error")
    raw = info.get("mro")
    mro: list[Any] = raw if isinstance(raw, list) else []
    message = f"the program raised {str(info.get('type'))[:100]}: {str(info.get('msg'))[:500]}"
    for name in mro:
        cls = getattr(builtins, str(name), None) if isinstance(name, str) else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            if issubclass(cls, Exception) and cls is not Exception:
                raise cls(message)
            if cls is Exception:
                raise RuntimeError(message)
            raise ProgramAborted(f"the program exited before the test ran to its end ({message})")
    raise RuntimeError(message)


class GradingClient:
    """Synchronous calls (from the thread running the test code) to a worker process served
    by the event loop ``loop``."""

    def __init__(self, process: SandboxProcess, loop: asyncio.AbstractEventLoop) -> None:
        self.process = process
        self.loop = loop
        self.dead: str | None = None
        self._pending: Future[Any] | None = None

    def request(self, req: dict[str, Any]) -> Any:
        if self.dead is not None:
            raise ProgramAborted(self.dead)
        fut = asyncio.run_coroutine_threadsafe(self._roundtrip(req), self.loop)
        self._pending = fut
        try:
            reply = fut.result(timeout=3600)
        except (FutureTimeout, FutureCancelled, asyncio.CancelledError) as e:
            self.dead = "the test was stopped"
            raise ProgramAborted(self.dead) from e
        finally:
            self._pending = None
        if not isinstance(reply, dict):
            raise ProgramAborted("the grading worker sent a malformed reply")
        if "raise" in reply:
            raise_remote(reply["raise"])
        if "ok" not in reply:
            raise ProgramAborted("the grading worker sent a malformed reply")
        return decode(reply["ok"], self)

    def abort(self, why: str) -> None:
        """Make the running and any later request fail (called from the event loop)."""
        self.dead = why
        fut = self._pending
        if fut is not None:
            fut.cancel()

    async def _roundtrip(self, req: dict[str, Any]) -> Any:
        try:
            await self.process.write(json.dumps(req).encode() + b"\n")
            header = await self.process.readline()
            if not header.endswith(b"\n") or not header[:-1].isdigit():
                raise ProgramAborted("the program exited before the test ran to its end")
            size = int(header)
            if size > MAX_FRAME:
                raise ProgramAborted(f"the program's answer is over {MAX_FRAME} bytes")
            data = await self.process.readexactly(size)
            if len(data) != size:
                raise ProgramAborted("the program exited before the test ran to its end")
            return json.loads(data)
        except ProgramAborted as e:
            self.dead = str(e)
            raise
        except (OSError, ValueError, RecursionError) as e:
            self.dead = f"the program broke the grading protocol ({type(e).__name__})"
            raise ProgramAborted(self.dead) from e
