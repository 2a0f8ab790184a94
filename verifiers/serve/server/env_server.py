"""``EnvServer``: the base of env servers (classic ``verifiers.serve.server.env_server``).

It holds the settings (positional order as classic ``verifiers`` and prime-rl pass them), sets
up logging, and runs the lifecycle: :meth:`EnvServer.run` serves until SIGTERM/SIGINT (or the
parent's death), then closes; :meth:`EnvServer.run_server` is the target of a spawned process.
:class:`~verifiers.serve.ZMQEnvServer` implements the transport.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing as mp
import os
import signal
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

__all__ = [
    "EnvServer",
    "load_classic_env",
    "run_classic_request",
    "serve_until_stopped",
    "setup_serve_logging",
]

logger = logging.getLogger("verifiers.serve.server")


class EnvServer(ABC):
    """Base of env servers: the settings, logging, the ``run``/``run_server`` lifecycle;
    subclasses implement :meth:`serve` and :meth:`close`.

    Args (positional order as classic ``verifiers`` and prime-rl pass them):
        env_id: the environment to load (``vf.load_environment``).
        env_args: its ``load_environment`` arguments.
        extra_env_kwargs: set on the environment after loading (``env.set_kwargs``).
        log_level, log_dir: logging level; a directory for ``env_server.log``.
        console_logging, file_logging, json_logging: where logs go (JSON lines with
            ``json_logging``).
        num_workers: worker processes (1: the environment runs in this process).
        death_pipe: the read end of a pipe whose writer the parent holds; when the parent dies
            the server shuts down.
    """

    def __init__(
        self,
        env_id: str,
        env_args: dict[str, Any] | None = None,
        extra_env_kwargs: dict[str, Any] | None = None,
        log_level: str | None = None,
        log_dir: str | None = None,
        console_logging: bool = True,
        file_logging: bool = True,
        json_logging: bool = False,
        *,
        num_workers: int = 1,
        worker_heartbeat_timeout: float = 30.0,
        stats_log_interval: float = 10.0,
        death_pipe: Connection | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 1:
            from verifiers.errors import ConfigError

            raise ConfigError(f"num_workers must be an integer >= 1, got {num_workers!r}")
        self.env_id = env_id
        self.env_args = dict(env_args or {})
        self.extra_env_kwargs = dict(extra_env_kwargs or {})
        self.log_level = log_level
        self.log_dir = log_dir
        self.console_logging = console_logging
        self.file_logging = file_logging
        self.json_logging = json_logging
        self.num_workers = num_workers
        self.worker_heartbeat_timeout = worker_heartbeat_timeout
        self.stats_log_interval = stats_log_interval
        self.death_pipe = death_pipe
        self.worker_id: int | None = kwargs.pop("worker_id", None)
        self.watch_parent: bool = bool(kwargs.pop("watch_parent", False))
        if kwargs:
            logger.debug("EnvServer ignores options %s", sorted(kwargs))
        self._setup_logging()

    def _setup_logging(self) -> None:
        log_file = None
        if self.log_dir is not None and self.file_logging:
            path = (
                self.get_log_file(self.log_dir)
                if self.worker_id is None
                else Path(self.log_dir) / f"env_worker_{self.worker_id}.log"
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            log_file = str(path)
        setup_serve_logging(self.log_level, log_file, self.console_logging, self.json_logging)

    @abstractmethod
    async def serve(self, stop_event: asyncio.Event | None = None) -> None:
        """Answer clients until ``stop_event`` is set."""

    @abstractmethod
    async def close(self) -> None:
        """Cancel what is in flight, tear the environment down, release the sockets."""

    async def run(self) -> None:
        """Serve until SIGTERM/SIGINT (or the parent's death), then shut down cleanly."""
        await serve_until_stopped(self.serve, self.close, self.death_pipe, self.watch_parent)

    @staticmethod
    def get_log_file(log_dir: str) -> Path:
        """The server's log file in ``log_dir``."""
        return Path(log_dir) / "env_server.log"

    @staticmethod
    def get_all_log_files(log_dir: str, num_workers: int) -> list[Path]:
        """The server's log file, then each worker's."""
        return [
            EnvServer.get_log_file(log_dir),
            *(Path(log_dir) / f"env_worker_{i}.log" for i in range(num_workers)),
        ]

    @classmethod
    def run_server(cls, *args: Any, **kwargs: Any) -> None:
        """Build the server and run it until SIGTERM/SIGINT (the target of a spawned
        process)."""
        if mp.parent_process() is not None:
            kwargs.setdefault("watch_parent", True)
        server = cls(*args, **kwargs)
        asyncio.run(server.run())


def load_classic_env(
    env_id: str, env_args: dict[str, Any], extra_env_kwargs: dict[str, Any], who: str
) -> tuple[Any, str | None]:
    """``vf.load_environment(env_id, **env_args)`` then ``set_kwargs(**extra_env_kwargs)``:
    ``(env, None)``, or ``(None, reason)`` when it fails (every request is answered with
    it). ``who`` names the loader in the reason."""
    try:
        import verifiers as vf

        env = vf.load_environment(env_id, **env_args)
        if extra_env_kwargs:
            env.set_kwargs(**extra_env_kwargs)
        return env, None
    except Exception as e:
        error = (
            f"{who} could not load environment {env_id!r} (args {env_args}): "
            f"{type(e).__name__}: {e}"
        )
        logger.error("%s", error, exc_info=True)
        return None, error


def setup_serve_logging(
    level: str | None, log_file: str | None, console: bool, json_lines: bool
) -> None:
    """Logging of a server or worker process (nothing to set up when all is default)."""
    from verifiers.utils.logging_utils import setup_logging

    if level is None and log_file is None and console:
        return
    setup_logging(
        level=level or "INFO",
        log_file=log_file,
        console_logging=console,
        file_logging=log_file is not None,
    )
    if json_lines:
        from verifiers.utils.logging_utils import JsonFormatter

        for handler in logging.getLogger("verifiers").handlers:
            handler.setFormatter(JsonFormatter())


async def serve_until_stopped(
    serve: Callable[[asyncio.Event], Awaitable[None]],
    close: Callable[[], Awaitable[None]],
    death_pipe: Connection | None = None,
    watch_parent: bool = False,
) -> None:
    """``serve(stop)`` until SIGTERM/SIGINT, ``death_pipe`` closing or (``watch_parent``)
    the parent's death sets ``stop``; then ``close()`` with further signals ignored."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
            signals.append(sig)
        except (RuntimeError, ValueError):  # not the main thread
            pass
    watchers: list[asyncio.Task[None]] = []
    if death_pipe is not None:
        loop.add_reader(death_pipe.fileno(), stop.set)
    if watch_parent:
        watchers.append(loop.create_task(_watch_parent(stop)))
    try:
        await serve(stop)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_IGN)  # no second signal interrupts the shutdown
        if death_pipe is not None:
            loop.remove_reader(death_pipe.fileno())
        for w in watchers:
            w.cancel()
        await close()
        for sig in signals:
            signal.signal(sig, signal.SIG_DFL)


async def run_classic_request(env: Any, client: Any, kind: str, request: Any) -> dict[str, Any]:
    """Run a decoded ``run_rollout`` / ``run_group`` request map on ``env`` with ``client``;
    the response map (the one implementation the server and the router's workers share)."""
    model = str(request.get("model") or "")
    sampling_args = dict(request.get("sampling_args") or {})
    max_retries = int(request.get("max_retries") or 0)
    columns = request.get("state_columns")
    if kind == "run_rollout":
        output = await env.run_rollout(
            request["input"],
            client,
            model,
            sampling_args,
            max_retries=max_retries,
            state_columns=columns,
        )
        return {"success": True, "error": None, "output": output}
    outputs = await env.run_group(
        list(request["group_inputs"]), client, model, sampling_args, max_retries, columns
    )
    return {"success": True, "error": None, "outputs": outputs}


async def _watch_parent(stop: asyncio.Event, interval: float = 1.0) -> None:
    """Set ``stop`` when the process that started this one is gone (re-parented)."""
    parent = os.getppid()
    while not stop.is_set():
        await asyncio.sleep(interval)
        if os.getppid() != parent:
            logger.warning("the parent process is gone: shutting down")
            stop.set()


# names 0.3.x's version of this module imports, served on first use (verifiers.classic.forward)
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
