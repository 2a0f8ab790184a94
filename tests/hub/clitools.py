"""Helpers to drive the ``vf`` CLI: in process (CliRunner) or in another interpreter."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app

ROOT = Path(__file__).resolve().parents[2]


def vf(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def fresh_venv(dest: Path) -> Path:
    """A new virtual environment that sees this checkout's installed dependencies through a
    .pth file (no network), but installs into its own site-packages. Returns its python."""
    subprocess.run(
        [
            str(Path(sys.executable).parent / "uv"),
            "venv",
            "-q",
            "--python",
            sys.executable,
            str(dest),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "UV_NO_CONFIG": "1"},
    )
    py = dest / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    parent = [p for p in site.getsitepackages() if p.endswith("site-packages")]
    Path(purelib, "_parent_site.pth").write_text("\n".join([*parent, str(ROOT)]) + "\n")
    return py


def vf_in(
    python: Path, args: list[str], env: dict[str, str], entry: str = "main"
) -> subprocess.CompletedProcess[str]:
    """Run the CLI under another interpreter."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    return subprocess.run(
        [
            str(python),
            "-c",
            f"import sys; from cli.main import {entry}; sys.argv[0] = 'vf'; {entry}()",
            *args,
        ],
        capture_output=True,
        text=True,
        env={**base, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **env},
        timeout=300,
    )
