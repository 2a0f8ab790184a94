"""Logging set-up and a rich sample printer (classic helpers)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["print_prompt_completions_sample", "setup_logging"]


def setup_logging(
    level: str | int | None = "INFO",
    log_format: str | None = None,
    date_format: str | None = None,
    log_file: str | None = None,
    console_logging: bool = True,
    file_logging: bool = False,
    **_: Any,
) -> None:
    """Configure the ``verifiers`` logger: level, format, stderr and/or a file.

    Only the ``verifiers`` logger is touched (the root logger is left to the application).
    """
    logger = logging.getLogger("verifiers")
    logger.setLevel(level if isinstance(level, int) else (level or "INFO").upper())
    for handler in list(logger.handlers):
        if getattr(handler, "_vf_handler", False):
            logger.removeHandler(handler)
    formatter = logging.Formatter(
        log_format or "%(asctime)s %(levelname)s %(name)s: %(message)s", date_format
    )
    handlers: list[logging.Handler] = []
    if console_logging:
        handlers.append(logging.StreamHandler(sys.stderr))
    if log_file and (file_logging or not console_logging or log_file):
        handlers.append(logging.FileHandler(log_file))
    for handler in handlers:
        handler.setFormatter(formatter)
        handler._vf_handler = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.propagate = False


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
