"""Requests per second of ``/simple/<name>/`` (PEP 691 JSON and PEP 503 HTML): our hub against
pypiserver serving the same wheel files on the same machine, in one run.

    .venv/bin/python bench/hub_bench.py [--versions 30] [--duration 5] [--rounds 3]

Both servers run as separate processes on 127.0.0.1 (the hub: ``vf hub serve``, one uvicorn
process, SQLite + local blobs; pypiserver 2: one process on gevent when installed, else its
default server). The load generator is a bounded keep-alive HTTP/1.1 client on loopback: a fixed
number of connections, each sending one request at a time, for a fixed duration. Measurements
of the two servers are interleaved over several rounds and the median is reported, so that load
from other processes on the machine affects both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hub.wheelfactory import make_wheel  # noqa: E402

JSON = "application/vnd.pypi.simple.v1+json"
HTML = "text/html"
NAME = "bench-env"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {url}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server did not answer {url}")


@contextlib.contextmanager
def running(cmd: list[str], health: str) -> Iterator[None]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(health, proc)
        yield
    finally:
        proc.terminate()
        proc.wait(10)


# ------------------------------------------------------------------------- load generator


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool, int]:
    """Read one response; returns (status, keep_alive, body bytes)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    version, status = lines[0].split(" ", 2)[:2]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    size = 0
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            n = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            if n:
                size += len(await reader.readexactly(n))
            await reader.readexactly(2)
            if n == 0:
                break
    elif "content-length" in headers:
        size = len(await reader.readexactly(int(headers["content-length"])))
    else:
        size = len(await reader.read())
        return int(status), False, size
    keep = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
    return int(status), keep, size


async def measure(
    port: int, path: str, accept: str, duration: float, concurrency: int
) -> dict[str, float]:
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {accept}\r\n"
        "User-Agent: hub-bench\r\n\r\n"
    ).encode()
    ok = errors = 0
    latencies: list[float] = []
    stop = time.perf_counter() + duration

    async def worker() -> None:
        nonlocal ok, errors
        reader = writer = None
        while time.perf_counter() < stop:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            t0 = time.perf_counter()
            writer.write(request)
            assert reader is not None
            try:
                status, keep, _ = await _read_response(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()
                reader = writer = None
                errors += 1
                continue
            latencies.append(time.perf_counter() - t0)
            if status == 200:
                ok += 1
            else:
                errors += 1
            if not keep:
                writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    latencies.sort()
    p50 = latencies[len(latencies) // 2] if latencies else 0.0
    p99 = latencies[int(len(latencies) * 0.99)] if latencies else 0.0
    return {"rps": ok / elapsed, "errors": errors, "p50_ms": p50 * 1000, "p99_ms": p99 * 1000}


def content_type(port: int, path: str, accept: str) -> str:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Accept": accept})
    with urllib.request.urlopen(req) as r:
        return str(r.headers.get("content-type", "")).split(";")[0]


# ------------------------------------------------------------------------- setup


def publish_to_hub(port: int, data_dir: Path, wheels: list[Path]) -> None:
    import httpx

    from hub_server.services import open_service
    from hub_server.settings import Settings

    service = open_service(Settings(data_dir=data_dir))
    _, token = service.create_user("bench")
    service.engine.dispose()
    for w in wheels:
        with w.open("rb") as f:
            r = httpx.post(
                f"http://127.0.0.1:{port}/legacy/",
                files={"content": (w.name, f)},
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            )
        r.raise_for_status()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--versions", type=int, default=30, help="files in the project (default 30)")
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    ap.add_argument("--concurrency", type=int, default=16, help="connections")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="hub-bench-"))
    try:
        pkgs = work / "packages"
        wheels = [make_wheel(pkgs, NAME, f"1.{i}.0") for i in range(args.versions)]
        bindir = Path(sys.executable).parent

        server = "gevent" if importlib.util.find_spec("gevent") else "auto"
        hub_port, pp_port = free_port(), free_port()
        hub_cmd = [
            sys.executable,
            "-c",
            "from cli.main import main; main()",
            "hub",
            "serve",
            "--port",
            str(hub_port),
            "--data-dir",
            str(work / "hub"),
            "--log-level",
            "warning",
        ]
        pp_cmd = [
            str(bindir / "pypi-server"),
            "run",
            "-p",
            str(pp_port),
            "-i",
            "127.0.0.1",
            "--server",
            server,
            "-a",
            ".",
            "-P",
            ".",
            "--disable-fallback",
            str(pkgs),
        ]
        path = f"/simple/{NAME}/"
        cases = {
            "hub JSON": (hub_port, JSON),
            "pypiserver JSON": (pp_port, JSON),
            "hub HTML": (hub_port, HTML),
            "pypiserver HTML": (pp_port, HTML),
        }
        runs: dict[str, list[dict[str, float]]] = {label: [] for label in cases}
        with (
            running(hub_cmd, f"http://127.0.0.1:{hub_port}/healthz"),
            running(pp_cmd, f"http://127.0.0.1:{pp_port}/health"),
        ):
            publish_to_hub(hub_port, work / "hub", wheels)
            types = {label: content_type(port, path, acc) for label, (port, acc) in cases.items()}
            for port, accept in cases.values():  # warm up
                asyncio.run(measure(port, path, accept, 1.0, args.concurrency))
            # interleaved rounds, so that load from elsewhere hits both servers alike
            for _ in range(args.rounds):
                for label, (port, accept) in cases.items():
                    runs[label].append(
                        asyncio.run(measure(port, path, accept, args.duration, args.concurrency))
                    )

        def median(label: str, key: str) -> float:
            return statistics.median(r[key] for r in runs[label])

        print(
            f"{path} with {args.versions} files, {args.concurrency} connections, "
            f"{args.rounds} interleaved rounds of {args.duration:g}s (median); "
            f"pypiserver {version('pypiserver')} on {server}, hub on uvicorn {version('uvicorn')}"
        )
        print(f"{'server':<18}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'errors':>8}  content-type")
        for label in cases:
            errors = sum(int(r["errors"]) for r in runs[label])
            print(
                f"{label:<18}{median(label, 'rps'):>10.0f}{median(label, 'p50_ms'):>10.2f}"
                f"{median(label, 'p99_ms'):>10.2f}{errors:>8}  {types[label]}"
            )
        for kind in ("JSON", "HTML"):
            ratio = median(f"hub {kind}", "rps") / max(median(f"pypiserver {kind}", "rps"), 1e-9)
            print(f"ratio hub/pypiserver ({kind} request): {ratio:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
