"""Per-sandbox cgroups (pids, memory) where the host lets us create them.

Each sandbox gets ``vf-sandbox-<host pid>-<id>`` under this process's own cgroup in every
hierarchy that has the controller (cgroup v1 per-controller mounts, or a delegated cgroup v2
subtree). Nothing here is required: when no cgroup is writable, the rlimits alone apply.
Groups left behind by a process that was SIGKILLed are swept the next time one is created.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

PREFIX = "vf-sandbox-"


_CONTROLLERS = ("pids", "memory", "cpu")


def _mounts() -> tuple[dict[str, Path], Path | None]:
    """cgroup v1 mount point per controller, and the cgroup v2 mount point."""
    v1: dict[str, Path] = {}
    v2: Path | None = None
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return v1, v2
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        rest = right.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        fstype, options = rest[0], rest[2].split(",")
        if fstype == "cgroup":
            for ctrl in _CONTROLLERS:
                if ctrl in options:
                    v1[ctrl] = Path(fields[4])
        elif fstype == "cgroup2" and v2 is None:
            v2 = Path(fields[4])
    return v1, v2


def _own_paths() -> tuple[dict[str, str], str | None]:
    v1: dict[str, str] = {}
    v2: str | None = None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return v1, v2
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if ctrls == "":
            v2 = path
        for ctrl in ctrls.split(","):
            if ctrl in _CONTROLLERS:
                v1[ctrl] = path
    return v1, v2


@dataclass(frozen=True)
class _Parent:
    controller: str
    path: Path
    v2: bool


_PARENTS: list[_Parent] | None = None


def _parents() -> list[_Parent]:
    """Where sandbox cgroups can be created, one per controller (computed once)."""
    global _PARENTS
    if _PARENTS is not None:
        return _PARENTS
    found: list[_Parent] = []
    mounts, v2_mount = _mounts()
    own, v2_own = _own_paths()
    for ctrl in _CONTROLLERS:
        if ctrl in mounts and ctrl in own:
            path = mounts[ctrl] / own[ctrl].lstrip("/")
            if os.access(path, os.W_OK):
                found.append(_Parent(ctrl, path, v2=False))
    if v2_mount is not None and v2_own is not None:
        path = v2_mount / v2_own.lstrip("/")
        try:
            available = (path / "cgroup.subtree_control").read_text().split()
        except OSError:
            available = []
        for ctrl in _CONTROLLERS:
            if ctrl in available and not any(p.controller == ctrl for p in found):
                if os.access(path, os.W_OK):
                    found.append(_Parent(ctrl, path, v2=True))
    _PARENTS = found
    sweep()
    return found


def sweep() -> None:
    """Remove the sandbox cgroups of processes that died without cleaning up."""
    for parent in _parents():
        _sweep(parent.path)


def remove_own_groups() -> None:
    """Remove every sandbox cgroup of this process (at interpreter exit)."""
    if _PARENTS is None:
        return  # this process never made one
    for group in leftover_groups(os.getpid()):
        _remove(group, wait_s=2.0)


def leftover_groups(owner_pid: int) -> list[Path]:
    """Sandbox cgroups created by ``owner_pid`` that still exist."""
    return [child for parent in _parents() for child in parent.path.glob(f"{PREFIX}{owner_pid}-*")]


def _sweep(parent: Path) -> None:
    """Remove groups whose creating process is gone (it was SIGKILLed)."""
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            if not child.name.startswith(PREFIX):
                continue
            try:
                owner = int(child.name[len(PREFIX) :].split("-")[0])
            except ValueError:
                continue
            if owner != os.getpid() and not _alive(owner):
                _remove(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _try_remove(group: Path) -> bool:
    """Kill what is left in ``group`` and remove it; False while processes are still leaving."""
    try:
        pids = (group / "cgroup.procs").read_text().split()
    except OSError:
        pids = []
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)
    try:
        group.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _remove(group: Path, wait_s: float = 0.0) -> None:
    import time

    end = time.monotonic() + wait_s
    for _ in range(1000):
        if _try_remove(group):
            return
        os.sched_yield()
    while time.monotonic() < end:
        if _try_remove(group):
            return
        time.sleep(0.005)


_CPU_PERIOD_US = 100_000


class SandboxCgroup:
    """The cgroups of one sandbox: :meth:`create` makes them, then the sandbox's first process
    joins them, by itself through :meth:`self_join_files` (cgroup v1) or moved by
    :meth:`attach` (cgroup v2).

    Why two ways: moving another process between cgroups makes the kernel wait for an RCU
    grace period (about 10 ms on a quiet machine) unless another move happened just before,
    while a thread that moves itself through cgroup v1's ``tasks`` file skips that wait.
    cgroup v2 has no such file, so there the wait is started early (:meth:`prime`) and runs
    while bubblewrap builds the sandbox. (The Python agent's start-up, without the native
    launcher, is longer than the wait, which it hides.)
    """

    def __init__(
        self,
        sandbox_id: str,
        memory_bytes: int | None,
        max_pids: int | None,
        cpus: float | None = None,
    ) -> None:
        self.name = f"{PREFIX}{os.getpid()}-{sandbox_id}"
        self.memory_bytes = memory_bytes
        self.max_pids = max_pids
        self.cpus = cpus
        #: where this sandbox's groups go: the hierarchies with a controller it has a limit for
        self.parents = [
            p
            for p in _parents()
            if (p.controller == "memory" and memory_bytes is not None)
            or (p.controller == "pids" and max_pids is not None)
            or (p.controller == "cpu" and cpus is not None)
        ]
        #: the groups made, by controller
        self.groups: dict[str, Path] = {}
        self._v2: set[str] = set()

    def create(self, launcher_joins: bool = False) -> None:
        """Make the groups the host lets us make, with their limits (blocking, fast). With
        ``launcher_joins``, the sandbox's launcher joins the cgroup v1 groups before it execs
        bwrap, so bwrap's own process is in them too and the pids limit counts it."""
        for parent in self.parents:
            group = self._make(parent, extra_pids=int(launcher_joins and not parent.v2))
            if group is not None:
                self.groups[parent.controller] = group
                if parent.v2:
                    self._v2.add(parent.controller)

    def self_join_files(self) -> list[str]:
        """The cgroup v1 groups as the files a single-threaded process writes ``0`` to in
        order to move itself in (the sandbox launcher does, before it execs bwrap)."""
        return [str(g / "tasks") for c, g in self.groups.items() if c not in self._v2]

    def host_moves(self, launcher_joins: bool) -> list[str]:
        """The controllers whose groups :meth:`attach` must move the sandbox's first process
        into: every group when no launcher joins them, else those a launcher cannot join."""
        return [c for c in self.groups if not launcher_joins or c in self._v2]

    def prime(self) -> None:
        """Move this process into the cgroup v2 group it is already in: nothing changes, but
        the grace period an :meth:`attach` would wait for starts now. Best effort (errors are
        ignored); blocking, so call it in a worker thread."""
        for parent in self.parents:
            if parent.v2:
                with contextlib.suppress(OSError):
                    (parent.path / "cgroup.procs").write_text(str(os.getpid()))
                return

    def attach(self, pid: int, controllers: list[str]) -> None:
        """Move process ``pid`` into the groups of ``controllers``; its later children start
        there. Blocking: see :meth:`prime`."""
        for controller in controllers:
            (self.groups[controller] / "cgroup.procs").write_text(str(pid))

    def _make(self, parent: _Parent, extra_pids: int) -> Path | None:
        group = parent.path / self.name
        try:
            group.mkdir()
            if parent.controller == "pids":
                (group / "pids.max").write_text(str((self.max_pids or 0) + extra_pids))
            elif parent.controller == "cpu":  # a quota of cpus cores per 100 ms period
                quota = max(1000, int((self.cpus or 1.0) * _CPU_PERIOD_US))
                if parent.v2:
                    (group / "cpu.max").write_text(f"{quota} {_CPU_PERIOD_US}")
                else:
                    (group / "cpu.cfs_period_us").write_text(str(_CPU_PERIOD_US))
                    (group / "cpu.cfs_quota_us").write_text(str(quota))
            elif parent.v2:
                (group / "memory.max").write_text(str(self.memory_bytes))
                (group / "memory.swap.max").write_text("0")
            else:
                (group / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
                with contextlib.suppress(OSError):
                    (group / "memory.memsw.limit_in_bytes").write_text(str(self.memory_bytes))
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            return None
        return group

    def oom_kills(self) -> int | None:
        group = self.groups.get("memory")
        if group is None:
            return None
        name = "memory.events" if (group / "memory.events").exists() else "memory.oom_control"
        try:
            for line in (group / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except OSError:
            return None
        return 0

    def remove(self, wait_s: float = 0.0) -> None:
        for group in self.groups.values():
            _remove(group, wait_s)
        self.groups.clear()

    async def remove_async(self, limit_s: float = 30.0) -> None:
        """Remove the groups, waiting (without blocking the loop) for exiting processes to
        leave them."""
        import asyncio
        import time

        end = time.monotonic() + limit_s
        for name, group in list(self.groups.items()):
            # cgroup v1 has no event for "empty": poll, bounded
            while not _try_remove(group) and time.monotonic() < end:  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            del self.groups[name]
