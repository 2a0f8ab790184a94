"""The native (C) build of the sandbox agent (``_agent.c``).

A local sandbox's agent starts on every cold start; the C build is ready in well under a
millisecond where the Python agent needs an interpreter start-up (about 6-9 ms). It is compiled
once per machine and user with the system C compiler (``$CC``, else ``cc``, ``gcc`` or
``clang``) into the user's cache (``$VF_CACHE_DIR``, else ``$XDG_CACHE_HOME/verifiers``, else
``~/.cache/verifiers``), named by a hash of its source and the machine, so an upgrade rebuilds
it. Where it cannot be built (no compiler, read-only cache) the Python agent is used, with one
log line saying why.

``VF_SANDBOX_AGENT=python`` (or a backend's ``agent="python"``) always uses the Python agent.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from verifiers.errors import ConfigError, SandboxError

__all__ = ["AGENT_KINDS", "check_agent_kind", "effective_kind", "native_agent", "resolved"]

AGENT_KINDS = ("auto", "native", "python")
SOURCE = Path(__file__).with_name("_agent.c")
_log = logging.getLogger("verifiers.sandbox")
_lock = threading.Lock()
_state: tuple[str | None, str] | None = None  # (path, why it could not be built)


def check_agent_kind(kind: str) -> str:
    """``kind`` validated (``auto`` is resolved later, at start)."""
    if kind not in AGENT_KINDS:
        raise ConfigError(
            f"unknown sandbox agent {kind!r}; choose one of: {', '.join(AGENT_KINDS)}"
        )
    return kind


def effective_kind(kind: str) -> str:
    """The agent a sandbox asked for ``kind`` uses: ``auto`` defers to ``$VF_SANDBOX_AGENT``
    (native where it can be built, else Python)."""
    if kind == "auto":
        kind = os.environ.get("VF_SANDBOX_AGENT", "auto") or "auto"
        if kind not in AGENT_KINDS:
            raise ConfigError(f"VF_SANDBOX_AGENT={kind!r} is not one of: {', '.join(AGENT_KINDS)}")
    return kind


def resolved() -> bool:
    """Whether :func:`native_agent` answers without building (or trying to)."""
    return _state is not None and (_state[0] is None or os.access(_state[0], os.X_OK))


def native_agent(required: bool = False) -> str | None:
    """The path of the compiled agent, building it on first use (blocking: at most once per
    machine, a fraction of a second; then once per process, a file check). ``None`` when it
    cannot be built, or a :class:`SandboxError` saying why when ``required``."""
    global _state
    with _lock:
        state = _state
        if state is None or not resolved():  # never tried, or the cached build was deleted
            source = SOURCE.read_bytes()
            key = hashlib.sha256(source + platform.machine().encode()).hexdigest()[:16]
            try:
                state = (_build(source, key), "")
            except SandboxError as e:
                state = (None, str(e))
                _log.info("using the Python sandbox agent: %s", e)
            _state = state
        path, why_not = state
    if path is None and required:
        raise SandboxError(f"the native sandbox agent is not available: {why_not}")
    return path


def _cache_dir() -> Path:
    explicit = os.environ.get("VF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "verifiers"


def _build(source: bytes, key: str) -> str:
    target = _cache_dir() / f"sandbox-agent-{key}"
    if os.access(target, os.X_OK):
        return str(target)
    compiler = os.environ.get("CC") or next(
        (c for c in ("cc", "gcc", "clang") if shutil.which(c)), None
    )
    if compiler is None:
        raise SandboxError("no C compiler (cc, gcc or clang) to build it with")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
        os.close(fd)
    except OSError as e:
        raise SandboxError(f"cannot write its cache at {target.parent}: {e}") from e
    try:
        r = subprocess.run(
            [compiler, "-O2", "-o", tmp, "-x", "c", "-"],
            input=source,
            capture_output=True,
            timeout=120,
        )
        if r.returncode != 0:
            tail = r.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise SandboxError(f"{compiler} failed: {' / '.join(tail) or r.returncode}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)  # atomic: concurrent builders each publish a whole file
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxError(f"cannot build it with {compiler}: {e}") from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(target)
