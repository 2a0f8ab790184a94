"""Shared test setup."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLASSIC_ENVS = ROOT / "tests" / "fixtures" / "classic_envs"

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


@pytest.fixture
def classic_envs_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the classic-API fixture environments on sys.path (and PYTHONPATH for children)."""
    monkeypatch.syspath_prepend(str(CLASSIC_ENVS))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(CLASSIC_ENVS), os.environ.get("PYTHONPATH", "")])
    )
    return CLASSIC_ENVS


@pytest.fixture
def vf_bin() -> Path:
    """The directory holding the vf and vf-eval scripts of this interpreter."""
    return Path(sys.executable).parent
