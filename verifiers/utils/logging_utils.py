"""Logging set-up and a rich sample printer (classic helpers)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

__all__ = [
    "LOGGER_NAME",
    "JsonFormatter",
    "log_level",
    "print_prompt_completions_sample",
    "print_size",
    "print_time",
    "quiet_verifiers",
    "setup_logging",
    "truncate",
    "warning_once",
]


def setup_logging(
    level: str | int | None = "INFO",
    log_format: str | None = None,
    date_format: str | None = None,
    log_file: str | None = None,
    console_logging: bool = True,
    file_logging: bool = False,
    json_logging: bool = False,
) -> None:
    """Configure the ``verifiers`` logger, replacing its handlers (so calling it again changes
    the set-up instead of adding handlers): the level, stderr and/or ``log_file``
    (``file_logging=True``), text or JSON lines. ``level=None`` turns verifiers' logging off.

    With ``json_logging`` the root logger writes JSON at the same level too (so environment
    code's own loggers match), and ``httpx``/``httpcore`` stay at WARNING.
    """
    logger = logging.getLogger(LOGGER_NAME)
    logger.handlers.clear()
    logger.propagate = False
    if level is None:
        return
    if isinstance(level, str):
        name = level.upper()
        if not isinstance(logging.getLevelName(name), int):
            raise ValueError(
                f"unknown log level {level!r}; use DEBUG, INFO, WARNING, ERROR or CRITICAL"
            )
        level = logging.getLevelName(name)
    if file_logging and log_file is None:
        raise ValueError("setup_logging(file_logging=True) needs log_file=<path>")
    formatter: logging.Formatter = (
        JsonFormatter()
        if json_logging
        else logging.Formatter(
            log_format or "%(asctime)s - %(name)s - %(levelname)s - %(message)s",
            date_format or "%Y-%m-%d %H:%M:%S",
        )
    )
    logger.setLevel(level)
    handlers: list[logging.Handler] = []
    if console_logging:
        handlers.append(logging.StreamHandler(sys.stderr))
    if file_logging and log_file is not None:
        handlers.append(logging.FileHandler(log_file, mode="a", encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.setLevel(level)
        logger.addHandler(handler)
    if json_logging:
        root = logging.getLogger()
        root.handlers = [h for h in root.handlers if not isinstance(h.formatter, JsonFormatter)]
        root.setLevel(level)
        root_handler = logging.StreamHandler(sys.stderr)
        root_handler.setFormatter(formatter)
        root_handler.setLevel(level)
        root.addHandler(root_handler)
        for noisy in ("httpcore", "httpx"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


def _text(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    lines = []
    for m in messages or []:
        content = m.get("content") if isinstance(m, dict) else str(m)
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        role = m.get("role", "?") if isinstance(m, dict) else "?"
        lines.append(f"[{role}] {content if content is not None else ''}")
        for c in calls or []:
            fn = c.get("function", c)
            lines.append(f"  -> {fn.get('name')}({fn.get('arguments')})")
    return "\n".join(lines)


def print_prompt_completions_sample(
    prompts: Sequence[Any],
    completions: Sequence[Any],
    errors_or_rewards: Sequence[Any],
    rewards: Sequence[float] | int | None = None,
    step: int = 0,
    num_samples: int = 1,
) -> None:
    """Print the first ``num_samples`` prompt/completion/reward rows as a rich table.

    Accepts both classic shapes: ``(prompts, completions, rewards, step)`` and
    ``(prompts, completions, errors, rewards, step)``.
    """
    from rich.console import Console
    from rich.table import Table

    if rewards is None or isinstance(rewards, int):  # (prompts, completions, rewards, step)
        step = rewards if isinstance(rewards, int) else step
        errors: Sequence[Any] = [None] * len(prompts)
        reward_values: Sequence[Any] = errors_or_rewards
    else:
        errors, reward_values = errors_or_rewards, rewards
    table = Table(title=f"step {step}", show_header=True, expand=True)
    for column in ("prompt", "completion", "reward"):
        table.add_column(column)
    for i in range(min(num_samples, len(prompts))):
        error = errors[i] if i < len(errors) else None
        reward = reward_values[i] if i < len(reward_values) else None
        shown = f"{reward:.3f}" if isinstance(reward, int | float) else str(reward)
        if error:
            shown += f"\nerror: {error.get('type') if isinstance(error, dict) else error}"
        table.add_row(_text(prompts[i]), _text(completions[i]), shown)
    Console().print(table)


# ---------------------------------------------------------------- classic helpers (0.3.x names)

LOGGER_NAME = "verifiers"
_warned: set[tuple[str, str]] = set()


def warning_once(logger: logging.Logger, msg: str) -> None:
    """Log ``msg`` as a warning the first time this logger sees it in this process only."""
    key = (logger.name, msg)
    if key not in _warned:
        _warned.add(key)
        logger.warning(msg)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``timestamp`` (UTC ISO 8601), ``level``, ``logger``,
    ``message`` and, when there is one, ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        import json
        from datetime import UTC, datetime

        entry: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


@contextmanager
def log_level(level: str | int) -> Iterator[None]:
    """Set the ``verifiers`` logger's level for the ``with`` block, then restore it."""
    logger = logging.getLogger(LOGGER_NAME)
    previous = logger.level
    logger.setLevel(level.upper() if isinstance(level, str) else level)
    try:
        yield
    finally:
        logger.setLevel(previous)


def quiet_verifiers() -> AbstractContextManager[None]:
    """``with vf.quiet_verifiers():`` shows only warnings and errors from verifiers."""
    return log_level("WARNING")


def print_time(time_s: float) -> str:
    """A duration as short text: ``1d 2h``, ``3h 4m``, ``5m 6s``, ``7.0s``, ``80ms``."""
    if time_s >= 86400:
        return f"{int(time_s // 86400)}d {int(time_s % 86400 // 3600)}h"
    if time_s >= 3600:
        return f"{int(time_s // 3600)}h {int(time_s % 3600 // 60)}m"
    if time_s >= 60:
        return f"{int(time_s // 60)}m {int(time_s % 60)}s"
    if time_s >= 1:
        return f"{time_s:.1f}s"
    return f"{time_s * 1000:.0f}ms"


def print_size(num_bytes: float) -> str:
    """A byte count as short text: ``1.5 GB``, ``2.0 MB``, ``3.0 KB``, ``12 bytes``."""
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if num_bytes >= size:
            return f"{num_bytes / size:.1f} {unit}"
    return f"{int(num_bytes)} bytes"


def truncate(s: str, limit: int = 200) -> str:
    """``s`` cut to ``limit`` characters with ``...`` appended when it was longer."""
    return s[:limit] + "..." if len(s) > limit else s


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
