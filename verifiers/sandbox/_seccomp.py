"""The sandbox's seccomp filter: a classic BPF program, assembled here, that bwrap installs
(``--seccomp FD``) before it starts the agent, so every process in the sandbox carries it.

Modelled on container runtimes' default profiles: the system calls a program needs are allowed;
those that reach into other processes (``ptrace``, ``process_vm_*``, ``pidfd_getfd``), expose
large kernel attack surface (``io_uring_*``, ``userfaultfd``, ``bpf``, ``perf_event_open``,
the key rings), or change the machine or the sandbox's own set-up (the mount family,
``unshare``/``setns``, ``kexec_*``, modules, handles to host files, swap, reboot, the clock) fail
with ``EPERM``. A system call of another architecture (32-bit ``int 0x80``, the x32 ABI) fails
too, so that no number escapes the list through another table.

The *nested* variant (``filter_program(nested=True)``, for a sandbox whose programs start
sandboxes of their own) lets through what bwrap needs to build one: ``unshare``, and ``mount``,
``umount2`` and ``pivot_root``, which the kernel then allows only in mount namespaces that the
caller's own new user namespace owns (the mounts it inherits stay locked, read-only ones
read-only). Everything else stays refused, and so does a netfilter netlink socket (nftables'
and iptables' configuration, the kernel code a new network namespace would otherwise expose to
the sandbox). See docs/security.md.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["DENIED", "NESTED_ALLOWED", "filter_program"]

# the names, with their numbers on x86_64 and aarch64
DENIED: dict[str, tuple[int, int | None]] = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "userfaultfd": (323, 282),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "perf_event_open": (298, 241),
    "bpf": (321, 280),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "unshare": (272, 97),
    "setns": (308, 268),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
    "syslog": (103, 116),
    "acct": (163, 89),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "adjtimex": (159, 171),
    "quotactl": (179, 60),
    "lookup_dcookie": (212, 18),
    "iopl": (172, None),
    "ioperm": (173, None),
}

#: what the nested variant lets through (bwrap building a sandbox inside the sandbox)
NESTED_ALLOWED = frozenset({"unshare", "mount", "umount2", "pivot_root"})
_SOCKET = (41, 198)  # socket(2) on x86_64 and aarch64
_AF_NETLINK = 16
_NETLINK_NETFILTER = 12

_ARCHES = {"x86_64": (0xC000003E, 0), "amd64": (0xC000003E, 0), "aarch64": (0xC00000B7, 1)}
_ARCHES["arm64"] = _ARCHES["aarch64"]
_X32_BIT = 0x40000000

_LD_ABS_W = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None, *, nested: bool = False) -> bytes:
    """The filter for this machine (``platform.machine()``), as bwrap reads it: an array of
    ``struct sock_filter``; ``nested``: the variant for a sandbox that may hold sandboxes
    (see the module docstring). Raises ``ValueError`` on an architecture it has no table
    for."""
    name = (machine or platform.machine()).lower()
    if name not in _ARCHES:
        raise ValueError(f"no seccomp table for the {name} architecture")
    arch, column = _ARCHES[name]
    deny = _insn(_RET_K, _RET_ERRNO | errno.EPERM)
    denied = {k: v for k, v in DENIED.items() if not (nested and k in NESTED_ALLOWED)}
    numbers = sorted({nr for nrs in denied.values() if (nr := nrs[column]) is not None})
    body = [_insn(_LD_ABS_W, 0)]  # seccomp_data.nr
    if arch == 0xC000003E:
        body += [_insn(_JGE_K, _X32_BIT, 0, 1), deny]
    for nr in numbers:
        body += [_insn(_JEQ_K, nr, 0, 1), deny]
    allow = _insn(_RET_K, _RET_ALLOW)
    if nested:  # socket(AF_NETLINK, *, NETLINK_NETFILTER): refused (the int arguments are
        # the low words of seccomp_data.args[0] and args[2], at offsets 16 and 32)
        body += [
            _insn(_JEQ_K, _SOCKET[column], 0, 5),
            _insn(_LD_ABS_W, 16),
            _insn(_JEQ_K, _AF_NETLINK, 0, 3),
            _insn(_LD_ABS_W, 32),
            _insn(_JEQ_K, _NETLINK_NETFILTER, 0, 1),
            deny,
        ]
    body.append(allow)
    head = [
        _insn(_LD_ABS_W, 4),  # seccomp_data.arch
        _insn(_JEQ_K, arch, 1, 0),
        _insn(_RET_K, _RET_ERRNO | errno.ENOSYS),  # another architecture's table: nothing
    ]
    return b"".join(head + body)
