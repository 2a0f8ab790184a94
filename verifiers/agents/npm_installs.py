"""Agent CLIs distributed through the npm registry (Claude Code, Codex), installed once at a
pinned version into the agent cache (:func:`verifiers.agents.installs.agent_cache_dir`) and
mounted read-only into sandboxes (no network at run time).

Both packages ship their program as a native executable in a per-platform package
(``@anthropic-ai/claude-code-linux-x64``, ``@openai/codex-linux-x64``); :func:`npm_agent` installs
the package with npm, finds that executable and returns where it is, relative to the install
directory, so a sandbox needs neither node nor the registry.

From a shell: ``python -m verifiers.agents.npm_installs claude-code|codex [VERSION]`` prints the
install directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from verifiers.agents.installs import _run, agent_cache_dir
from verifiers.errors import ConfigError, SandboxError

__all__ = [
    "CLAUDE_CODE",
    "CODEX",
    "NpmAgent",
    "NpmInstall",
    "known_agent",
    "npm_agent",
    "npm_available",
    "unpinned_version",
]


@dataclass(frozen=True)
class NpmAgent:
    """An agent CLI on npm: its package, the pinned default version, and where its native
    executable lies in the platform package, the first of ``executables`` npm installed
    (``{arch}``: x64 or arm64; ``{triple}``: the Rust target for Codex)."""

    key: str
    package: str
    version: str
    executables: tuple[str, ...]


CLAUDE_CODE = NpmAgent(
    key="claude-code",
    package="@anthropic-ai/claude-code",
    version="2.1.278",
    executables=(  # npm picks the glibc or the musl build for the host
        "node_modules/@anthropic-ai/claude-code-linux-{arch}/claude",
        "node_modules/@anthropic-ai/claude-code-linux-{arch}-musl/claude",
    ),
)
CODEX = NpmAgent(
    key="codex",
    package="@openai/codex",
    version="0.155.1",
    executables=("node_modules/@openai/codex-linux-{arch}/vendor/{triple}/bin/codex",),
)
_AGENTS = {a.key: a for a in (CLAUDE_CODE, CODEX)}


@dataclass(frozen=True)
class NpmInstall:
    """An installed agent CLI: its directory and its executable's path relative to it."""

    directory: Path
    executable: str

    @property
    def path(self) -> Path:
        return self.directory / self.executable


def npm_available() -> str | None:
    """None where ``npm`` can be run, else why not (a sentence)."""
    if shutil.which("npm") is None:
        return "npm is not installed (apt-get install npm, or install Node.js 20+)"
    return None


def _platform() -> dict[str, str]:
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if not sys.platform.startswith("linux") or arch is None:
        raise ConfigError(
            f"agent CLIs from npm run in Linux sandboxes on x86_64 or arm64; this is "
            f"{sys.platform}/{machine}"
        )
    triple = f"{'x86_64' if arch == 'x64' else 'aarch64'}-unknown-linux-musl"
    return {"arch": arch, "triple": triple}


def unpinned_version(version: str) -> str | None:
    """None for an exact release (``X.Y.Z``), else a sentence saying to pin one."""
    parts = version.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return (
            f"agent CLI version {version!r}: give an exact release such as 2.1.278 (pinned, "
            "so rollouts are reproducible; ranges and tags are refused)"
        )
    return None


def known_agent(key: str) -> NpmAgent:
    """The npm agent CLI named ``key`` (``claude-code``, ``codex``)."""
    agent = _AGENTS.get(key)
    if agent is None:
        raise ConfigError(f"no npm agent CLI {key!r}; known: {sorted(_AGENTS)}")
    return agent


def npm_agent(agent: NpmAgent, version: str | None = None, *, quiet: bool = True) -> NpmInstall:
    """The cached install of ``agent`` at ``version`` (its pinned default when None), made on
    first call with ``npm install`` (the only step that needs the registry)."""
    version = version or agent.version
    problem = unpinned_version(version)
    if problem is not None:
        raise ConfigError(problem)
    candidates = [e.format(**_platform()) for e in agent.executables]
    target = agent_cache_dir() / f"{agent.key}-{version}"
    found = _found(target, candidates)
    if found is not None:
        return found
    missing = npm_available()
    if missing is not None:
        raise SandboxError(f"installing {agent.package}@{version}: {missing}")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o755)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others then reuse it
        found = _found(target, candidates)
        if found is not None:
            return found
        staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            staging.mkdir(mode=0o755)
            cmd = ["npm", "install", "--prefix", str(staging), "--no-audit", "--no-fund"]
            cmd += ["--omit=dev", "--ignore-scripts", "--no-save", "--loglevel=error"]
            cmd.append(f"{agent.package}@{version}")
            _run(cmd, f"installing {agent.package}@{version} with npm", show=not quiet)
            binary = next((staging / c for c in candidates if (staging / c).is_file()), None)
            if binary is None:
                raise SandboxError(
                    f"installing {agent.package}@{version}: npm did not install the native "
                    f"program ({' or '.join(candidates)}, in its platform package); nothing "
                    "else can run it in a sandbox"
                )
            binary.chmod(0o755)
            for root, dirs, _ in os.walk(staging):  # sandboxes run as other uids
                for d in dirs:
                    os.chmod(os.path.join(root, d), 0o755)
            (staging / ".complete").write_text(f"{agent.package}@{version}\n")
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    found = _found(target, candidates)
    if found is None:  # another process removed it in between
        raise SandboxError(f"the install of {agent.package}@{version} in {target} vanished")
    return found


def _found(target: Path, candidates: list[str]) -> NpmInstall | None:
    """The complete install in ``target`` with the first candidate executable present."""
    if not (target / ".complete").exists():
        return None
    for candidate in candidates:
        if (target / candidate).is_file():
            return NpmInstall(target, candidate)
    return None


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in _AGENTS:
        print(f"usage: python -m verifiers.agents.npm_installs {'|'.join(_AGENTS)} [VERSION]")
        raise SystemExit(2)
    with contextlib.suppress(KeyboardInterrupt):
        print(npm_agent(_AGENTS[args[0]], args[1] if len(args) > 1 else None, quiet=False).path)


if __name__ == "__main__":
    main()
