"""The ``subprocess`` backend: commands run as plain host processes. NO isolation.

Only used when asked for by name (``create_sandbox(backend="subprocess")``), with a warning. It
exists for machines without bubblewrap or a container engine, and as the baseline the
benchmark compares against. The rlimits still apply; the work dir is a host temporary directory
removed at stop (directories of a process that was SIGKILLed are removed by the next one).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from verifiers.sandbox._local import AgentSandbox
from verifiers.sandbox.base import SandboxLimits, base_env

__all__ = ["NOT_ISOLATED", "SubprocessSandbox", "warn_not_isolated"]

logger = logging.getLogger("verifiers.sandbox")

NOT_ISOLATED = (
    "the subprocess runtime does not isolate anything: model-written commands run on this "
    "host as {user}, can read and write its files and reach its network and local services"
)
_warned: set[str] = set()


def warn_not_isolated(who: str) -> bool:
    """Log, once per process for ``who``, the one-line warning that ``subprocess`` isolates
    nothing (a WARNING of the ``verifiers.sandbox`` logger: shown with no logging set up).
    True when it was logged now."""
    if who in _warned:
        return False
    _warned.add(who)
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid {os.getuid()}"
    logger.warning("%s: %s", who, NOT_ISOLATED.format(user=user))
    return True


_ROOT = Path(tempfile.gettempdir()) / f"vf-sandboxes-{os.getuid()}"
_swept = False
_private_root: Path | None = None


def _is_private(path: Path) -> bool:
    """``path`` is a real directory (not a link), ours, that no one else can enter or write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077 == 0


def _root() -> Path:
    """The shared parent of work dirs, when it is private to this user; else (someone else
    made it first, or made it a link, or opened it up) a private one for this process only,
    so that no other local user can move or replace a work dir under us."""
    global _private_root
    with contextlib.suppress(FileExistsError):
        _ROOT.mkdir(mode=0o700)
    if _is_private(_ROOT):
        return _ROOT
    if _private_root is None or not _is_private(_private_root):
        warnings.warn(
            f"{_ROOT} is not a private directory of this user: using a fresh one instead",
            RuntimeWarning,
            stacklevel=2,
        )
        _private_root = Path(tempfile.mkdtemp(prefix=f"vf-sandboxes-{os.getuid()}-"))
    return _private_root


def _sweep() -> None:
    """Remove work dirs left by processes that died without cleaning up."""
    global _swept
    if _swept:
        return
    _swept = True
    if not _is_private(_ROOT):
        return
    with contextlib.suppress(OSError):
        for child in _ROOT.iterdir():
            try:
                owner = int(child.name.split("-")[0])
                os.kill(owner, 0)
            except ProcessLookupError:
                shutil.rmtree(child, ignore_errors=True)
            except (ValueError, PermissionError):
                continue


class SubprocessSandbox(AgentSandbox):
    """Runs commands as ordinary host processes in a temporary work dir (not isolated)."""

    backend = "subprocess"
    isolated = False
    _graceful_stop = True

    def __init__(
        self, limits: SandboxLimits | None = None, *, network: bool = False, agent: str = "auto"
    ) -> None:
        warnings.warn(
            "the subprocess sandbox backend does not isolate anything: the program can read and "
            "write your files and reach the network. Use it only for trusted code.",
            RuntimeWarning,
            stacklevel=4,  # the caller of create_sandbox()
        )
        super().__init__(limits, network=network, agent=agent)
        self._dir: Path | None = None

    def _workdir(self) -> str:
        if self._dir is None:
            _sweep()
            # mkdtemp: a fresh 0700 directory, in a parent only this user can write
            self._dir = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=_root()))
        return str(self._dir)

    def _env(self, env: Any) -> dict[str, str]:
        return base_env(env, home=self._workdir()) | {"TMPDIR": self._workdir()}

    def _launch(self, agent_fd: int, config: dict[str, Any]) -> list[str]:
        return self._agent_command(sys.executable, agent_fd, {**config, "subreaper": True})

    def _cleanup_sync(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
