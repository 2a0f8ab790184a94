"""The bwrap sandbox contains what model-written code tries, through the Python API and through
``vf sandbox exec``: network, host files, writes outside the work dir, fork and memory bombs,
infinite loops, floods of output, and children that detach with ``setsid``."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.sandbox.conftest import marker, needs_bwrap, pids_with, vf_exec, wait_for_pids
from verifiers.sandbox import SandboxLimits, create_sandbox
from verifiers.sandbox.bwrap import sandbox_host_uid, sandbox_uid_range

pytestmark = needs_bwrap

CHECKOUT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    exit_code: int  # shell convention: 124 timeout, 128+N signal
    stdout: bytes
    stderr: bytes
    timed_out: bool
    truncated: bool


def run_api(
    argv: list[str], *, timeout: float = 20, memory_mb: int = 512, network: bool = False
) -> Outcome:
    async def go() -> Outcome:
        limits = SandboxLimits(timeout=timeout, memory_mb=memory_mb, processes=64)
        async with create_sandbox("bwrap", limits=limits, network=network) as sb:
            r = await sb.exec_raw(argv)
        return Outcome(r.decode().shell_exit_code, r.stdout, r.stderr, r.timed_out, r.truncated)

    return asyncio.run(go())


def run_cli(
    argv: list[str], *, timeout: float = 20, memory_mb: int = 512, network: bool = False
) -> Outcome:
    opts = ["--timeout", str(timeout), "--memory-mb", str(memory_mb)]
    if network:
        opts.append("--network")
    p = vf_exec(*opts, "--", *argv)
    return Outcome(
        p.returncode,
        p.stdout,
        p.stderr,
        p.returncode == 124 and b"timed out" in p.stderr,
        b"output cut" in p.stderr,
    )


@pytest.fixture(params=["api", "cli"])
def run(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return run_api if request.param == "api" else run_cli


@pytest.fixture
def listener() -> Iterator[int]:
    """A real TCP listener on the host's loopback; yields its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield s.getsockname()[1]


def _connect_probe(port: int) -> list[str]:
    code = (
        "import socket\n"
        f"for addr in [('127.0.0.1', {port}), ('localhost', {port}), ('1.1.1.1', 53),"
        " ('8.8.8.8', 443), ('10.0.0.1', 80)]:\n"
        "    try:\n"
        "        socket.create_connection(addr, timeout=2).close()\n"
        "        print('OPEN', addr)\n"
        "    except OSError as e:\n"
        "        print('blocked', addr, type(e).__name__)\n"
    )
    return ["python3", "-c", code]


def test_network_is_unreachable(run, listener: int) -> None:  # type: ignore[no-untyped-def]
    out = run(_connect_probe(listener))
    assert out.exit_code == 0, out.stderr
    assert b"OPEN" not in out.stdout
    assert out.stdout.count(b"blocked") == 5


def test_host_network_when_asked_reaches_the_host_listener(listener: int) -> None:
    """The probe above can fail: with the host's network (an explicit opt-in) the same
    listener is reachable."""

    async def go() -> bytes:
        async with create_sandbox("bwrap", network=True, host_network=True) as sb:
            return (await sb.exec_raw(_connect_probe(listener))).stdout

    assert f"OPEN ('127.0.0.1', {listener})".encode() in asyncio.run(go())


def _visibility_probe(paths: list[str]) -> list[str]:
    code = (
        "import os, sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        if os.path.isdir(p):\n"
        "            print('VISIBLE', p, os.listdir(p)[:3])\n"
        "        else:\n"
        "            open(p, 'rb').read(1); print('VISIBLE', p)\n"
        "    except OSError as e:\n"
        "        print('hidden', p, type(e).__name__)\n"
    )
    return ["python3", "-c", code, *paths]


def test_host_files_are_invisible(run) -> None:  # type: ignore[no-untyped-def]
    secrets = [
        "/root",
        str(Path.home()),
        "/work",
        str(CHECKOUT),
        str(CHECKOUT / "pyproject.toml"),
        "/etc/shadow",
        "/etc/hostname",
        "/var",
        "/opt",
    ]
    out = run(_visibility_probe(secrets))
    assert out.exit_code == 0, out.stderr
    assert b"VISIBLE" not in out.stdout, out.stdout.decode()
    assert out.stdout.count(b"hidden") == len(secrets)


def test_visibility_probe_sees_what_is_mounted() -> None:
    out = run_api(_visibility_probe(["/usr/bin", "/home/user"]))
    assert out.stdout.count(b"VISIBLE") == 2


def test_writes_outside_the_work_dir_fail(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    targets = ["/vf-x", "/usr/vf-x", "/etc/vf-x", "/proc/vf-x", str(tmp_path / "vf-x")]
    code = (
        "import sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        open(p, 'w').write('x'); print('WROTE', p)\n"
        "    except OSError as e:\n"
        "        print('denied', p)\n"
    )
    out = run(["python3", "-c", code, *targets, "/home/user/ok", "/tmp/ok"])
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.decode().splitlines()
    assert lines[-2:] == ["WROTE /home/user/ok", "WROTE /tmp/ok"]
    assert all(line.startswith("denied") for line in lines[:-2]), lines
    assert not (tmp_path / "vf-x").exists()
    assert not Path("/vf-x").exists()


def test_fork_bomb_is_contained(run) -> None:  # type: ignore[no-untyped-def]
    tag = marker()
    bomb = f"bomb() {{ bomb | bomb & }}; bomb; sleep {tag}"
    started = time.monotonic()
    run(["/bin/sh", "-c", bomb], timeout=3)
    # the bomb ends (at the timeout at the latest), the host stays responsive, and no process
    # of it survives the sandbox
    assert time.monotonic() - started < 30
    assert pids_with(tag) == []


def test_memory_bomb_fails_inside(run) -> None:  # type: ignore[no-untyped-def]
    code = "a = []\nwhile True:\n    a.append(bytearray(16 << 20))"
    out = run(["python3", "-c", code], memory_mb=256, timeout=30)
    assert out.exit_code != 0 and not out.timed_out
    assert b"MemoryError" in out.stderr or out.exit_code == 137


def test_infinite_loop_is_killed_at_the_timeout(run) -> None:  # type: ignore[no-untyped-def]
    tag = marker()
    out = run(["python3", "-c", f"while True: pass  # {tag}"], timeout=1)
    assert out.timed_out and out.exit_code == 124
    assert pids_with(tag) == []


def test_100mb_of_output_is_truncated(run) -> None:  # type: ignore[no-untyped-def]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = run(["/bin/sh", "-c", "head -c 100000000 /dev/zero | tr '\\0' x"], timeout=60)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert out.exit_code == 0 and out.truncated
    assert out.stdout.startswith(b"x" * 1000)
    assert len(out.stdout) <= (1 << 20) + 200  # the cap (1 MiB) plus the CLI's note
    assert grown_mb < 50  # never held in memory


def test_setsid_child_is_gone_when_the_sandbox_stops_cli() -> None:
    tag = marker()
    p = vf_exec("--", "/bin/sh", "-c", f"setsid -f sleep {tag}; echo detached")
    assert p.returncode == 0 and p.stdout == b"detached\n", p.stderr
    assert pids_with(tag) == []


async def test_setsid_child_is_gone_when_the_sandbox_stops_api() -> None:
    tag = marker()
    async with create_sandbox("bwrap") as sb:
        r = await sb.exec(f"setsid -f sleep {tag} > /dev/null 2>&1; echo detached")
        assert r.stdout == "detached\n"
        assert wait_for_pids(tag, 1)  # it outlived its exec ...
    assert pids_with(tag) == []  # ... but not the sandbox


async def test_oom_is_flagged_when_the_memory_cgroup_kills() -> None:
    limits = SandboxLimits(memory_mb=96, processes=64, timeout=30)
    async with create_sandbox("bwrap", limits=limits) as sb:
        if sb.oom_kills() is None:
            pytest.skip("no writable memory cgroup here")
        # several processes, each under the per-process limit, together over the cgroup's
        code = "x = bytearray(60 << 20); import time; time.sleep(1)"
        r = await sb.exec(" & ".join([f"python3 -c '{code}'"] * 4) + " & wait", timeout=20)
    assert r.oom


@pytest.mark.parametrize("agent", ["native", "python"])  # launched by the agent / setpriv
def test_sandbox_runs_as_an_unprivileged_host_user(agent: str) -> None:
    tag = marker()

    async def go() -> tuple[int, int, str]:
        async with create_sandbox("bwrap", agent=agent) as sb:
            await sb.spawn(["sleep", tag])
            pid = wait_for_pids(tag, 1)[0]
            status = Path(f"/proc/{pid}/status").read_text().splitlines()
            uids = next(line for line in status if line.startswith("Uid:")).split()[1:]
            gids = next(line for line in status if line.startswith("Gid:")).split()[1:]
            groups = next(line for line in status if line.startswith("Groups:"))
            assert len(set(uids)) == 1 and len(set(gids)) == 1, status  # real = saved = ...
            return int(uids[0]), int(gids[0]), groups.split(":", 1)[1].strip()

    uid, gid, groups = asyncio.run(go())
    if os.geteuid() == 0:  # a uid of its own; root's groups are dropped along with its uid
        assert uid in sandbox_uid_range() and (gid, groups) == (uid, "")
    else:
        assert uid == sandbox_host_uid()


async def test_commands_during_a_fork_bomb_fail_without_killing_the_sandbox() -> None:
    limits = SandboxLimits(processes=32, timeout=30)
    async with create_sandbox("bwrap", limits=limits) as sb:
        # background processes take every process slot for a while
        held = await sb.exec("for i in $(seq 40); do sleep 2 & done")
        assert "fork" in held.stderr.lower()
        blocked = await sb.exec("sleep 0.1; echo hi")
        assert blocked.exit_code != 0 and "fork" in blocked.stderr.lower()
        end = time.monotonic() + 30  # bounded poll: the holders exit after 2 s
        while time.monotonic() < end:
            again = await sb.exec("sleep 0.1; echo alive")
            if again.exit_code == 0:
                break
        assert again.stdout == "alive\n"  # the sandbox itself survived


async def test_the_sandbox_has_its_own_identity_files() -> None:
    async with create_sandbox("bwrap") as sb:
        r = await sb.exec("whoami; cut -d: -f1 /etc/passwd | sort | tr '\\n' ' '")
    assert r.stdout == "user\nnobody root user "  # not the host's accounts


async def test_programs_cannot_kill_the_sandbox() -> None:
    """Killing everything in sight (the agent included) is an observation, not a dead sandbox
    that would turn the rollout into an infrastructure error."""
    async with create_sandbox("bwrap") as sb:
        r = await sb.exec("kill -9 1; kill -9 -1; echo still here")
        assert "still here" in r.stdout
        assert (await sb.exec("echo alive")).stdout == "alive\n"
