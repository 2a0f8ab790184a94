"""Process helpers of 0.3.x's ``verifiers.utils.process_utils``: stopping worker processes
and exiting when the parent dies."""

from __future__ import annotations

import logging
import os
import signal
import threading
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

__all__ = [
    "VERIFIERS_PROC_PREFIX",
    "monitor_death_pipe",
    "set_proc_title",
    "terminate_process",
    "terminate_processes",
]

logger = logging.getLogger(__name__)

VERIFIERS_PROC_PREFIX = "Verifiers"


def set_proc_title(name: str) -> None:
    """Name this process ``Verifiers::<name>`` where the OS shows it (needs the optional
    ``setproctitle`` package; without it the thread name is set instead)."""
    try:
        import setproctitle  # type: ignore[import-not-found]
    except ImportError:
        threading.current_thread().name = f"{VERIFIERS_PROC_PREFIX}::{name}"
        return
    setproctitle.setproctitle(f"{VERIFIERS_PROC_PREFIX}::{name}")


def monitor_death_pipe(death_pipe: Connection) -> None:
    """Send this process SIGTERM once the other end of ``death_pipe`` closes (the parent
    holds it open while it lives), from a daemon thread."""

    def watch() -> None:
        try:
            death_pipe.recv()
        except (EOFError, OSError):
            pass
        logger.info("the parent process is gone; stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="death-pipe-monitor", daemon=True).start()


def terminate_process(
    process: BaseProcess | None, timeout: float = 10.0, kill_timeout: float = 10.0
) -> None:
    """SIGTERM ``process`` and wait up to ``timeout`` s, then SIGKILL it; nothing for ``None``
    or a process that has exited."""
    if process is None or not process.is_alive():
        return
    process.terminate()
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join(kill_timeout)


def terminate_processes(
    processes: list[BaseProcess], timeout: float = 10.0, kill_timeout: float = 10.0
) -> None:
    """:func:`terminate_process` for each, all at once (one wait, not one per process)."""
    threads = [
        threading.Thread(target=terminate_process, args=(p, timeout, kill_timeout))
        for p in processes
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
