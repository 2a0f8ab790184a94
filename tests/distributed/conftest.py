"""A real multi-node Ray cluster on this machine, started with Ray's own ``ray start``.

Three nodes (a head and two more), each its own ``ray start --block`` process with 2 logical
CPUs, a small object store and a custom resource naming it (``node_a``, ``node_b``,
``node_c``), so that a test can stop one node (its ``ray start`` process ends the node's
raylet and workers) without touching the others, or any other Ray on the machine.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

RAY_ENV = Path(__file__).resolve().parent / "ray_env"

# Ray's token authentication with the test session's own token, for every node, this driver
# and the vf-eval drivers the tests start (not whatever ~/.ray/auth_token holds). Set when this
# conftest is collected, before any test here imports Ray, which reads them once per process.
os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
NODES = ("node_a", "node_b", "node_c")
START_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    address: str
    temp_dir: Path
    nodes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    node_ids: dict[str, str] = field(default_factory=dict)

    def start_node(self, name: str, head: bool = False) -> None:
        ray_bin = Path(sys.executable).parent / "ray"
        args = [
            str(ray_bin),
            "start",
            "--block",
            "--num-cpus=2",
            "--num-gpus=0",
            "--memory=2000000000",
            "--object-store-memory=80000000",
            f"--resources={json.dumps({name: 1})}",
            "--disable-usage-stats",
            f"--dashboard-agent-listen-port={_free_port()}",
            f"--dashboard-agent-grpc-port={_free_port()}",
            f"--metrics-export-port={_free_port()}",
            f"--runtime-env-agent-port={_free_port()}",
            f"--node-manager-port={_free_port()}",
            f"--object-manager-port={_free_port()}",
        ]
        if head:
            args += [
                "--head",
                f"--port={self.address.rsplit(':', 1)[1]}",
                "--include-dashboard=false",
                f"--temp-dir={self.temp_dir}",
            ]
        else:
            args += [f"--address={self.address}"]
        log = (self.temp_dir / f"{name}.log").open("wb")
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}  # the token: see ray_cluster
        self.nodes[name] = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )

    def stop_node(self, name: str) -> None:
        proc = self.nodes.pop(name)
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)

    def log_tail(self) -> str:
        parts = []
        for name in NODES:
            path = self.temp_dir / f"{name}.log"
            if path.is_file():
                parts.append(f"--- {name}\n{path.read_text(errors='replace')[-2000:]}")
        return "\n".join(parts)


def _wait_for(cluster: Cluster, count: int) -> None:
    """Until the driver sees ``count`` alive nodes (bounded by START_TIMEOUT_S)."""
    import ray

    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        alive = [n for n in ray.nodes() if n["Alive"]]
        if len(alive) >= count:
            for n in alive:
                for name in NODES:
                    if name in n["Resources"]:
                        cluster.node_ids[name] = n["NodeID"]
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(alive)} of {count} Ray nodes came up\n{cluster.log_tail()}")
        time.sleep(0.5)  # polling the cluster's own view, bounded by the deadline


def _connect(cluster: Cluster) -> None:
    """Once the head says it started: its address (the IP it chose) and this driver on it."""
    import ray

    log = cluster.temp_dir / "node_a.log"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        found = re.search(r"ray start --address='([^']+)'", _plain(log.read_text(errors="replace")))
        if found:
            cluster.address = found.group(1)
            break
        if time.monotonic() > deadline or cluster.nodes["node_a"].poll() is not None:
            raise RuntimeError(f"the Ray head did not start\n{cluster.log_tail()}")
        time.sleep(0.5)  # polling the head's log for its address, bounded by the deadline
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Cluster]:
    """Three Ray nodes on this machine and this process connected to them as the driver."""
    temp_dir = Path(tempfile.mkdtemp(prefix="vfray-", dir="/tmp"))
    cluster = Cluster(address=f"127.0.0.1:{_free_port()}", temp_dir=temp_dir)
    import ray

    try:
        cluster.start_node("node_a", head=True)
        _connect(cluster)
        for count, name in enumerate(NODES[1:], start=2):
            cluster.start_node(name)  # one at a time, as Ray's own multi-node tests do
            _wait_for(cluster, count)
        yield cluster
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for name in reversed(list(cluster.nodes)):
            cluster.stop_node(name)
