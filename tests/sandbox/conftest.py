"""Helpers for the sandbox tests: the CLI, and finding processes by a marker."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from verifiers.sandbox.bwrap import bwrap_available

VF = str(Path(sys.executable).with_name("vf"))

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")


def vf_exec(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """``vf sandbox exec ARGS`` with the output captured."""
    return subprocess.run(
        [VF, "sandbox", "exec", *args],
        capture_output=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def marker() -> str:
    """A number unique to one test, usable as a `sleep` argument and found in /proc."""
    return f"4242.{uuid.uuid4().int % 10**12:012d}"


def pids_with(text: str) -> list[int]:
    """Processes (host-wide) whose command line contains ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def wait_for_pids(text: str, count: int, deadline_s: float = 10.0) -> list[int]:
    """Poll (bounded) until at least ``count`` processes carry ``text``: a detached or spawned
    process execs asynchronously after the call that started it returned."""
    import time

    end = time.monotonic() + deadline_s
    while len(found := pids_with(text)) < count and time.monotonic() < end:
        time.sleep(0.01)
    return found
