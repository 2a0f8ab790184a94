"""Versions and git commits of verifiers and of an environment package (0.3.x's
``vf-eval`` records them in a run's metadata). Every lookup answers ``None`` rather than
raising when the information is not there."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import subprocess
from pathlib import Path

__all__ = [
    "get_commit_for_path",
    "get_env_commit",
    "get_env_version",
    "get_package_source_path",
    "get_vf_commit",
    "get_vf_version",
]

logger = logging.getLogger(__name__)


def get_commit_for_path(path: Path) -> str | None:
    """``HEAD`` of the git repository holding ``path`` (a file or folder), or ``None``."""
    folder = path if path.is_dir() else path.parent
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def get_package_source_path(package_name: str) -> Path | None:
    """The folder of an importable package's ``__init__`` (or module), or ``None``."""
    try:
        module = importlib.import_module(package_name)
    except Exception:  # an environment package that fails to import has no source here
        return None
    location = getattr(module, "__file__", None)
    return Path(location).parent if location else None


def get_vf_version() -> str:
    """This verifiers' version."""
    from verifiers._version import __version__

    return __version__


def get_vf_commit() -> str | None:
    """The git commit verifiers is installed from (an editable checkout), or ``None``."""
    source = get_package_source_path("verifiers")
    return None if source is None else get_commit_for_path(source)


def _module_name(env_id: str) -> str:
    return env_id.replace("-", "_").split("/")[-1]


def get_env_version(env_id: str) -> str | None:
    """The installed distribution version of environment ``env_id`` (``owner/name`` or
    ``name``; dashes as underscores), or ``None``."""
    name = _module_name(env_id)
    if not name:
        return None
    try:
        return importlib.metadata.version(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def get_env_commit(env_id: str) -> str | None:
    """The git commit of environment ``env_id``'s source, or ``None``."""
    name = _module_name(env_id)
    source = get_package_source_path(name) if name else None
    return None if source is None else get_commit_for_path(source)


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
