"""Run the real packaging clients (pip, uv, twine) against a hub, isolated from user config."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "UV_", "TWINE_")) and k not in ("VIRTUAL_ENV",)
    }
    env.update(
        {
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
            "PYTHONWARNINGS": "ignore",
            "UV_NO_CONFIG": "1",
            "UV_NO_CACHE": "1",
            "UV_OFFLINE": "0",
        }
    )
    env.update(extra or {})
    return env


def with_auth(url: str, token: str | None) -> str:
    if not token:
        return url
    scheme, rest = url.split("://", 1)
    return f"{scheme}://__token__:{token}@{rest}"


def pip(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *args, "--no-cache-dir"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=cwd,
        timeout=180,
    )


def pip_install(
    index: str, target: Path, *reqs: str, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    return pip("install", "--target", str(target), "--index-url", with_auth(index, token), *reqs)


def uv_pip_install(index: str, target: Path, *reqs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(BIN / "uv"),
            "pip",
            "install",
            "--target",
            str(target),
            "--index-url",
            index,
            "--python",
            sys.executable,
            *reqs,
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=180,
    )


def twine_upload(
    url: str, token: str, *files: Path, verbose: bool = False
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(BIN / "twine"),
            "upload",
            "--non-interactive",
            "--disable-progress-bar",
            "--repository-url",
            url,
            "-u",
            "__token__",
            "-p",
            token,
            *(["--verbose"] if verbose else []),
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        env=_env({"TWINE_NON_INTERACTIVE": "1"}),
        timeout=180,
    )


def uv_publish(url: str, token: str, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "uv"), "publish", "--publish-url", url, "--token", token, *map(str, files)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=180,
    )
