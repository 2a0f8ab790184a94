"""What ``vf-eval`` shows: progress while it runs, then a summary, sample rollouts and a verdict.

Progress is a rich bar on a terminal and plain lines elsewhere (logs, CI), so a long run in a
pipe is not silent. The summary names the first error of each type, so the cause of failed
rollouts is on screen, not only inside ``results.jsonl``. :func:`error_verdict` decides whether
the run failed as a whole (exit code 1); :func:`finish_run` acts on it after a classic or a v1
run (push, ``--json``, exit code).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from cli._common import CLIError, plural, run_async

__all__ = [
    "Progress",
    "error_verdict",
    "finish_run",
    "print_samples",
    "print_summary",
    "run_with_progress",
    "show_result",
]

T = TypeVar("T")


class Progress:
    """Progress on stderr: a rich bar on a terminal, else a line every ``interval`` seconds
    from the moment the total is known, whether or not a rollout finished meanwhile (slow
    rollouts do not leave a log silent), and one at the end."""

    def __init__(self, env_id: str, model: str, *, interval: float = 10.0) -> None:
        self.label = f"{env_id} · {model}"
        self.rewards: list[float] = []
        self.errors = 0
        self.interactive = sys.stderr.isatty()
        self.interval = interval
        self._last_line = 0.0
        self._done = self._total = 0
        self.concurrency: int | None = None  # the level -c auto chose (None: fixed -c)
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._ticker: threading.Thread | None = None
        self.progress: Any = None
        if self.interactive:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichProgress

            self.progress = RichProgress(
                TextColumn(f"[bold]{env_id}[/] · {model}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("reward {task.fields[reward]}"),
                TextColumn("errors {task.fields[errors]}"),
                TextColumn("{task.fields[conc]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self.task = self.progress.add_task("eval", total=None, reward="-", errors=0, conc="")

    def start(self, n_total: int | None = None) -> None:
        self._started = time.monotonic()
        if self.progress is not None:
            self.progress.start()

    def resumed(self, records: list[dict[str, Any]]) -> None:
        """A resumed run's earlier rollouts: counted in the reward and errors shown, so that
        the last line gives the same reward as the summary of the whole run."""
        with self._lock:
            for record in records:
                self._count(record)
            if self.progress is not None:
                self.progress.update(self.task, reward=self._avg(), errors=self.errors)

    def _count(self, record: dict[str, Any]) -> None:
        if record.get("reward") is not None:
            self.rewards.append(float(record["reward"]))
        if record.get("error") or (record.get("reward_errors") and record.get("reward") is None):
            self.errors += 1  # errored, or left without a reward by a reward function

    def set_total(self, done: int, total: int) -> None:
        """The run is planned: ``done`` of ``total`` rollouts (a resumed run's) exist. The bar
        shows the total at once; off a terminal the periodic lines start."""
        with self._lock:
            self._done, self._total = done, total
        if self.progress is not None:
            self.progress.update(self.task, completed=done, total=total)
        elif self._ticker is None:
            with self._lock:
                self._line()  # the run has started: its total, then a line every interval
            self._ticker = threading.Thread(target=self._tick, name="vf-eval-progress", daemon=True)
            self._ticker.start()

    def set_concurrency(self, level: int) -> None:
        """The level ``-c auto`` runs at now (shown in the bar and the lines)."""
        with self._lock:
            self.concurrency = level
        if self.progress is not None:
            self.progress.update(self.task, conc=f"concurrency {level} (auto)")

    def _tick(self) -> None:
        while True:
            with self._lock:
                wait = self._last_line + self.interval - time.monotonic()
            if self._stopped.wait(max(wait, 0.0)):
                return
            with self._lock:
                if (
                    time.monotonic() - self._last_line >= self.interval
                    and not self._stopped.is_set()
                ):
                    self._line()

    def stop(self, clear_if_idle: bool = False) -> None:
        """Stop; with ``clear_if_idle`` an untouched bar is erased, not left behind."""
        self._stopped.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.progress is None:
            if self._done and self._done != self._last_done_printed:
                self._line()
            return
        if clear_if_idle and not self.progress.tasks[0].completed:
            self.progress.live.transient = True
            self.progress.live.stop()  # not Progress.stop(): it adds a blank line off a tty
            return
        self.progress.stop()

    _last_done_printed = 0

    def _avg(self) -> str:
        return f"{sum(self.rewards) / len(self.rewards):.3f}" if self.rewards else "-"

    def _line(self) -> None:
        elapsed = time.monotonic() - self._started
        print(
            f"{self.label}: {self._done}/{self._total or '?'} rollouts, reward {self._avg()}, "
            f"errors {self.errors}, "
            + (f"concurrency {self.concurrency} (auto), " if self.concurrency is not None else "")
            + f"{elapsed:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        self._last_done_printed = self._done
        self._last_line = time.monotonic()

    def update(self, done: int, total: int, record: dict[str, Any]) -> None:
        with self._lock:
            self._count(record)
            self._done, self._total = done, total
            if self.progress is not None:
                self.progress.update(
                    self.task, completed=done, total=total, reward=self._avg(), errors=self.errors
                )
            elif done == total or time.monotonic() - self._last_line >= self.interval:
                self._line()


def run_with_progress(
    main: Callable[[], Coroutine[Any, Any, T]],
    progress: Progress | None,
    interrupted: Callable[[], Exception],
) -> T:
    """Run the evaluation coroutine with its progress shown; on Ctrl-C the progress stops
    and ``interrupted()`` (where the partial results are, how to continue) is raised."""
    if progress:
        progress.start(n_total=None)
    try:
        result = run_async(main())
    except KeyboardInterrupt:
        if progress:
            progress.stop(clear_if_idle=True)
        raise interrupted() from None
    except BaseException:
        if progress:
            progress.stop(clear_if_idle=True)  # a config error stays a one-line message
        raise
    if progress:
        progress.stop()
    return result


def show_result(execute: Callable[[], T], *, as_json: bool, samples: int) -> T:
    """Run ``execute`` and show its summary and ``samples`` sample rollouts; with
    ``as_json`` anything it prints goes to stderr, as stdout carries only the JSON."""
    if as_json:
        with contextlib.redirect_stdout(sys.stderr):
            return execute()
    result = execute()
    print_summary(result)
    if samples:
        print_samples(result, samples)
    return result


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)


def print_summary(result: Any) -> None:
    """The run's summary table, then the first error of each type."""
    from rich.console import Console
    from rich.table import Table

    meta = result.metadata
    s = meta["summary"]
    console = Console()
    table = Table(title=f"{meta['env_id']} · {meta['model']}", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row(
        "rollouts",
        f"{s['num_rollouts']} ({plural(meta['num_examples'], 'example')} x "
        f"{meta['rollouts_per_example']})",
    )
    scored = s.get("num_scored", s["num_rollouts"])
    of = f" of {scored} scored" if scored != s["num_rollouts"] else ""
    table.add_row(
        f"reward (mean{of} ± s.e.)", f"{_fmt(s['avg_reward'])} ± {_fmt(s['reward_stderr'])}"
    )
    for k, v in s["pass_at_k"].items():
        table.add_row(f"pass@{k}" + (f" ({scored} scored)" if of else ""), _fmt(v))
    for name, v in s["metrics"].items():
        table.add_row(f"  {name}", _fmt(v))
    types = dict(s["error_types"])
    failed = int(s.get("num_failed", s["num_errors"]))
    if failed > s["num_errors"]:  # left without a reward by a raising reward function
        types["reward function error"] = failed - s["num_errors"]
    errors = ", ".join(f"{k}: {v}" for k, v in types.items()) or "0"
    table.add_row("errored rollouts", f"{failed} ({errors})" if failed else "0")
    if s["num_reward_errors"]:
        funcs = ", ".join(f"{k}: {v}" for k, v in s["reward_error_funcs"].items())
        table.add_row("reward function errors", f"{s['num_reward_errors']} ({funcs})")
    failures = s.get("request_failures") or {}
    if failures:
        table.add_row("failed requests", _request_failures(failures))
    cache = s.get("cache")
    if cache:
        table.add_row("response cache (hits / misses)", f"{cache['hits']} / {cache['misses']}")
    conc = meta.get("concurrency")
    if conc:
        table.add_row(
            "concurrency (auto)",
            f"{conc['final']} (peak {conc['peak']}, max {conc['upper']}, "
            f"{conc['backoffs']} backoffs)",
        )
    if s.get("retries"):
        table.add_row("rollouts re-run after an error", str(s["retries"]))
    table.add_row("truncated", str(s["num_truncated"]))
    table.add_row(
        "tokens (prompt / completion)",
        f"{s['usage']['prompt_tokens']} / {s['usage']['completion_tokens']}",
    )
    table.add_row("wall time", f"{meta['wall_time_s']:.2f} s")
    ex = meta.get("executor")
    if ex:
        nodes = len(ex.get("groups_by_node") or {})
        table.add_row(
            f"{ex.get('backend', 'executor')} workers",
            f"{ex.get('workers', 0)} on {plural(nodes, 'node')}, "
            f"{ex.get('replaced_workers', 0)} replaced, {ex.get('reruns', 0)} groups re-run",
        )
    console.print(table)
    for note in s.get("notes") or ():
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    for kind, message in (s.get("first_errors") or {}).items():
        first_line = (message or "").strip().splitlines()[0] if message else ""
        console.print(f"first {kind}: {first_line}", markup=False, highlight=False, soft_wrap=True)
    for func, message in (s.get("first_reward_errors") or {}).items():
        first_line = (message or "").strip().splitlines()[0] if message else ""
        count = (s.get("reward_error_funcs") or {}).get(func, 0)
        console.print(
            f"reward function {func} raised in {plural(count, 'rollout')}, first: {first_line}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if result.path:
        console.print(f"results: {result.path}", markup=False, highlight=False)


def _request_failures(failures: dict[str, int]) -> str:
    """``request_failures`` in words: each failed request once, by kind (``gave_up`` is not a
    kind: it counts the failures after which the client stopped, the rest were retried)."""
    by_kind = {k: v for k, v in sorted(failures.items()) if k != "gave_up"}
    total = sum(by_kind.values())
    gave_up = int(failures.get("gave_up", 0))
    kinds = ", ".join(f"{k}: {v}" for k, v in by_kind.items())
    if not gave_up:
        fate = "all retried"
    elif gave_up == total:
        fate = "none retried"
    else:
        fate = f"{total - gave_up} retried, {gave_up} given up"
    return f"{total} ({kinds}), {fate}"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _excerpt(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def print_samples(result: Any, count: int = 3, width: int = 200) -> None:
    """A few rollouts as the classic tool shows them: prompt, completion, rewards."""
    records = [r for r in result.records if not r.get("error")][:count] or result.records[:count]
    if not records:
        return
    print(f"\nsample rollouts ({len(records)} of {len(result.records)}):")
    for rec in records:
        prompt = rec.get("prompt") or []
        last_user = next(
            (m for m in reversed(prompt) if isinstance(m, dict) and m.get("role") == "user"),
            prompt[-1] if prompt else {},
        )
        completion = rec.get("completion") or []
        parts = []
        for m in completion:
            if not isinstance(m, dict):
                continue
            text = _text(m.get("content"))
            calls = m.get("tool_calls") or []
            names = [str((c.get("function") or {}).get("name", "?")) for c in calls]
            if names:
                text += f" [tool calls: {', '.join(names)}]"
            parts.append(f"{m.get('role')}: {text}")
        metrics = ", ".join(f"{k}={_fmt(v)}" for k, v in (rec.get("metrics") or {}).items())
        print(f"- example {rec.get('example_id')} rollout {rec.get('rollout_index', 0)}")
        print(f"  prompt:     {_excerpt(_text(last_user.get('content')), width)}")
        print(f"  completion: {_excerpt(' | '.join(parts), width)}")
        reward = _fmt(rec.get("reward"))
        print(f"  reward:     {reward}" + (f" ({metrics})" if metrics else ""))
        if rec.get("error"):
            err = rec["error"]
            print(f"  error:      {err.get('type')}: {_excerpt(str(err.get('message')), width)}")
        for e in rec.get("reward_errors") or []:
            if isinstance(e, dict):
                text = f"{e.get('type')}: {e.get('message')}"
                print(f"  reward function {e.get('func')} raised: {_excerpt(text, width)}")


def error_verdict(summary: dict[str, Any], max_error_rate: float | None) -> str | None:
    """Why the run failed as a whole, or ``None``.

    A rollout counts as errored when it errored or a reward function raised and left it
    without a reward. By default a run fails when every rollout errored; ``max_error_rate``
    (0-1) fails it when the errored fraction is above that rate.
    """
    total = int(summary.get("num_rollouts") or 0)
    errored = int(summary.get("num_failed", summary.get("num_errors")) or 0)
    if total == 0 or errored == 0:
        return None
    first = next(iter((summary.get("first_errors") or {}).items()), None)
    if first is None or not first[1]:
        func = next(iter((summary.get("first_reward_errors") or {}).items()), None)
        first = (f"reward function {func[0]}", func[1]) if func else None
    cause = (
        f" (first: {first[0]}: {first[1].strip().splitlines()[0]})" if first and first[1] else ""
    )
    if max_error_rate is None:
        if errored == total:
            return f"every rollout errored: {plural(total, 'rollout')}{cause}"
        return None
    if errored / total > max_error_rate:
        return (
            f"{errored} of {plural(total, 'rollout')} errored ({errored / total:.0%}), above "
            f"--max-error-rate {max_error_rate:g}{cause}"
        )
    return None


def finish_run(
    result: Any,
    *,
    max_error_rate: float | None,
    push: bool,
    allow_unverified: bool,
    as_json: bool,
) -> None:
    """After the run: push it (``--push``), print the JSON (``--json``), fail on errors."""
    failed = error_verdict(result.metadata["summary"], max_error_rate)
    pushed = None
    if push and not failed and result.path:
        from cli.eval_push import push_run, report

        pushed = push_run(result.path, env=None, allow_unverified=allow_unverified)
        if not as_json:
            report(pushed)
    if as_json:
        out = dict(result.metadata)
        out["path"] = str(result.path) if result.path else None
        if pushed is not None:
            out["pushed"] = pushed
        sys.stdout.write(json.dumps(out, default=str) + "\n")
    if failed:
        raise CLIError(failed, hint=f"details per rollout: {result.path or 'run with -s'}")
