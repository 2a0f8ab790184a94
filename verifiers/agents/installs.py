"""Third-party agent programs installed once into a cached environment that sandboxes mount
read-only (no network at run time).

``mini_swe_agent_env()`` returns the directory of a virtual environment holding
``mini-swe-agent`` at a pinned version, built with the system ``python3`` (the interpreter
sandboxes have under ``/usr``) on first use and reused afterwards. Where it lives:
``$VF_AGENT_CACHE``, else ``~/.cache/verifiers/agents``, or, when running as root (sandboxes
then run as other uids, which cannot enter ``/root``), ``/var/tmp/verifiers-agents-0``.

From a shell: ``python -m verifiers.agents.installs mini-swe-agent`` prints the path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from verifiers.errors import ConfigError, SandboxError

__all__ = [
    "MINI_SWE_AGENT_PINS",
    "MINI_SWE_AGENT_VERSION",
    "agent_cache_dir",
    "mini_swe_agent_command",
    "mini_swe_agent_env",
]

MINI_SWE_AGENT_VERSION = "2.4.6"
#: what is installed, exactly (litellm moves fast; the agent talks to our server through it)
MINI_SWE_AGENT_PINS = ("litellm==1.110.2",)
#: where the environment appears inside a sandbox
AGENT_MOUNT = "/opt/vf-agent"
SYSTEM_PYTHON = "/usr/bin/python3"


def agent_cache_dir() -> Path:
    """Where agent environments are cached (see the module docstring)."""
    configured = os.environ.get("VF_AGENT_CACHE")
    if configured:
        return Path(configured).expanduser()
    if os.geteuid() == 0:
        return Path("/var/tmp") / "verifiers-agents-0"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "verifiers" / "agents"


def mini_swe_agent_env(
    version: str = MINI_SWE_AGENT_VERSION, *, python: str = SYSTEM_PYTHON, quiet: bool = True
) -> Path:
    """The cached environment with ``mini-swe-agent==version`` (installed on first call; the
    only step that needs the package index)."""
    if not os.access(python, os.X_OK):
        raise ConfigError(
            f"{python} is missing: agent environments are built with the system python3 that "
            "sandboxes run (apt-get install python3 python3-venv)"
        )
    target = agent_cache_dir() / f"mini-swe-agent-{version}"
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o755)
    lock_path = target.parent / f".{target.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others then reuse it
        if (target / ".complete").exists():
            return target
        staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _run(
                [python, "-m", "venv", str(staging)],
                f"creating the virtual environment {staging}",
                show=not quiet,
            )
            pip = [str(staging / "bin" / "python"), "-m", "pip", "install"]
            pip += ["--disable-pip-version-check"] + (["--quiet"] if quiet else [])
            pip += [f"mini-swe-agent=={version}", *MINI_SWE_AGENT_PINS]
            _run(
                pip, f"installing mini-swe-agent=={version} (pip's output follows)", show=not quiet
            )
            (staging / ".complete").write_text(f"mini-swe-agent=={version}\n")
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _run(cmd: list[str], what: str, *, show: bool = False) -> None:
    """Run one install step; with ``show``, say what it is and pass its output through to
    stderr as it comes (a first install takes a minute or two: never silence)."""
    if not show:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            raise SandboxError(f"{what} failed: {(r.stderr or r.stdout).strip()[-2000:]}")
        return
    print(f"agent install: {what}", file=sys.stderr, flush=True)
    tail: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stderr.write(line)
            sys.stderr.flush()
            tail = [*tail[-40:], line]
        code = proc.wait(timeout=1800)
    if code != 0:
        raise SandboxError(f"{what} failed: {''.join(tail).strip()[-2000:]}")


def mini_swe_agent_command(
    *, step_limit: int = 0, command_timeout: int = 60, config: str = "mini.yaml"
) -> str:
    """The ``run_command`` running mini-swe-agent from :data:`AGENT_MOUNT` on ``$VF_TASK``
    against the rollout's interception channel (litellm's OpenAI provider), without prompts,
    cost tracking or network."""
    opts = [
        f"-c {config}",
        "-c agent.cost_limit=0",
        f"-c agent.step_limit={int(step_limit)}",
        f"-c environment.timeout={int(command_timeout)}",
        "-c model.cost_tracking=ignore_errors",
        '-c "model.model_kwargs.api_base=$OPENAI_BASE_URL"',
        '-c "model.model_kwargs.api_key=$OPENAI_API_KEY"',
    ]
    return (
        "MSWEA_CONFIGURED=true MSWEA_SILENT_STARTUP=true LITELLM_LOCAL_MODEL_COST_MAP=True "
        f"exec {AGENT_MOUNT}/bin/python -m minisweagent.run.mini "
        '--model "openai/$OPENAI_MODEL" --model-class litellm --task "$VF_TASK" '
        "--exit-immediately --yolo -o $HOME/.mini-swe-agent.traj.json " + " ".join(opts)
    )


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["mini-swe-agent"]:
        print("usage: python -m verifiers.agents.installs mini-swe-agent [VERSION]")
        raise SystemExit(2)
    version = args[1] if len(args) > 1 else MINI_SWE_AGENT_VERSION
    with contextlib.suppress(KeyboardInterrupt):
        print(mini_swe_agent_env(version, quiet=False))


if __name__ == "__main__":
    main()
