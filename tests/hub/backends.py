"""The two storage stacks the hub suite runs on: SQLite + local directory, and
PostgreSQL + an S3 API server (moto in server mode), both started here."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until(check: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():  # type: ignore[operator]
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout:.0f}s")
        time.sleep(0.1)  # readiness polling of an external process, not test synchronisation


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield a libpq base URL: the server on 127.0.0.1:5432 when reachable, else a private
    cluster started from the Debian binaries."""
    import psycopg

    try:
        psycopg.connect(
            "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=3"
        ).close()
    except psycopg.OperationalError:
        pass
    else:
        yield "postgresql://postgres@127.0.0.1:5432"
        return
    with private_postgres_cluster() as url:
        yield url


@contextmanager
def private_postgres_cluster() -> Iterator[str]:
    """initdb + pg_ctl from the Debian PostgreSQL package, in a new temp dir, on a free port.
    (Directly under the temp root: as root the cluster runs as ``postgres``, which cannot
    enter pytest's private temp dirs.)"""
    initdbs = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not initdbs:
        raise RuntimeError(
            "no PostgreSQL reachable on 127.0.0.1:5432 and no initdb installed: install the "
            "Debian 'postgresql' package, or run only the SQLite half with -k 'not postgres'"
        )
    bindir = Path(initdbs[-1]).parent
    workdir = Path(tempfile.mkdtemp(prefix="vf-pg-"))
    data = workdir / "pgdata"
    data.mkdir(parents=True)
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the cluster as the postgres user
        shutil.chown(workdir, "postgres")
        shutil.chown(data, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"],
        check=True,
        capture_output=True,
    )
    port = free_port()
    subprocess.run(
        [
            *prefix,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-w",
            "-l",
            str(workdir / "pg.log"),
            "-o",
            f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
            capture_output=True,
        )
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def postgres_database(base_url: str) -> Iterator[str]:
    """A fresh, uniquely named database, dropped afterwards."""
    import psycopg

    name = f"vfhub_test_{uuid.uuid4().hex[:12]}"
    admin = base_url.replace("postgresql://", "postgresql://", 1) + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{base_url}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def moto_s3_server() -> Iterator[str]:
    """moto's S3 API server as a real process on a free loopback port; yields its URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until(lambda: httpx.get(url + "/moto-api/", timeout=1).status_code < 500, "moto")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
