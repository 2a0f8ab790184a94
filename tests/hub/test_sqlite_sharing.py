"""One SQLite hub shared by several processes (the server, `vf hub worker`, `vf hub ...`
commands): a second service opened in a process that already has the database open must not
drop that process's locks, or the next process to close its connection deletes the WAL (the
commits in it are lost and every later query fails with "disk I/O error")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select

from hub_server import models as m
from hub_server.services import open_service
from hub_server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]

#: another process: opens the hub's database, counts the users, closes (as a CLI command does)
_OTHER = """
import sys
from sqlalchemy import func, select
from hub_server import models as m
from hub_server.db import make_engine, make_sessionmaker
engine = make_engine(sys.argv[1])
with make_sessionmaker(engine)() as db:
    print(db.scalar(select(func.count()).select_from(m.User)))
engine.dispose()
"""


def _held_locks(path: Path) -> int:
    """How many POSIX locks this process holds on ``path`` (from /proc/locks)."""
    inode, pid = os.stat(path).st_ino, str(os.getpid())
    held = 0
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()
        if "POSIX" in parts and pid in parts:
            if int(parts[parts.index(pid) + 1].rsplit(":", 1)[-1]) == inode:
                held += 1
    return held


def test_a_second_service_in_the_process_keeps_the_wal_of_the_first(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = open_service(settings)
    try:
        first.create_user("alice")  # committed into the WAL, not yet checkpointed
        db_file = settings.data_dir / "hub.db"
        assert _held_locks(db_file) >= 1  # an open WAL connection holds a shared lock
        second = open_service(settings.with_(auto_migrate=False))
        second.engine.dispose()
        assert _held_locks(db_file) >= 1, "opening a second service dropped the first's locks"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        other = subprocess.run(
            [sys.executable, "-c", _OTHER, settings.resolved_database_url],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert other.returncode == 0, other.stderr
        assert other.stdout.split() == ["1"]
        # the other process was not the last connection: the WAL (alice) is still there
        assert (settings.data_dir / "hub.db-wal").exists()
        first.create_user("bob")  # no "disk I/O error"
        with first.session() as db:
            assert db.scalar(select(func.count()).select_from(m.User)) == 2
    finally:
        first.engine.dispose()
    # and the data dir's files are still private (the existing file was chmod-ed, not opened)
    assert (settings.data_dir / "hub.db").stat().st_mode & 0o777 == 0o600
