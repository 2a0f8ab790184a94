"""Installing an environment from the hub into this interpreter, with pip (or uv when pip is
absent), from the project's own index only, so that no other index can shadow it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from verifiers.errors import HubClientError

__all__ = ["missing_requirements", "pip_install"]


def missing_requirements(requires_dist: list[str]) -> list[str]:
    """The requirements (with no extra) that the current interpreter does not satisfy."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import InvalidRequirement, Requirement

    missing = []
    for spec in requires_dist:
        try:
            req = Requirement(spec)
        except InvalidRequirement:
            missing.append(spec)
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            have = version(req.name)
        except PackageNotFoundError:
            missing.append(spec)
            continue
        if req.specifier and not req.specifier.contains(have, prereleases=True):
            missing.append(spec)
    return missing


# Settings that add package sources; none may apply when installing from the project index.
_PIP_SOURCES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX")
_UV_SOURCES = (
    "UV_INDEX",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
)
# Connection settings worth keeping from the pip configuration that is switched off.
_PIP_NETWORK = ("cert", "client-cert", "proxy", "trusted-host", "timeout", "retries")


def _pip_env_for_one_index(env: dict[str, str], index_url: str) -> dict[str, str]:
    """An environment in which pip sees no package source but ``index_url``: every pip
    configuration file is switched off (PIP_CONFIG_FILE=/dev/null), keeping only its
    connection settings (certificates, proxy, trusted hosts, timeouts)."""
    out = {k: v for k, v in env.items() if k not in _PIP_SOURCES}
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    for line in listed.splitlines():
        section_key, _, value = line.partition("=")
        section, _, key = section_key.partition(".")
        if section in ("global", "install") and key in _PIP_NETWORK:
            var = "PIP_" + key.upper().replace("-", "_")
            out.setdefault(var, value.strip().strip("'\""))
    out.update({"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": index_url})
    return out


def pip_install(args: list[str], *, index_url: str | None) -> None:
    """Install into this interpreter with pip (or uv when pip is absent).

    With ``index_url`` the hub's index is the only one: extra indexes and find-links, from
    the environment or any pip/uv configuration, are switched off so that nothing can shadow
    the environment package.
    """
    env = dict(os.environ)
    if importlib.util.find_spec("pip") is not None:
        cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *args]
        if index_url:
            env = _pip_env_for_one_index(env, index_url)
    else:
        import shutil

        uv = shutil.which("uv")
        if uv is None:
            raise HubClientError(
                "neither pip nor uv is available to install packages into this interpreter",
                hint=f"install pip: {sys.executable} -m ensurepip",
            )
        cmd = [uv, "pip", "install", "--python", sys.executable, *args]
        if index_url:
            env = {k: v for k, v in env.items() if k not in _UV_SOURCES}
            env.update({"UV_DEFAULT_INDEX": index_url, "UV_NO_CONFIG": "1"})
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise HubClientError(f"installation failed:\n{tail}")
