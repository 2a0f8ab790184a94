"""What every command shares: one error handler, config location, console helpers."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Coroutine
from functools import wraps
from typing import Any, NoReturn, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


class CLIError(Exception):
    """An error whose message is complete for the user: printed as one line, exit code 1
    (or ``exit_code``). ``hint`` is the next step, printed after the message."""

    def __init__(self, message: str, hint: str | None = None, exit_code: int = 1) -> None:
        self.hint = hint
        self.exit_code = exit_code
        super().__init__(message)


def debug_enabled() -> bool:
    return os.environ.get("VF_DEBUG", "") not in ("", "0") or "--debug" in sys.argv


def fail(message: str, hint: str | None = None, exit_code: int = 1) -> NoReturn:
    raise CLIError(message, hint, exit_code)


def handle_errors(func: F) -> F:
    """Turn known exceptions into one clear line on stderr and a non-zero exit.

    With ``--debug`` (or ``VF_DEBUG=1``) the traceback is printed as well.
    """

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import click

        try:
            return func(*args, **kwargs)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise SystemExit(130) from None
        except BrokenPipeError:
            # the reader went away (`vf env list | head`): stop quietly, as SIGPIPE would
            try:  # no flush at exit may raise again
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            raise SystemExit(141) from None
        except CLIError as e:
            _report(e, str(e), e.hint)
            raise SystemExit(e.exit_code) from None
        except Exception as e:  # the one place that maps errors to exit codes
            from verifiers.errors import VerifiersError

            if debug_enabled():
                import traceback

                traceback.print_exc()
            if isinstance(e, VerifiersError):
                hint = getattr(e, "hint", None)
                print(f"error: {e}" + (f" ({hint})" if hint else ""), file=sys.stderr)
                raise SystemExit(2 if _is_config(e) else 1) from None
            print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
            print("  (run again with --debug for the traceback)", file=sys.stderr)
            raise SystemExit(1) from None

    return wrapper  # type: ignore[return-value]


def _is_config(e: Exception) -> bool:
    from verifiers.errors import ConfigError, EnvironmentNotFoundError

    return isinstance(e, ConfigError | EnvironmentNotFoundError)


def _report(e: Exception, message: str, hint: str | None) -> None:
    if debug_enabled():
        import traceback

        traceback.print_exception(e)
    # one line: the message, then the next step
    print(f"error: {message}" + (f" ({hint})" if hint else ""), file=sys.stderr)


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """``"1 row"``, ``"2 rows"``: a count with its noun in the right number."""
    return f"{n} {singular if n == 1 else (plural_form or singular + 's')}"


def format_table(
    headers: list[str],
    rows: list[list[str]],
    *,
    width: int | None = None,
    shrink: tuple[int, ...] = (),
) -> list[str]:
    """Plain-text table lines (header, rule, rows) with columns padded to their widest cell.

    Plain text rather than rich markup, so the output reads the same in a pipe or a log. With
    ``width``, the columns in ``shrink`` (first the first one named) are narrowed, their cells
    cut with "…", until each line fits in ``width`` characters (down to their header's width).
    """
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    if width is not None:
        excess = sum(widths) + 2 * (len(widths) - 1) - width
        for i in shrink:
            if excess <= 0:
                break
            floor = max(len(headers[i]), 6)
            cut = min(excess, max(widths[i] - floor, 0))
            widths[i] -= cut
            excess -= cut

    def fit(cell: str, w: int) -> str:
        return cell if len(cell) <= w else cell[: max(w - 1, 0)] + "…"

    def line(cells: list[str]) -> str:
        return "  ".join(fit(c, w).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def terminal_width() -> int:
    """Columns of the terminal (``$COLUMNS`` first), 80 where there is none (a pipe)."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def plain_usage_lines() -> None:
    """Usage lines in the usual Unix form: ``vf eval [OPTIONS] ENV_ID``, not ``{env_id}``.

    Typer writes a required argument as ``{name}`` in usage lines; this makes it ``NAME`` (and
    an optional one ``[NAME]``), the form man pages and ``--help`` of other tools use.
    """
    from typer.core import TyperArgument

    def usage_name(self: TyperArgument) -> str:
        name = self.metavar or (self.name or "").upper()
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 and not name.endswith("...") else "")

    if hasattr(TyperArgument, "_usage_display_name"):
        TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, with Ctrl-C acted on at once whichever thread receives it.

    The kernel hands a process's SIGINT to any of its threads that does not block it (a
    progress ticker, a worker of the loop's executor). Python runs the handler in the main
    thread, but only once that thread runs again, and ``asyncio.run`` sets no wakeup fd: a loop
    waiting in ``select()`` with no timer due (every request held by a slow server) would never
    see the Ctrl-C. Here the signal also writes to a socket the loop watches, so the loop wakes
    and the interrupt cancels the run as ``asyncio.run`` documents."""
    import asyncio
    import signal
    import socket

    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        wake_r, wake_w = socket.socketpair()
        for sock in (wake_r, wake_w):
            sock.setblocking(False)

        def drain() -> None:
            try:
                while wake_r.recv(4096):
                    pass
            except OSError:  # drained
                pass

        loop.add_reader(wake_r.fileno(), drain)
        try:
            previous: int | None = signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread: signals cannot reach this loop anyway
            previous = None
        try:
            return runner.run(main)
        finally:
            if previous is not None:
                signal.set_wakeup_fd(previous)
            loop.remove_reader(wake_r.fileno())
            wake_r.close()
            wake_w.close()
