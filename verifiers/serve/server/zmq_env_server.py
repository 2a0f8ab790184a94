"""``ZMQEnvServer``: an environment served in its own process to a trainer's orchestrator.

Start it in a spawned process, as prime-rl does::

    mp.get_context("spawn").Process(
        target=ZMQEnvServer.run_server,
        args=(env_id, env_args, extra_env_kwargs, log_level, log_dir),
        kwargs=dict(address="tcp://127.0.0.1:5555", num_workers=1),
    ).start()

or in a running loop: ``await ZMQEnvServer(env_id, address=...).run()``.

What it does:

- loads the environment (``vf.load_environment(env_id, **env_args)``, then
  ``env.set_kwargs(**extra_env_kwargs)``); when that fails, every health check and request is
  answered with the reason (one clear error, not a hang);
- runs each request (``run_rollout`` / ``run_group``) as its own task, all concurrently, and
  sends each result back the moment it is ready;
- cancels a request on the client's cancel message, and all of a client's requests when the
  client disconnects (its rollouts' cleanup handlers run: sandboxes are released);
- on SIGTERM/SIGINT (or when the parent process dies) cancels what is in flight, runs the
  environment's cleanup and teardown handlers, and exits;
- with ``num_workers > 1``, runs that many worker processes (each one such server on a
  private socket) and hands each request to the least busy one; a worker that dies is
  restarted and its requests are run again, once: a request whose worker dies twice is
  answered with an error (a poison request cannot kill workers forever).

Security (:mod:`verifiers.serve.security`): clients authenticate with ZeroMQ CURVE keys (by
default the per-user key pair, so a trainer of the same user connects with no configuration;
``keys_dir=`` or ``VF_SERVE_KEYS_DIR`` for explicit keys, ``insecure=True`` for none); a
request's client config may name only endpoints the server's ``allow=`` (:class:`ServeAllow`)
permits; every frame is bounded by ``limits=`` (:class:`Limits`) before it is decoded; the
model-client cache keeps at most 32 clients.

The wire protocol is :mod:`verifiers.serve.protocol` (that of classic ``verifiers`` 0.3.x).
The sockets are plain (non-asyncio) ZeroMQ sockets driven by the event loop's reader
callbacks: no polling, no per-message task for I/O.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing as mp
import os
import tempfile
import uuid
from typing import TYPE_CHECKING, Any, cast

import zmq

from verifiers.serve.protocol import CANCEL, HEALTH_PING, pack, unpack
from verifiers.serve.security import ClientLRU, Limits, ServeAllow, ServeAuth, bounded_unpack
from verifiers.serve.server.env_server import EnvServer, load_classic_env, run_classic_request

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from verifiers.classic.env_mixin import ClassicEnvironment as Environment
    from verifiers.clients.base import Client

__all__ = ["EnvServer", "ZMQEnvServer"]

logger = logging.getLogger("verifiers.serve.server")


def _fd(sock: zmq.Socket[bytes]) -> int:
    """The socket's notification descriptor (edge-triggered: check ``_events`` after it)."""
    return cast(int, sock.getsockopt(zmq.FD))


def _events(sock: zmq.Socket[bytes]) -> int:
    return cast(int, sock.getsockopt(zmq.EVENTS))


_OK = pack({"success": True, "error": None})


class ZMQEnvServer(EnvServer):
    """The env server on a ZeroMQ ROUTER socket at ``address`` (see the module docstring)."""

    def __init__(
        self,
        *args: Any,
        address: str = "tcp://127.0.0.1:5000",
        keys_dir: str | None = None,
        insecure: bool = False,
        allow: ServeAllow | dict[str, Any] | None = None,
        limits: Limits | None = None,
        **kwargs: Any,
    ) -> None:
        internal = bool(kwargs.pop("internal", False))
        super().__init__(*args, **kwargs)
        self.address = address
        self.keys_dir = keys_dir
        self.insecure = insecure
        # a pool's worker listens on a private ipc socket only its parent reaches
        self.auth = (
            ServeAuth(mode="insecure", source="internal")
            if internal
            else ServeAuth.resolve("server", keys_dir=keys_dir, insecure=insecure)
        )
        self.allow = (
            allow if isinstance(allow, ServeAllow) and internal else ServeAllow.from_env(allow)
        )
        self.limits = limits or Limits.from_env()
        self._gate: Any = None
        self.env: Environment | None = None
        self.load_error: str | None = None
        self._ctx: zmq.Context[zmq.Socket[bytes]] | None = None
        self._sock: zmq.Socket[bytes] | None = None
        self._monitor: zmq.Socket[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: dict[tuple[bytes, bytes], asyncio.Task[None]] = {}
        self._client_requests: dict[bytes, set[bytes]] = {}
        self._client_fd: dict[bytes, int] = {}
        self._fd_clients: dict[int, set[bytes]] = {}
        self._clients: ClientLRU[Client] = ClientLRU(32)
        self._drain_scheduled = False
        self._shutting_down = False
        self._pool: _WorkerPool | None = None
        self.stats = {"requests": 0, "cancelled": 0, "disconnects": 0, "refused": 0}

    # ------------------------------------------------------------------ lifecycle

    async def serve(self, stop_event: asyncio.Event | None = None) -> None:
        """Bind, load the environment, and answer requests until ``stop_event`` is set."""
        self._loop = asyncio.get_running_loop()
        self._ctx = zmq.Context()
        sock = self._ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, self.limits.max_message_bytes)
        self._gate = self.auth.secure_server(self._ctx, sock)
        self._monitor = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        sock.bind(self.address)
        self._sock = sock
        self._loop.add_reader(_fd(sock), self._schedule_drain)
        self._loop.add_reader(_fd(self._monitor), self._drain_monitor)
        # a ZeroMQ socket's FD signals only after a read found its queue empty: read once now
        self._drain_monitor()
        logger.info("env server for %s listening on %s", self.env_id, self.address)
        if self.num_workers > 1:
            self._pool = _WorkerPool(self)
            await self._pool.start()
        else:
            await self._load_env()
        self._schedule_drain()
        await (stop_event or asyncio.Event()).wait()

    async def _load_env(self) -> None:
        self.env, self.load_error = load_classic_env(
            self.env_id, self.env_args, self.extra_env_kwargs, "the env server"
        )
        if self.env is not None:
            logger.info("loaded environment %s", self.env_id)

    async def close(self) -> None:
        """Cancel what is in flight (cleanup handlers run), tear the environment down, close
        the sockets."""
        self._shutting_down = True
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        if tasks:
            logger.info("cancelling %d requests in flight", len(tasks))
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()
        if self.env is not None:
            try:
                await self.env.close()
            except Exception:
                logger.exception("environment teardown failed")
            cache = self.env.__dict__.get("_client_cache")
            if cache is not None:
                await cache.close()
        await self._clients.close()
        loop = self._loop
        if loop is not None and self._sock is not None:
            loop.remove_reader(_fd(self._sock))
        if loop is not None and self._monitor is not None:
            loop.remove_reader(_fd(self._monitor))
        if self._sock is not None:
            self._sock.disable_monitor()
            self._sock.close(linger=0)
        if self._monitor is not None:
            self._monitor.close(linger=0)
        if self._gate is not None:
            self._gate.stop()
            self._gate = None
        if self._ctx is not None:
            self._ctx.term()
        self._sock = self._monitor = None
        self._ctx = None
        if self.address.startswith("ipc://"):
            try:
                os.unlink(self.address[len("ipc://") :])
            except OSError:
                pass
        logger.info("env server for %s shut down", self.env_id)

    # ------------------------------------------------------------------ socket I/O

    def _schedule_drain(self) -> None:
        if not self._drain_scheduled and self._loop is not None:
            self._drain_scheduled = True
            self._loop.call_soon(self._drain)

    def _drain(self) -> None:
        """Read every message waiting on the socket (its FD is edge-triggered)."""
        self._drain_scheduled = False
        sock = self._sock
        if sock is None:
            return
        recv = sock.recv_multipart
        while _events(sock) & zmq.POLLIN:
            try:
                frames = recv(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            if self.auth.signs:
                data = [f.bytes for f in frames]
                if len(data) != 4 or not self.auth.verify(data[1], data[2:]):
                    self.stats["refused"] += 1
                    logger.warning("refused a message without a valid signature")
                    continue
                frames = [frames[0], *frames[2:]]
            if len(frames) != 3:
                logger.warning("ignoring a message of %d frames (expected 3)", len(frames))
                continue
            cid = frames[0].bytes
            if cid not in self._client_fd:
                self._register_client(cid, frames[0].get(zmq.SRCFD))
            self._on_message(cid, frames[1].bytes, frames[2].bytes)

    def _register_client(self, cid: bytes, fd: int) -> None:
        if fd in self._fd_clients:
            # a new connection can reuse the descriptor of one that closed: the close was
            # reported on the monitor socket before the new connection existed, so handle it
            # first, or this client would be taken for the closed one
            self._drain_monitor()
        self._client_fd[cid] = fd
        self._fd_clients.setdefault(fd, set()).add(cid)

    def _drain_monitor(self) -> None:
        from zmq.utils.monitor import parse_monitor_message

        mon = self._monitor
        if mon is None:
            return
        while _events(mon) & zmq.POLLIN:
            try:
                msg = parse_monitor_message(mon.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                break
            if msg["event"] == zmq.EVENT_DISCONNECTED:
                self._on_disconnect(int(msg["value"]))

    def _on_disconnect(self, fd: int) -> None:
        for cid in self._fd_clients.pop(fd, set()):
            self._client_fd.pop(cid, None)
            rids = self._client_requests.pop(cid, set())
            if rids:
                self.stats["disconnects"] += 1
                logger.warning(
                    "a client disconnected with %d requests in flight: cancelling them", len(rids)
                )
            for rid in rids:
                self._cancel(cid, rid)

    def _send(self, cid: bytes, rid: bytes, payload: bytes) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            if self.auth.signs:
                sock.send_multipart(
                    (cid, self.auth.sign((rid, payload)), rid, payload), zmq.NOBLOCK
                )
            else:
                sock.send_multipart((cid, rid, payload), zmq.NOBLOCK, copy=len(payload) < 65536)
        except zmq.ZMQError as e:  # the client is gone
            logger.debug("could not answer request %s: %s", rid[:8], e)
        # sending may have consumed the FD's edge: look for waiting messages
        if _events(sock) & zmq.POLLIN:
            self._schedule_drain()

    def _on_message(self, cid: bytes, rid: bytes, payload: bytes) -> None:
        if payload == HEALTH_PING:
            self._send(cid, rid, self._health())
            return
        if payload == CANCEL:
            self._cancel(cid, rid)
            return
        self.stats["requests"] += 1
        if self._pool is not None:
            self._pool.dispatch(cid, rid, payload)
            return
        loop = self._loop
        assert loop is not None
        key = (cid, rid)
        task = loop.create_task(self._run_request(cid, rid, payload))
        self._tasks[key] = task
        self._client_requests.setdefault(cid, set()).add(rid)
        task.add_done_callback(functools.partial(self._forget_done, key))

    def _forget_done(self, key: tuple[bytes, bytes], _task: asyncio.Task[None]) -> None:
        self._forget(key)

    def _forget(self, key: tuple[bytes, bytes]) -> None:
        self._tasks.pop(key, None)
        rids = self._client_requests.get(key[0])
        if rids is not None:
            rids.discard(key[1])

    def _cancel(self, cid: bytes, rid: bytes) -> None:
        if self._pool is not None:
            self._pool.cancel(cid, rid)
            return
        task = self._tasks.get((cid, rid))
        if task is not None and not task.done():
            self.stats["cancelled"] += 1
            task.cancel()

    def _health(self) -> bytes:
        error = self.load_error
        if error is None and self._pool is not None:
            error = self._pool.error
        if error is not None:
            return pack({"success": False, "error": error})
        if self.env is None and (self._pool is None or not self._pool.ready):
            return pack({"success": False, "error": None})  # still loading
        return _OK

    # ------------------------------------------------------------------ requests

    def _client(self, config: Any) -> Client:
        from verifiers.utils.client_utils import client_from_config

        return self._clients.acquire(pack(config), lambda: client_from_config(config))

    async def _run_request(self, cid: bytes, rid: bytes, payload: bytes) -> None:
        try:
            response = await self._answer(bounded_unpack(payload, self.limits))
            data = pack(response)
        except asyncio.CancelledError:
            if not self._shutting_down:
                self._send(cid, rid, pack({"success": False, "error": "Request was cancelled"}))
            return
        except Exception as e:
            logger.error("request %s failed", rid[:8], exc_info=True)
            data = pack({"success": False, "error": f"{type(e).__name__}: {e}"})
        self._send(cid, rid, data)

    async def _answer(self, request: Any) -> dict[str, Any]:
        if self.load_error is not None:
            return {"success": False, "error": self.load_error}
        env = self.env
        if env is None:
            return {"success": False, "error": "the environment is still loading"}
        if not isinstance(request, dict):
            return {"success": False, "error": "a request must be a msgpack map"}
        kind = request.get("request_type")
        if kind not in ("run_rollout", "run_group"):
            return {
                "success": False,
                "error": f"unknown request_type {kind!r}; expected 'run_rollout' or 'run_group'",
            }
        config = request.get("client_config") or {}
        refused = self.allow.check_classic(config)
        if refused is not None:
            self.stats["refused"] += 1
            return {"success": False, "error": f"refused: {refused}"}
        client = self._client(config)
        try:
            return await run_classic_request(env, client, kind, request)
        finally:
            self._clients.release(client)


class _Worker:
    """One worker process of a multi-worker server: its private address and its requests."""

    def __init__(self, index: int, address: str, process: BaseProcess, sock: zmq.Socket[bytes]):
        self.index = index
        self.address = address
        self.process = process
        self.sock = sock
        # iid -> (cid, rid, payload, runs: how many workers were given it)
        self.pending: dict[bytes, tuple[bytes, bytes, bytes, int]] = {}
        self.ready = False


class _WorkerPool:
    """Worker processes behind the server's socket: least-busy dispatch, cancels forwarded,
    a dead worker restarted and its requests run again once (then answered with an error)."""

    def __init__(self, server: ZMQEnvServer) -> None:
        self.server = server
        self.session = uuid.uuid4().hex[:12]
        self.ipc_dir = tempfile.mkdtemp(prefix="vf-serve-")  # 0700: only this user connects
        self.workers: list[_Worker] = []
        self.by_request: dict[tuple[bytes, bytes], tuple[_Worker, bytes]] = {}
        self.error: str | None = None
        self.ready = False
        self._counter = 0
        self._death_reader, self._death_writer = mp.Pipe(duplex=False)
        self._closing = False

    async def start(self) -> None:
        for i in range(self.server.num_workers):
            self.workers.append(self._spawn(i))
        await asyncio.gather(*(self._wait_ready(w) for w in self.workers))
        self.ready = self.error is None

    def _spawn(self, index: int) -> _Worker:
        s = self.server
        address = f"ipc://{self.ipc_dir}/worker{index}"
        process = mp.get_context("spawn").Process(
            target=type(s).run_server,
            args=(
                s.env_id,
                s.env_args,
                s.extra_env_kwargs,
                s.log_level,
                s.log_dir,
                s.console_logging,
                s.file_logging,
                s.json_logging,
            ),
            kwargs={
                "address": address,
                "worker_id": index,
                "death_pipe": self._death_reader,
                "internal": True,
                "allow": s.allow,
                "limits": s.limits,
            },
            name=f"{s.env_id}-worker{index}",
            daemon=False,
        )
        process.start()
        assert s._ctx is not None and s._loop is not None
        sock = s._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(address)
        worker = _Worker(index, address, process, sock)
        s._loop.add_reader(_fd(sock), lambda: self._drain(worker))
        s._loop.add_reader(process.sentinel, lambda: self._on_death(worker))
        logger.info("started env worker %d (pid %s)", index, process.pid)
        return worker

    async def _wait_ready(self, worker: _Worker) -> None:
        """Ping the worker until it has loaded the environment (or says why it could not)."""
        while not worker.ready and self.error is None and not self._closing:
            if not worker.process.is_alive():
                self.error = (
                    f"env worker {worker.index} exited with code {worker.process.exitcode} "
                    "before it was ready; see its log"
                )
                return
            worker.sock.send_multipart((b"\x00ready", HEALTH_PING), zmq.NOBLOCK)
            self._drain(worker)
            await asyncio.sleep(0.05)

    def _drain(self, worker: _Worker) -> None:
        sock = worker.sock
        while not sock.closed and _events(sock) & zmq.POLLIN:
            try:
                iid, payload = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            if iid == b"\x00ready":
                answer = unpack(payload)
                if answer.get("success"):
                    worker.ready = True
                elif answer.get("error"):
                    self.error = str(answer["error"])
                continue
            entry = worker.pending.pop(iid, None)
            if entry is None:
                continue
            cid, rid = entry[0], entry[1]
            self.by_request.pop((cid, rid), None)
            rids = self.server._client_requests.get(cid)
            if rids is not None:
                rids.discard(rid)
            self.server._send(cid, rid, payload)

    def dispatch(self, cid: bytes, rid: bytes, payload: bytes) -> None:
        worker = min(self.workers, key=lambda w: len(w.pending))
        self._counter += 1
        iid = b"%d" % self._counter
        worker.pending[iid] = (cid, rid, payload, 1)
        self.by_request[(cid, rid)] = (worker, iid)
        self.server._client_requests.setdefault(cid, set()).add(rid)
        worker.sock.send_multipart((iid, payload), zmq.NOBLOCK)
        self._drain(worker)

    def cancel(self, cid: bytes, rid: bytes) -> None:
        found = self.by_request.pop((cid, rid), None)
        if found is None:
            return
        worker, iid = found
        worker.pending.pop(iid, None)
        self.server.stats["cancelled"] += 1
        worker.sock.send_multipart((iid, CANCEL), zmq.NOBLOCK)

    def _on_death(self, worker: _Worker) -> None:
        loop = self.server._loop
        assert loop is not None
        loop.remove_reader(worker.process.sentinel)
        if self._closing:
            return
        logger.warning(
            "env worker %d (pid %s) died with exit code %s: restarting it and running its %d "
            "requests again (once)",
            worker.index,
            worker.process.pid,
            worker.process.exitcode,
            len(worker.pending),
        )
        loop.remove_reader(_fd(worker.sock))
        worker.sock.close(linger=0)
        fresh = self._spawn(worker.index)
        self.workers[worker.index] = fresh
        for cid, rid, payload, runs in worker.pending.values():
            if runs >= 2:  # it killed a worker twice: answer it instead of a third run
                self.by_request.pop((cid, rid), None)
                rids = self.server._client_requests.get(cid)
                if rids is not None:
                    rids.discard(rid)
                error = (
                    f"env worker {worker.index} died (exit code {worker.process.exitcode}) "
                    "running this request, and again when it was retried; not retrying it "
                    "again (see the worker log)"
                )
                self.server._send(cid, rid, pack({"success": False, "error": error}))
                continue
            self._counter += 1
            iid = b"%d" % self._counter
            fresh.pending[iid] = (cid, rid, payload, runs + 1)
            self.by_request[(cid, rid)] = (fresh, iid)
            fresh.sock.send_multipart((iid, payload), zmq.NOBLOCK)

    async def close(self) -> None:
        self._closing = True
        loop = self.server._loop
        for w in self.workers:
            if loop is not None:
                loop.remove_reader(w.process.sentinel)
                if not w.sock.closed:
                    loop.remove_reader(_fd(w.sock))
            if w.process.is_alive():
                w.process.terminate()  # SIGTERM: the worker cancels and cleans up
        await asyncio.to_thread(_join_all, [w.process for w in self.workers])
        for w in self.workers:
            w.sock.close(linger=0)
        self._death_writer.close()
        self._death_reader.close()
        import shutil

        shutil.rmtree(self.ipc_dir, ignore_errors=True)


def _join_all(processes: list[BaseProcess], timeout: float = 30.0) -> None:
    for p in processes:
        p.join(timeout)
        if p.is_alive():
            logger.warning("env worker pid %s did not stop within %ss: killing it", p.pid, timeout)
            p.kill()
            p.join(5)


# names 0.3.x's version of this module imports, served on first use (verifiers.classic.forward)
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
