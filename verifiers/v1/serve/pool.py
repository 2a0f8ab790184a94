"""``serve_env``: host a v1 env on one address, in this process or over worker processes.

With one worker the env runs in the serving process (:class:`EnvServer`). With more,
:class:`EnvServerPool` binds the address and brokers the same wire protocol to worker
processes, each an :class:`EnvServer` on a private ``ipc://`` socket: a run goes to the worker
with the fewest runs in flight, its deltas and reply come back to the requesting client,
health is answered by the broker itself, a cancel reaches the worker running the request.
An elastic pool starts one worker and adds one whenever the runs in flight reach 90% of
``workers * multiplex`` (up to ``max_workers``; None means twice the CPU cores); a static one
starts ``max_workers``. A worker that dies fails its runs in flight with an answer naming it,
and is replaced. A client that disconnects has its runs cancelled on their workers. The
broker authenticates clients and bounds frames as :class:`EnvServer` does; its workers listen
on ``ipc://`` sockets in a private (0700) directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing as mp
import os
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

import zmq
import zmq.asyncio

from verifiers.serve.security import (
    Limits,
    PayloadError,
    Peers,
    ServeAllow,
    ServeAuth,
    bounded_unpack,
    watch_disconnects,
)
from verifiers.v1.configs.env import EnvConfig
from verifiers.v1.serve.delta import EpisodeAssembly
from verifiers.v1.serve.encoding import pack, unpack
from verifiers.v1.serve.server import DEFAULT_ADDRESS, EnvServer
from verifiers.v1.serve.types import CancelRequest, CancelResponse, HealthResponse
from verifiers.v1.serve.wire import (
    MAX_FRAMES,
    PeerProtocols,
    Protocol,
    ServeProtocol,
    recv_bounded,
    reply_frames,
    whole_reply,
)

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

__all__ = ["EnvServerPool", "env_config_data", "serve_env"]

logger = logging.getLogger(__name__)

_READY = b"\x00ready"


def env_config_data(config: EnvConfig) -> dict[str, Any]:
    """``config`` as plain data (what crosses to a worker process; ``serve_env`` and
    :class:`EnvServer` rebuild the concrete config class from it)."""
    data: dict[str, Any] = config.model_dump(mode="json", serialize_as_any=True)
    return data


def _watch_death_pipe(death_pipe: Connection) -> None:
    """SIGTERM this process when the parent holding the pipe's other end is gone."""

    def watch() -> None:
        with contextlib.suppress(Exception):
            death_pipe.recv()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="vf-death-pipe").start()


def serve_env(
    *,
    max_workers: int | None = 1,
    address: str | None = None,
    log_setup: Callable[[], None] | None = None,
    config: EnvConfig | None = None,
    config_data: dict[str, Any] | None = None,
    max_concurrent: int | None = None,
    multiplex: int = 128,
    elastic: bool = True,
    address_queue: Any = None,
    death_pipe: Connection | None = None,
    keys_dir: str | None = None,
    insecure: bool = False,
    allow: ServeAllow | dict[str, Any] | None = None,
    limits: Limits | None = None,
    internal: bool = False,
    protocol: ServeProtocol = "auto",
) -> None:
    """Serve the env ``config`` (or its dump ``config_data``) at ``address`` until SIGTERM or
    SIGINT. ``max_workers`` 1 runs it in this process; more (or None: an elastic pool of up
    to twice the CPU cores) over worker processes. ``log_setup`` runs first, here and in
    every worker. ``keys_dir``/``insecure``/``allow``/``limits``/``protocol``: see
    :class:`EnvServer`."""
    security: dict[str, Any] = {
        "keys_dir": keys_dir,
        "insecure": insecure,
        "allow": allow,
        "limits": limits,
        "protocol": protocol,
    }
    if log_setup is not None:
        log_setup()
    if death_pipe is not None:
        _watch_death_pipe(death_pipe)
    if config is None and config_data is None:
        raise ValueError("serve_env needs the env: pass config= or config_data=")
    data = env_config_data(config) if config is not None else dict(config_data or {})
    bind = address or DEFAULT_ADDRESS
    try:
        if max_workers == 1:
            EnvServer.run_server(
                address_queue=address_queue,
                config_data=data,
                address=bind,
                max_concurrent=max_concurrent,
                internal=internal,
                **security,
            )
            return
        pool = EnvServerPool(
            data,
            max_workers=max_workers,
            address=bind,
            log_setup=log_setup,
            max_concurrent=max_concurrent,
            multiplex=multiplex,
            elastic=elastic,
            **security,
        )
        if address_queue is not None:
            address_queue.put(pool.address)
        asyncio.run(pool.serve_forever())
    except KeyboardInterrupt:
        pass


@dataclass
class _Worker:
    index: int
    address: str
    process: BaseProcess
    socket: zmq.asyncio.Socket
    death: Connection
    inflight: dict[bytes, tuple[bytes, bytes]] = field(default_factory=dict)
    """Internal id -> (client id, client request id) of the runs sent to it."""
    receiver: asyncio.Task[None] | None = None
    ready: bool = False
    """The worker answered its readiness probe (its env loaded)."""


class EnvServerPool:
    """The broker of a multi-worker env server (see the module docstring)."""

    def __init__(
        self,
        config_data: dict[str, Any],
        *,
        max_workers: int | None,
        address: str = DEFAULT_ADDRESS,
        log_setup: Callable[[], None] | None = None,
        max_concurrent: int | None = None,
        multiplex: int = 128,
        elastic: bool = True,
        keys_dir: str | None = None,
        insecure: bool = False,
        allow: ServeAllow | dict[str, Any] | None = None,
        limits: Limits | None = None,
        protocol: ServeProtocol = "auto",
    ) -> None:
        self.protocols = PeerProtocols(protocol)
        self.assemblies: dict[bytes, EpisodeAssembly] = {}
        """The runs of two-frame clients, by worker request id: their deltas gathered here."""
        if max_workers is None:  # bounded: an elastic pool never forks without limit
            max_workers = 2 * (os.cpu_count() or 1)
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1 or None, got {max_workers}")
        if not elastic and max_workers is None:
            raise ValueError("a static pool needs max_workers (its number of workers)")
        self.config_data = config_data
        self.max_workers = max_workers
        self.log_setup = log_setup
        self.max_concurrent = max_concurrent
        self.multiplex = multiplex
        self.elastic = elastic
        self.session = uuid.uuid4().hex[:12]
        self.workers: list[_Worker] = []
        self.routes: dict[tuple[bytes, bytes], tuple[_Worker, bytes]] = {}
        self._counter = 0
        self._closing = False
        self._failing: set[asyncio.Task[None]] = set()
        self.error: str | None = None
        """Why the pool cannot serve (a worker exited before its env loaded)."""
        self.auth = ServeAuth.resolve("server", keys_dir=keys_dir, insecure=insecure)
        self.allow = ServeAllow.from_env(allow)
        self.limits = limits or Limits.from_env()
        self.peers = Peers()
        self.stats = {"requests": 0, "refused": 0, "bad_frames": 0, "disconnects": 0}
        self.ipc_dir = tempfile.mkdtemp(prefix="vf-v1-serve-")  # 0700: this user only
        self.ctx = zmq.asyncio.Context()
        self.frontend = self.ctx.socket(zmq.ROUTER)
        self.frontend.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.frontend.setsockopt(zmq.SNDHWM, 0)
        self.frontend.setsockopt(zmq.RCVHWM, 0)
        self.frontend.setsockopt(zmq.LINGER, 0)
        self.frontend.setsockopt(zmq.MAXMSGSIZE, self.limits.max_message_bytes)
        self.gate = self.auth.secure_server(self.ctx, self.frontend)
        self.monitor = self.frontend.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.frontend.bind(address)
        self.address: str = self.frontend.getsockopt_string(zmq.LAST_ENDPOINT)

    # ------------------------------------------------------------------ workers

    def _spawn(self, index: int) -> _Worker:
        address = f"ipc://{self.ipc_dir}/{index}"
        reader, writer = mp.Pipe(duplex=False)
        process = mp.get_context("spawn").Process(
            target=serve_env,
            kwargs={
                "max_workers": 1,
                "address": address,
                "log_setup": self.log_setup,
                "config_data": self.config_data,
                "max_concurrent": self.max_concurrent,
                "death_pipe": reader,
                "internal": True,
                "protocol": "stream",  # the broker shapes each client's replies
                "allow": self.allow,
                "limits": self.limits,
            },
            name=f"vf-env-worker-{index}",
            daemon=False,
        )
        process.start()
        reader.close()
        socket = self.ctx.socket(zmq.DEALER)
        socket.setsockopt(zmq.SNDHWM, 0)
        socket.setsockopt(zmq.RCVHWM, 0)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(address)
        worker = _Worker(index, address, process, socket, writer)
        worker.receiver = asyncio.create_task(self._from_worker(worker))
        # answered once the worker's env loaded and it serves (queued until it binds)
        socket.send_multipart([_READY, b"health", pack({})])
        asyncio.get_running_loop().add_reader(process.sentinel, self._on_death, worker)
        logger.info("started env worker %d (pid %s)", index, process.pid)
        return worker

    def _pick(self) -> _Worker:
        inflight = sum(len(w.inflight) for w in self.workers)
        can_grow = self.max_workers is None or len(self.workers) < self.max_workers
        if self.elastic and can_grow and inflight + 1 > 0.9 * len(self.workers) * self.multiplex:
            self.workers.append(self._spawn(len(self.workers)))
        return min(self.workers, key=lambda w: len(w.inflight))

    async def _from_worker(self, worker: _Worker) -> None:
        while True:
            frames = await worker.socket.recv_multipart()
            if len(frames) != 3:
                continue
            iid, kind, data = frames
            if iid == _READY:
                answer = unpack(data)
                if answer.get("success"):
                    worker.ready = True
                else:
                    self.error = f"env worker {worker.index} cannot serve: {answer.get('error')}"
                continue
            route = worker.inflight.get(iid)
            if route is None:
                continue
            assembly = self.assemblies.get(iid)
            protocol: Protocol = "stream" if assembly is None else "two-frame"
            if kind == b"reply":
                del worker.inflight[iid]
                self.routes.pop(route, None)
                self.peers.done(*route)
                if assembly is not None:
                    del self.assemblies[iid]
                    data = whole_reply(assembly, data)
            elif assembly is not None:
                try:
                    assembly.apply(unpack(data))
                except Exception:  # the reply then names the missing trace
                    logger.warning("a delta of run %s did not apply", iid, exc_info=True)
                continue
            await self._send(route[0], route[1], kind, data, protocol)

    async def _send(
        self, cid: bytes, rid: bytes, kind: bytes, data: bytes, protocol: Protocol = "stream"
    ) -> None:
        frames = reply_frames(protocol, rid, kind, data)
        if frames is None:
            return
        try:
            sealed = self.auth.seal_frames([cid, *frames])
            await self.frontend.send_multipart(sealed, copy=False)
        except zmq.ZMQError as exc:  # the client is gone
            logger.debug("could not answer request %s: %s", rid[:8], exc)

    def _on_death(self, worker: _Worker) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(worker.process.sentinel)
        if self._closing:
            return
        logger.warning(
            "env worker %d (pid %s) died with exit code %s; failing its %d runs and replacing it",
            worker.index,
            worker.process.pid,
            worker.process.exitcode,
            len(worker.inflight),
        )
        if worker.receiver is not None:
            worker.receiver.cancel()
        worker.socket.close(linger=0)
        code = worker.process.exitcode
        if worker.ready:
            reason = (
                f"env worker {worker.index} died (exit code {code}) while running this "
                "episode; see its log"
            )
        else:  # its env never loaded: a replacement would fail the same way
            reason = self.error = (
                f"env worker {worker.index} exited (code {code}) before it could serve: the "
                "env failed to load in it; see its log for the reason"
            )
        error = pack({"success": False, "error": reason})
        for iid, (cid, rid) in worker.inflight.items():
            self.routes.pop((cid, rid), None)
            self.peers.done(cid, rid)
            gathered = self.assemblies.pop(iid, None) is not None
            protocol: Protocol = "two-frame" if gathered else "stream"
            failing = loop.create_task(self._send(cid, rid, b"reply", error, protocol))
            self._failing.add(failing)
            failing.add_done_callback(self._failing.discard)
        worker.inflight.clear()
        if worker.ready:
            self.workers[worker.index] = self._spawn(worker.index)

    # ------------------------------------------------------------------ serving

    async def serve_forever(self) -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop.set)
        await self.run(stop)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        count = 1 if self.elastic else (self.max_workers or 1)
        self.workers = [self._spawn(i) for i in range(count)]
        stopped = asyncio.ensure_future((stop or asyncio.Event()).wait())
        watching = asyncio.ensure_future(watch_disconnects(self.monitor, self._on_disconnect))
        try:
            while True:
                receiving = asyncio.ensure_future(recv_bounded(self.frontend, MAX_FRAMES))
                done, _ = await asyncio.wait(
                    {receiving, stopped}, return_when=asyncio.FIRST_COMPLETED
                )
                if stopped in done:
                    receiving.cancel()
                    break
                frames = receiving.result()
                if not frames:  # more frames than any request has: dropped unread
                    self.stats["bad_frames"] += 1
                    continue
                self.peers.seen(
                    frames[0].bytes, frames[0].get(zmq.SRCFD), self.monitor, self._on_disconnect
                )
                try:
                    await self._on_request([f.bytes for f in frames])
                except Exception:  # one bad message never stops the broker
                    self.stats["bad_frames"] += 1
                    logger.warning("a request could not be brokered", exc_info=True)
        finally:
            stopped.cancel()
            watching.cancel()
            await self.close()

    def _on_disconnect(self, fd: int) -> None:
        for cid, rids in self.peers.disconnected(fd):
            self.protocols.forget(cid)
            if rids:
                self.stats["disconnects"] += 1
                logger.warning("a client left with %d runs in flight: cancelling them", len(rids))
            for rid in rids:
                found = self.routes.get((cid, rid))
                if found is not None:
                    task = asyncio.ensure_future(self._cancel_on_worker(*found))
                    self._failing.add(task)
                    task.add_done_callback(self._failing.discard)

    async def _cancel_on_worker(self, worker: _Worker, iid: bytes) -> None:
        forward = CancelRequest(request_id=iid.decode()).model_dump(mode="json")
        with contextlib.suppress(zmq.ZMQError):
            await worker.socket.send_multipart([b"cancel-" + iid, b"cancel", pack(forward)])

    async def _on_request(self, frames: list[bytes]) -> None:
        frames = self.auth.open_frames(frames, self.stats)
        if len(frames) != 4:
            self.stats["bad_frames"] += 1
            logger.warning("ignoring a message of %d frames (expected 4)", len(frames))
            return
        received = time.monotonic()
        cid, rid, method, payload = frames
        self.stats["requests"] += 1
        raw: Any = None
        protocol = self.protocols.known_for(cid)
        if protocol is None or method == b"cancel":  # decoded only when it must be read
            try:
                raw = bounded_unpack(payload, self.limits)
            except PayloadError as exc:
                protocol = self.protocols.resolve(cid, method, None)
                await self._send(
                    cid, rid, b"reply", pack({"success": False, "error": str(exc)}), protocol
                )
                return
        protocol = self.protocols.resolve(cid, method, raw)
        answer: dict[str, Any] | None = None
        if method == b"health":
            if self.error is not None:
                answer = HealthResponse(success=False, error=self.error).model_dump(mode="json")
            elif not any(w.ready for w in self.workers):
                answer = HealthResponse(success=False).model_dump(mode="json")  # loading
            else:
                answer = HealthResponse().model_dump(mode="json")
        elif self.error is not None and method == b"run":
            answer = {"success": False, "error": self.error}
        elif method == b"cancel":
            found = None
            with contextlib.suppress(Exception):
                target = CancelRequest.model_validate(raw).request_id
                found = self.routes.get((cid, target.encode()))
            if found is not None:
                await self._cancel_on_worker(*found)
            answer = CancelResponse(cancelled=found is not None).model_dump(mode="json")
        if answer is not None:
            await self._send(cid, rid, b"reply", pack(answer), protocol)
            self.protocols.answered(cid, method, received, bool(answer.get("success")))
            return
        worker = self._pick()
        self._counter += 1
        iid = b"%d" % self._counter
        worker.inflight[iid] = (cid, rid)
        self.routes[(cid, rid)] = (worker, iid)
        self.peers.add(cid, rid)
        if protocol == "two-frame":
            self.assemblies[iid] = EpisodeAssembly()
        await worker.socket.send_multipart([iid, method, payload])

    async def close(self) -> None:
        self._closing = True
        loop = asyncio.get_running_loop()
        for worker in self.workers:
            loop.remove_reader(worker.process.sentinel)
            if worker.receiver is not None:
                worker.receiver.cancel()
            if worker.process.is_alive():
                worker.process.terminate()
        await asyncio.to_thread(_join, [w.process for w in self.workers])
        for worker in self.workers:
            worker.socket.close(linger=0)
            worker.death.close()
        self.frontend.disable_monitor()
        self.monitor.close(linger=0)
        self.frontend.close(linger=0)
        if self.gate is not None:
            self.gate.stop()
        self.ctx.term()
        import shutil

        shutil.rmtree(self.ipc_dir, ignore_errors=True)


def _join(processes: list[BaseProcess], timeout: float = 30.0) -> None:
    for process in processes:
        process.join(timeout)
        if process.is_alive():
            logger.warning(
                "env worker pid %s did not stop in %ss; killing it", process.pid, timeout
            )
            process.kill()
            process.join(5)
