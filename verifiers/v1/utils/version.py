"""Where the running verifiers came from: its git commit, when that can be told."""

from __future__ import annotations

import json
import subprocess
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

__all__ = ["verifiers_commit"]


@cache
def verifiers_commit() -> str | None:
    """The git commit of the verifiers in use: the one a VCS install recorded
    (``direct_url.json``'s ``vcs_info.commit_id``), else ``HEAD`` of the git checkout the
    package sits at the top of (an editable or source install); None otherwise (a wheel from
    an index, or a package inside some other project's repository)."""
    try:
        text = distribution("verifiers").read_text("direct_url.json")
    except (PackageNotFoundError, ValueError):
        text = None
    if text:
        try:
            commit = json.loads(text).get("vcs_info", {}).get("commit_id")
        except (ValueError, AttributeError):
            commit = None
        if isinstance(commit, str) and commit:
            return commit
    package = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(
            ["git", "-C", str(package), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return None
    top, commit = lines
    return commit if Path(top).resolve() == package.parent else None
