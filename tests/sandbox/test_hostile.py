"""Findings of issue 12 against the sandbox itself: what a hostile program leaves behind after
its command, and the system calls it must not have."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.conftest import marker, needs_bwrap, pids_with, vf_exec, wait_for_pids
from verifiers.sandbox import SandboxLimits, create_sandbox

pytestmark = needs_bwrap

# double fork + setsid, the grandchild ignoring SIGTERM and SIGHUP, then the command keeps going
_DAEMON = (
    "import os, signal, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "        signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    "        os.execvp('sleep', ['sleep', sys.argv[1]])\n"
    "    os._exit(0)\n"
    "print('detached', flush=True)\n"
    "time.sleep(3600)\n"
)


@pytest.mark.parametrize("backend", ["bwrap", "subprocess"])
@pytest.mark.parametrize("agent", ["native", "python"])
async def test_timed_out_exec_kills_what_it_started(backend: str, agent: str) -> None:
    tag = marker()
    limits = SandboxLimits(timeout=30, processes=64)
    async with create_sandbox(backend, limits=limits, agent=agent) as sb:
        # (3 s: the program must get as far as its print on a loaded machine)
        r = await sb.exec(["python3", "-c", _DAEMON, tag], timeout=3.0)
        assert r.timed_out and r.stdout == "detached\n"
        assert pids_with(tag) == []  # gone when the exec returns, not when the sandbox stops
        # a killed spawned process takes its tree along too
        p = await sb.spawn(["python3", "-c", _DAEMON, tag])
        # the program and its detached grandchild (which carries the tag before and after its
        # exec); the short-lived middle child may show up too
        assert len(wait_for_pids(tag, 2)) >= 2
        await p.kill()
        assert pids_with(tag) == []


def test_timed_out_exec_kills_what_it_started_cli() -> None:
    tag = marker()
    p = vf_exec("--timeout", "3", "--", "python3", "-c", _DAEMON, tag)
    assert p.returncode == 124 and p.stdout == b"detached\n", p.stderr
    assert pids_with(tag) == []


# every denied system call, made for real inside the sandbox (zero arguments: harmless where
# it is allowed, and EPERM only from the filter for most of them)
_SYSCALLS = r"""
import ctypes, errno, json, sys
libc = ctypes.CDLL(None, use_errno=True)
status = [l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')]
out = {'seccomp': status[0]}
for name, nr in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, 0, 0, 0, 0, 0, 0)
    out[name] = errno.errorcode.get(ctypes.get_errno(), '') if r == -1 else 'ran'
print(json.dumps(out))
"""


async def test_seccomp_filter_denies_each_listed_system_call() -> None:
    import json
    import platform

    from verifiers.sandbox._seccomp import DENIED

    column = 1 if platform.machine().lower() in ("aarch64", "arm64") else 0
    numbers = {n: nrs[column] for n, nrs in DENIED.items() if nrs[column] is not None}
    numbers["getppid"] = 110 if column == 0 else 173  # allowed: the control
    async with create_sandbox("bwrap") as sb:
        r = await sb.exec(["python3", "-c", _SYSCALLS, json.dumps(numbers)])
    seen = json.loads(r.stdout)
    assert seen.pop("seccomp") == "2"  # filter mode
    assert seen.pop("getppid") == "ran"
    assert seen == {name: "EPERM" for name in numbers if name != "getppid"}
    for required in ("pidfd_getfd", "ptrace", "process_vm_readv", "io_uring_setup", "bpf",
                     "userfaultfd", "keyctl", "add_key", "request_key", "perf_event_open",
                     "mount", "unshare", "setns", "kexec_load", "init_module", "finit_module",
                     "delete_module"):  # fmt: skip
        assert required in seen


_INNER_BWRAP = ["bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib",
                "/lib", "--symlink", "usr/lib64", "/lib64", "--", "/usr/bin/true"]  # fmt: skip


async def test_a_nested_sandbox_lets_through_only_what_bwrap_needs_to_build_one() -> None:
    """``nested=True`` (the hub's re-score jobs): unshare, mount, umount2 and pivot_root get
    past the filter (``unshare(0)`` runs, a mount with no arguments fails with the kernel's
    EINVAL or EFAULT; ``pivot_root(NULL, NULL)`` gets the kernel's EPERM for want of a
    capability, so the bwrap run inside, which needs it, is its proof); every other listed call
    is still refused."""
    import json
    import platform

    from verifiers.sandbox._seccomp import DENIED, NESTED_ALLOWED

    column = 1 if platform.machine().lower() in ("aarch64", "arm64") else 0
    numbers = {n: nrs[column] for n, nrs in DENIED.items() if nrs[column] is not None}
    async with create_sandbox("bwrap", nested=True) as sb:
        r = await sb.exec(["python3", "-c", _SYSCALLS, json.dumps(numbers)])
        inner = await sb.exec(_INNER_BWRAP)
    seen = json.loads(r.stdout)
    assert seen.pop("seccomp") == "2"
    refused = {name for name, got in seen.items() if got == "EPERM"}
    assert set(numbers) - refused == set(NESTED_ALLOWED) - {"pivot_root"}, seen
    assert inner.exit_code == 0, inner.stderr
    async with create_sandbox("bwrap") as strict:
        inner = await strict.exec(_INNER_BWRAP)
    assert inner.exit_code != 0 and "namespace" in inner.stderr, inner.stderr


async def test_seccomp_blocks_other_architectures_tables() -> None:
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("the x32 bit exists on x86_64 only")
    probe = (
        "import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.syscall(0x40000000 | 39)\nprint(r, errno.errorcode.get(ctypes.get_errno()))"
    )
    async with create_sandbox("bwrap") as sb:
        r = await sb.exec(["python3", "-c", probe])
    assert r.stdout.split() == ["-1", "EPERM"]


@pytest.mark.parametrize("squat", ["other-owner", "open-mode", "symlink"])
async def test_subprocess_work_dirs_stay_private_when_the_shared_root_is_not(
    squat: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import warnings

    from verifiers.sandbox import subprocess_backend

    shared = tmp_path / "vf-sandboxes-0"
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir(mode=0o777)
    if squat == "symlink":
        shared.symlink_to(elsewhere)
    else:
        shared.mkdir()
        os.chmod(shared, 0o777)
        if squat == "other-owner" and os.getuid() == 0:
            os.chown(shared, 65534, 65534)
    monkeypatch.setattr(subprocess_backend, "_ROOT", shared)
    monkeypatch.setattr(subprocess_backend, "_private_root", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        async with create_sandbox("subprocess") as sb:
            workdir = Path((await sb.exec("pwd")).stdout.strip())
    assert shared not in workdir.parents and elsewhere not in workdir.resolve().parents
    parent = workdir.parent
    st = parent.lstat()
    assert st.st_uid == os.getuid() and st.st_mode & 0o077 == 0


async def test_dev_is_read_only_and_dev_shm_is_sized_by_disk_mb() -> None:
    limits = SandboxLimits(disk_mb=8, timeout=30)
    async with create_sandbox("bwrap", limits=limits) as sb:
        dev = await sb.exec("touch /dev/x")
        shm = await sb.exec("head -c 20000000 /dev/zero > /dev/shm/big; ls -l /dev/shm/big")
        null = await sb.exec("echo hi > /dev/null && echo ok")
    assert dev.exit_code != 0 and "Read-only" in dev.stderr
    assert "No space left" in shm.stderr
    assert int(shm.stdout.split()[4]) <= 8 << 20
    assert null.stdout == "ok\n"


async def test_each_live_sandbox_runs_as_its_own_host_uid() -> None:
    import os

    from verifiers.sandbox.bwrap import sandbox_uid_range

    if os.geteuid() != 0:
        pytest.skip("only a root host process can give each sandbox its own uid")
    tags = [marker(), marker()]
    async with create_sandbox("bwrap") as a, create_sandbox("bwrap") as b:
        for sb, tag in zip((a, b), tags, strict=True):
            await sb.spawn(["sleep", tag])
        uids = []
        for tag in tags:
            (pid,) = wait_for_pids(tag, 1)
            status = Path(f"/proc/{pid}/status").read_text()
            uids.append(
                int(next(x for x in status.splitlines() if x.startswith("Uid:")).split()[1])
            )
        assert uids == [a.host_uid, b.host_uid]  # type: ignore[attr-defined]
    assert uids[0] != uids[1] and all(u in sandbox_uid_range() for u in uids)


def test_uid_range_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifiers.errors import SandboxError
    from verifiers.sandbox.bwrap import sandbox_uid_range

    monkeypatch.setenv("VF_SANDBOX_UID_RANGE", "1000-10")
    with pytest.raises(SandboxError, match="VF_SANDBOX_UID_RANGE"):
        sandbox_uid_range()
    monkeypatch.setenv("VF_SANDBOX_UID_RANGE", "700000-700009")
    assert sandbox_uid_range() == range(700000, 700010)


@pytest.mark.parametrize("agent", ["native", "python"])
async def test_cpus_is_a_cgroup_quota_for_the_whole_sandbox(agent: str) -> None:
    from verifiers.sandbox import _cgroup

    if not any(p.controller == "cpu" for p in _cgroup._parents()):
        pytest.skip("no writable cpu cgroup here")
    tag = marker()
    spin = (
        "import sys, threading, time\nt = time.time()\n"
        "def f():\n    while time.time() - t < 1.0: pass\n"
        "ts = [threading.Thread(target=f) for _ in range(2)]\n"
        "[x.start() for x in ts]\n[x.join() for x in ts]\n"
    )
    async with create_sandbox("bwrap", limits=SandboxLimits(cpus=0.05), agent=agent) as sb:
        group = sb._cgroup.groups["cpu"]  # type: ignore[attr-defined]
        quota = (
            (group / "cpu.max").read_text().split()[0]
            if (group / "cpu.max").exists()
            else ((group / "cpu.cfs_quota_us").read_text().strip())
        )
        await sb.spawn(["sleep", tag])
        (pid,) = wait_for_pids(tag, 1)
        where = Path(f"/proc/{pid}/cgroup").read_text()
        r = await sb.exec(["python3", "-c", spin])
    assert quota == "5000"
    assert group.name in where  # the sandbox's processes are in the group
    assert r.cpu_s <= 0.05 * r.duration_s + 0.1  # two busy threads held to 5 % of a core


def _host_address() -> str | None:
    """An address of this host outside loopback (where the outside world would be)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.123", 9))  # no packet is sent: only picks the route
            address = str(s.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


_REACH = (
    "import socket, sys\n"
    "for host, port in zip(sys.argv[1::2], sys.argv[2::2]):\n"
    "    try:\n"
    "        socket.create_connection((host, int(port)), timeout=3).close()\n"
    "        print('OPEN', host)\n"
    "    except OSError:\n"
    "        print('blocked', host)\n"
)


@pytest.mark.parametrize("how", ["api", "cli"])
async def test_network_sandbox_reaches_out_but_not_the_hosts_loopback(how: str) -> None:
    import asyncio
    import shutil
    import socket

    if shutil.which("slirp4netns") is None:
        pytest.skip("needs slirp4netns (scripts/bootstrap.sh installs it)")
    outside = _host_address()
    if outside is None:
        pytest.skip("this host has no address outside loopback")
    with socket.socket() as lo, socket.socket() as ext:
        lo.bind(("127.0.0.1", 0))
        ext.bind((outside, 0))
        lo.listen(8)
        ext.listen(8)
        # the host's loopback, slirp's alias for it (10.0.2.2), and the host's outside address
        targets = ["127.0.0.1", str(lo.getsockname()[1]), "10.0.2.2", str(lo.getsockname()[1])]
        targets += [outside, str(ext.getsockname()[1])]
        if how == "api":
            async with create_sandbox("bwrap", network=True) as sb:
                out = (await sb.exec(["python3", "-c", _REACH, *targets])).stdout
        else:
            p = await asyncio.to_thread(
                vf_exec, "--network", "--", "python3", "-c", _REACH, *targets
            )
            out = p.stdout.decode()
    assert out.split("\n")[:3] == ["blocked 127.0.0.1", "blocked 10.0.2.2", f"OPEN {outside}"]


async def test_network_comes_up_when_slirp_starts_after_the_sandbox_is_set_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: slirp4netns joined the agent's own user namespace, which bwrap's
    ``--disable-userns`` replaces by a nested one once set-up is done; started after that
    (a loaded machine), it failed with ``setns(CLONE_NEWNET): Operation not permitted``."""
    import asyncio
    import os
    import shutil

    from verifiers.sandbox.bwrap import BwrapSandbox, _owning_userns

    if shutil.which("slirp4netns") is None:
        pytest.skip("needs slirp4netns (scripts/bootstrap.sh installs it)")
    start_slirp = BwrapSandbox._start_slirp

    def owner_of_net(pid: int) -> str:
        owner = _owning_userns(pid)
        try:
            return os.readlink(f"/proc/self/fd/{owner}")
        finally:
            os.close(owner)

    async def late(self: BwrapSandbox, agent: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        # wait until bwrap has moved the agent into its nested user namespace
        while os.readlink(f"/proc/{agent}/ns/user") == owner_of_net(agent):
            assert loop.time() < deadline, "bwrap never made its nested user namespace"
            await asyncio.sleep(0.01)
        await start_slirp(self, agent)

    monkeypatch.setattr(BwrapSandbox, "_start_slirp", late)
    async with create_sandbox("bwrap", network=True) as sb:
        r = await sb.exec(["cat", "/proc/net/dev"])
    assert "tap0" in r.stdout


def test_seccomp_and_read_only_dev_through_the_cli() -> None:
    p = vf_exec("--", "sh", "-c", "grep Seccomp: /proc/self/status; touch /dev/x || echo ro")
    assert p.stdout.split() == [b"Seccomp:", b"2", b"ro"], p.stderr


def test_processes_sharing_the_uid_range_never_hand_out_the_same_uid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: uids were only unique within one process, so two processes sharing the
    range could run sandboxes as the same host uid (and share its kernel quotas)."""
    import os
    import subprocess
    import sys

    from verifiers.errors import SandboxError
    from verifiers.sandbox import bwrap

    if os.geteuid() != 0:
        pytest.skip("only a root host process gives each sandbox its own uid")
    monkeypatch.setenv("VF_SANDBOX_UID_RANGE", "600000-600001")
    monkeypatch.setenv("VF_SANDBOX_UID_LOCK_DIR", str(tmp_path / "locks"))
    with subprocess.Popen(
        [sys.executable, "-c", "from verifiers.sandbox import bwrap; import sys\n"
         "print(bwrap._take_uid(), flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as holder:  # fmt: skip
        assert holder.stdout is not None and holder.stdin is not None
        held = int(holder.stdout.readline())
        mine = bwrap._take_uid()
        assert {held, mine} == {600000, 600001}
        with pytest.raises(SandboxError, match="in use by a live sandbox"):
            bwrap._take_uid()
        bwrap._release_uid_lock(mine)
        assert bwrap._take_uid() == mine  # released: free again
        bwrap._release_uid_lock(mine)
        holder.stdin.close()
        holder.wait(timeout=30)
    assert bwrap._take_uid() in (600000, 600001)  # the holder's lock went with it
    for uid in (600000, 600001):
        bwrap._release_uid_lock(uid)


def test_a_uid_lock_dir_open_to_others_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from verifiers.errors import SandboxError
    from verifiers.sandbox import bwrap

    if os.geteuid() != 0:
        pytest.skip("only a root host process gives each sandbox its own uid")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("VF_SANDBOX_UID_LOCK_DIR", str(shared))
    with pytest.raises(SandboxError, match="mode 0700"):
        bwrap._take_uid()


async def test_slirp_starts_only_once_bwrap_has_set_up_the_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: slirp4netns was started as soon as bwrap reported its child, and its
    ``--configure`` brought the loopback up while bwrap was still adding the loopback's
    address: on a loaded machine bwrap failed with ``loopback: Failed RTM_NEWADDR``. It starts
    once the agent runs (bwrap's set-up finished)."""
    import shutil

    from verifiers.sandbox.bwrap import BwrapSandbox

    if shutil.which("slirp4netns") is None:
        pytest.skip("needs slirp4netns (scripts/bootstrap.sh installs it)")
    start_slirp = BwrapSandbox._start_slirp
    programs: list[bytes] = []

    async def watched(self: BwrapSandbox, agent: int) -> None:
        with open(f"/proc/{agent}/cmdline", "rb") as f:
            programs.append(f.read().split(b"\0")[0])
        await start_slirp(self, agent)

    monkeypatch.setattr(BwrapSandbox, "_start_slirp", watched)
    for _ in range(3):
        async with create_sandbox("bwrap", network=True) as sb:
            r = await sb.exec(["cat", "/proc/net/dev"])
        assert "tap0" in r.stdout
    assert len(programs) == 3
    assert not any(p.endswith(b"bwrap") for p in programs), programs
