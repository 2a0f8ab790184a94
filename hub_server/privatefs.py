"""Files and directories only the hub's own user may read: 0600 and 0700, whatever the
umask (the database, blobs and the run cache hold private projects and tokens' hashes)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """``mkdir -p`` whose new directories are 0700; ``path`` itself is made 0700 even when it
    existed (a data directory made earlier under a permissive umask)."""
    created = []
    p = path
    while not p.exists() and p != p.parent:
        created.append(p)
        p = p.parent
    for d in reversed(created):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
    try:
        os.chmod(path, DIR_MODE)
    except PermissionError:  # not ours (a shared mount): leave it as its owner set it
        pass
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty (if missing) as 0600, or make an existing one 0600.

    An existing file is never opened: closing any descriptor of a SQLite database drops every
    POSIX lock this process holds on it (its open connections included), after which another
    process closing its last connection believes it is the last one, checkpoints and deletes
    the WAL under this process's feet ("disk I/O error", lost commits)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        try:
            os.chmod(path, FILE_MODE)
        except PermissionError:  # not ours (a shared mount): leave it as its owner set it
            pass
        return path
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def open_private(path: Path) -> IO[bytes]:
    """Open ``path`` for writing (truncated), created 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, "wb")
