"""The two agents (native C build and Python) behind the local backends: choosing one, building
the native one, and what both must do the same way."""

from __future__ import annotations

import asyncio
import os
import shutil
import warnings
from pathlib import Path

import pytest

from tests.sandbox.conftest import marker, needs_bwrap, wait_for_pids
from verifiers.errors import ConfigError, SandboxError
from verifiers.sandbox import Sandbox, SandboxLimits, _cgroup, _native, create_sandbox

needs_cc = pytest.mark.skipif(
    not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler"
)


def _make(backend: str, **options: object) -> Sandbox:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return create_sandbox(backend, **options)


@pytest.fixture
def fresh_build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty agent cache, and no build result remembered by this process."""
    monkeypatch.setenv("VF_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("VF_SANDBOX_AGENT", raising=False)
    monkeypatch.setattr(_native, "_state", None)
    return tmp_path


@needs_cc
async def test_native_agent_is_built_once_into_the_cache(fresh_build: Path) -> None:
    async with _make("subprocess") as sb:
        assert sb.agent == "native"  # type: ignore[attr-defined]
        assert (await sb.exec(["echo", "hi"])).stdout == "hi\n"
    built = list(fresh_build.glob("sandbox-agent-*"))
    assert len(built) == 1 and os.access(built[0], os.X_OK)
    stamp = built[0].stat().st_mtime_ns
    _native._state = None  # a new process: finds the cached build, does not rebuild
    assert _native.native_agent() == str(built[0])
    assert built[0].stat().st_mtime_ns == stamp
    built[0].unlink()  # the cache was cleaned while this process runs: built again
    async with _make("subprocess") as sb:
        assert sb.agent == "native"  # type: ignore[attr-defined]
    assert built[0].exists()


async def test_without_a_compiler_auto_falls_back_and_native_says_why(
    fresh_build: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", str(fresh_build / "no-such-cc"))
    async with _make("subprocess") as sb:
        assert sb.agent == "python"  # type: ignore[attr-defined]
        assert (await sb.exec(["echo", "hi"])).stdout == "hi\n"
    with pytest.raises(SandboxError, match=r"native sandbox agent is not available.*no-such-cc"):
        await _make("subprocess", agent="native").start()
    assert not list(fresh_build.glob("sandbox-agent-*"))


async def test_the_environment_variable_chooses_the_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VF_SANDBOX_AGENT", "python")
    async with _make("subprocess") as sb:
        assert sb.agent == "python"  # type: ignore[attr-defined]
    monkeypatch.setenv("VF_SANDBOX_AGENT", "fast")
    with pytest.raises(ConfigError, match="VF_SANDBOX_AGENT='fast'"):
        await _make("subprocess").start()


def test_an_unknown_agent_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown sandbox agent 'c'.*auto, native, python"):
        _make("bwrap", agent="c")
    with pytest.raises(ConfigError, match="unknown sandbox agent"):
        _make("subprocess", agent="c")


AGENTS = ["native", "python"]


@needs_bwrap
@pytest.mark.parametrize("agent", AGENTS)
async def test_commands_start_inside_the_sandbox_cgroups(agent: str) -> None:
    """The agent joins the cgroups while it starts (not before bwrap): every command must
    still begin inside them."""
    if not _cgroup._parents():
        pytest.skip("no writable cgroup here")
    tag = marker()
    async with create_sandbox("bwrap", agent=agent) as sb:
        await sb.spawn(["sleep", tag])
        (pid,) = wait_for_pids(tag, 1)
        groups = Path(f"/proc/{pid}/cgroup").read_text()
        made = sb._cgroup.groups  # type: ignore[attr-defined]
        assert set(made) >= {"pids", "memory"} & {p.controller for p in _cgroup._parents()}
        for controller in made:  # (a cpu group only with a cpus limit)
            line = next(x for x in groups.splitlines() if controller in x.split(":")[1])
            assert f"{_cgroup.PREFIX}{os.getpid()}-{sb.id}" in line, groups


@needs_bwrap
@pytest.mark.parametrize("agent", AGENTS)
async def test_large_commands_pass_and_too_large_ones_are_refused_cleanly(agent: str) -> None:
    async with create_sandbox("bwrap", agent=agent) as sb:
        # 10 arguments of 100 kB: over the old 200 kB message limit, within ARG_MAX
        if int(Path("/proc/sys/net/core/wmem_max").read_text()) >= 1 << 21:
            r = await sb.exec(["sh", "-c", 'echo "$#"', "sh", *(["x" * 100_000] * 10)])
            assert r.stdout == "10\n"
        many = [str(i) for i in range(5000)]
        env = {f"V{i}": str(i) for i in range(500)}
        r = await sb.exec(["sh", "-c", 'echo "$# $V499"', "sh", *many], env=env)
        assert r.stdout == "5000 499\n"
        with pytest.raises(ConfigError, match=r"too large.*stdin or write_file"):
            await sb.exec(["true", *(["x" * 100_000] * 50)])
        # one argument over the kernel's per-string limit: the command fails, not the sandbox
        r = await sb.exec(["true", "x" * 200_000])
        assert r.exit_code == 127 and "Argument list too long" in r.stderr
        assert (await sb.exec(["echo", "still here"])).stdout == "still here\n"


@pytest.mark.parametrize("agent", AGENTS)
async def test_nul_in_a_command_is_a_config_error(agent: str) -> None:
    async with _make("subprocess", agent=agent) as sb:
        with pytest.raises(ConfigError, match="NUL"):
            await sb.exec(["echo", "a\0b"])
        with pytest.raises(ConfigError, match="NUL"):
            await sb.exec(["true"], env={"A": "\0"})
        with pytest.raises(ConfigError, match="'='"):
            await sb.exec(["true"], env={"A=B": "1"})
        assert (await sb.exec(["echo", "ok"])).stdout == "ok\n"


@needs_bwrap
@pytest.mark.parametrize("agent", AGENTS)
async def test_exec_errors_are_reported_alike(agent: str) -> None:
    async with create_sandbox("bwrap", agent=agent) as sb:
        await sb.write_file("noexec.sh", "echo hi\n", mode=0o644)
        await sb.write_file("garbage", b"\x00\x01\x02\x03" * 8, mode=0o755)
        cases = {
            ("no-such-command",): (127, "sandbox: no-such-command: command not found"),
            ("./noexec.sh",): (126, "sandbox: ./noexec.sh: permission denied"),
            ("./garbage",): (127, "sandbox: ./garbage: Exec format error"),
        }
        for argv, (code, message) in cases.items():
            r = await sb.exec(list(argv))
            assert (r.exit_code, r.stderr.strip()) == (code, message), argv
        r = await sb.exec(["pwd"], cwd="missing")
        assert r.exit_code == 1 and "cannot change directory to /home/user/missing" in r.stderr
        r = await sb.exec(["env"], env={"PATH": "/nowhere:/usr/bin", "X": "1"})
        assert "X=1" in r.stdout.splitlines()


@needs_bwrap
async def test_many_sandboxes_start_at_once_with_the_native_agent() -> None:
    boxes = [create_sandbox("bwrap", agent="native") for _ in range(32)]
    try:
        await asyncio.gather(*(sb.start() for sb in boxes))
        results = await asyncio.gather(*(sb.exec(["echo", sb.id]) for sb in boxes))
        assert [r.stdout.strip() for r in results] == [sb.id for sb in boxes]
    finally:
        await asyncio.gather(*(sb.stop() for sb in boxes))


@needs_cc
def test_the_native_launcher_joins_switches_user_or_says_why(
    fresh_build: Path, tmp_path: Path
) -> None:
    """``vf-agent --launch [--join FILE]... [--as-user UID GID] -- PROGRAM...``: how a sandbox's
    bwrap is started (in its cgroups, as nobody when the host is root)."""
    import subprocess

    agent = _native.native_agent(required=True)
    assert agent is not None

    def launch(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([agent, "--launch", *args], capture_output=True, text=True)

    bad = launch("--as-user", "nobody", "1", "--", "/bin/true")
    assert bad.returncode == 2 and "numeric uid and gid" in bad.stderr
    assert launch("--as-user", "1", "1").returncode == 2  # no program
    missing = launch("--", "/no/such/program")
    assert missing.returncode == 126 and "cannot run /no/such/program" in missing.stderr
    # what the launcher writes to a join file: "0", moving itself
    join = tmp_path / "tasks"
    join.write_text("")
    assert launch("--join", str(join), "--", "/bin/true").returncode == 0
    assert join.read_text() == "0"
    nowhere = launch("--join", str(tmp_path / "no" / "tasks"), "--", "/bin/true")
    assert nowhere.returncode == 126 and "cannot join the cgroup" in nowhere.stderr
    if os.geteuid() == 0:
        ok = launch("--as-user", "65534", "65534", "--", "/bin/sh", "-c", "id -u; id -G")
        assert (ok.returncode, ok.stdout) == (0, "65534\n65534\n")
    else:  # an unprivileged caller cannot switch: a clear message, not a half-switched exec
        denied = launch("--as-user", "0", "0", "--", "/bin/true")
        assert denied.returncode == 126 and "cannot switch to uid 0" in denied.stderr


@needs_bwrap
@pytest.mark.parametrize("agent", AGENTS)
async def test_the_process_limit_counts_what_runs_in_the_sandbox(agent: str) -> None:
    """``processes=N``: the agent and N-1 processes of the commands, whichever way the
    sandbox joined its pids cgroup (bwrap's own process, outside the sandbox, is not
    counted)."""
    code = (
        "import os, time\n"
        "n = 0\n"
        "while True:\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    n += 1\n"
        "print(n)\n"
    )
    limits = SandboxLimits(processes=8, timeout=30)
    async with create_sandbox("bwrap", agent=agent, limits=limits) as sb:
        r = await sb.exec(["python3", "-c", code])
    assert r.stdout == "6\n", r  # 8 - the agent - python itself
