"""Training output directories (``vf train``'s ``OUTPUT_DIR``) as the viewer sees them.

A training run is a directory holding ``metrics.jsonl`` (one JSON object per step), and, from
``vf train`` of this version on, ``run.json`` (configuration and status) and
``rollouts.jsonl`` (each step's rewards and a few sample rollouts). The page loads the
metrics incrementally: each request names the byte offset it has read up to and gets the
complete lines after it, at most :data:`MAX_CHUNK` bytes at a time, as columns (so that the
page of a run still writing only ever reads what is new).

Everything here is bounded: a request reads at most :data:`MAX_CHUNK` bytes of a log, at most
:data:`MAX_INFO_BYTES` of ``run.json``, lists at most :data:`MAX_CHECKPOINTS` checkpoints, and a
line longer than :data:`MAX_LINE` is skipped (counted), not parsed.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "METRICS_FILE",
    "ROLLOUTS_FILE",
    "RUN_FILE",
    "TrainRun",
    "is_train_run",
    "read_lines",
]

METRICS_FILE = "metrics.jsonl"
ROLLOUTS_FILE = "rollouts.jsonl"
RUN_FILE = "run.json"
MAX_CHUNK = 4 * 1024 * 1024  # bytes of a log one request reads
MAX_LINE = 1024 * 1024  # a longer line is skipped
MAX_INFO_BYTES = 1024 * 1024
MAX_CHECKPOINTS = 500
MAX_COLUMNS = 200  # metric names per run (a hostile file cannot make the answer unbounded)
MAX_NAME = 100
_STEP_PREFIX = re.compile(rb'^\{"step": ?(-?\d{1,12})[,}]')


def is_train_run(path: Path) -> bool:
    """Whether ``path`` is a training output directory."""
    return (path / METRICS_FILE).is_file() or _info_kind(path) == "train"


def _info_kind(path: Path) -> str | None:
    info = _read_json(path / RUN_FILE, MAX_INFO_BYTES)
    kind = info.get("kind") if isinstance(info, dict) else None
    return kind if isinstance(kind, str) else None


def _read_json(path: Path, limit: int) -> Any:
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:  # Python's json writes NaN and Infinity, which orjson refuses
            return json.loads(data)
        except ValueError:
            return None


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            return json.loads(line)
        except ValueError:
            return None


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


@dataclass
class Chunk:
    """Complete lines of a log read from ``start``: ``lines``, the offset after the last
    (``end``), the file's size, whether the reader's position was invalid (the file was
    rewritten: read again from 0), and lines skipped as too long."""

    lines: list[tuple[int, bytes]]  # (offset, line)
    start: int
    end: int
    size: int
    reset: bool = False
    skipped: int = 0
    crc: int | None = None  # of the line that ends at ``end`` (what the reader sends back)


def read_lines(
    path: Path, since: int, last_step: int | None, limit: int = MAX_CHUNK, crc: int | None = None
) -> Chunk:
    """The complete lines of ``path`` after byte ``since`` (at most ``limit`` bytes).

    ``last_step`` is the step of the last line the reader has and ``crc`` its CRC-32 (the
    ``crc`` of the previous answer): when the line that ends at ``since`` is not that one (a
    resumed run rewrote the file), or ``since`` is past the end, reading starts over from 0
    with ``reset``."""
    try:
        f = path.open("rb")
    except OSError:
        return Chunk([], 0, 0, 0, reset=since > 0)
    with f:
        size = os.fstat(f.fileno()).st_size
        reset = False
        if (
            since < 0
            or since > size
            or (since > 0 and not _ends_with_step(f, since, last_step, crc))
        ):
            since, reset = 0, True
        f.seek(since)
        data = f.read(min(limit, size - since))
    lines: list[tuple[int, bytes]] = []
    skipped = 0
    cut = data.rfind(b"\n")
    if cut < 0:
        if len(data) >= limit:  # one line longer than a whole chunk: skip past it
            return Chunk([], since, since + len(data), size, reset, skipped=1)
        return Chunk([], since, since, size, reset)
    pos = since
    parts = data[:cut].split(b"\n")
    for line in parts:
        if len(line) > MAX_LINE:
            skipped += 1
        elif line.strip():
            lines.append((pos, line))
        pos += len(line) + 1
    return Chunk(lines, since, since + cut + 1, size, reset, skipped, zlib.crc32(parts[-1]))


def _ends_with_step(f: Any, since: int, last_step: int | None, crc: int | None) -> bool:
    """Whether the line before ``since`` ends there, is step ``last_step``'s and has CRC-32
    ``crc`` (each checked when given)."""
    back = min(since, 64 * 1024)
    f.seek(since - back)
    tail = f.read(back)
    if not tail.endswith(b"\n"):
        return False
    start = tail.rfind(b"\n", 0, len(tail) - 1) + 1
    whole = start > 0 or back == since  # the line is all in ``tail`` (else: not checked)
    if crc is not None and whole and zlib.crc32(tail[start:-1]) != crc:
        return False
    if last_step is None:
        return True
    m = _STEP_PREFIX.match(tail[start : start + 40])
    if m is not None:
        return int(m.group(1)) == last_step
    row = _loads(tail[start:-1])
    return isinstance(row, dict) and row.get("step") == last_step


_INF = (math.inf, -math.inf)


def _add_row(cols: dict[str, list[Any]], i: int, row: dict[str, Any]) -> None:
    """Append row ``i``'s numeric fields to ``cols`` (``counts`` flattened to
    ``counts/NAME``; a column first seen now is padded with None for the rows before)."""
    for k, v in row.items():
        t = type(v)
        if t is float:
            if v != v or v in _INF:
                continue
        elif t is int:
            if abs(v) >= 2**53:
                v = float(v)
        elif t is dict and k == "counts":
            for ck, cv in v.items():
                if type(cv) in (int, float) and cv == cv and cv not in _INF:
                    _put(cols, i, f"counts/{str(ck)[:MAX_NAME]}", cv)
            continue
        else:
            continue
        _put(cols, i, k if len(k) <= MAX_NAME else k[:MAX_NAME], v)


def _put(cols: dict[str, list[Any]], i: int, name: str, value: Any) -> None:
    col = cols.get(name)
    if col is None:
        if len(cols) >= MAX_COLUMNS:
            return
        col = cols[name] = [None] * i
    elif len(col) < i:
        col.extend([None] * (i - len(col)))
    col.append(value)


def _quantiles(values: list[float]) -> list[float]:
    """min, 25th, 50th, 75th percentile, max (nearest rank)."""
    s = sorted(values)
    n = len(s)
    return [
        s[min(n - 1, max(0, math.ceil(q * n) - 1))] if q else s[0] for q in (0, 0.25, 0.5, 0.75, 1)
    ]


@dataclass
class TrainRun:
    """One training output directory."""

    path: Path
    _step_offsets: dict[int, tuple[int, int]] = field(default_factory=dict)
    _indexed: tuple[int, int] = (0, 0)  # (inode, bytes of rollouts.jsonl indexed)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def info(self) -> dict[str, Any]:
        """``run.json`` (empty for a run from before it existed, or an unreadable one)."""
        info = _read_json(self.path / RUN_FILE, MAX_INFO_BYTES)
        return info if isinstance(info, dict) else {}

    @property
    def title(self) -> str:
        info = self.info
        return f"train · {info.get('env') or '?'} · {info.get('model') or '?'}"

    def checkpoints(self) -> list[dict[str, Any]]:
        """``checkpoints/step_N``, newest first: step, complete (the state file written last is
        there), when."""
        root = self.path / "checkpoints"
        found: list[dict[str, Any]] = []
        try:
            entries = list(os.scandir(root))
        except OSError:
            return found
        for e in entries:
            name = e.name
            if not name.startswith("step_") or not name[5:].isdigit() or len(name) > 20:
                continue
            try:
                mtime = e.stat().st_mtime
            except OSError:
                continue
            complete = (Path(e.path) / "trainer_state.pt").is_file()
            found.append({"step": int(name[5:]), "name": name, "complete": complete,
                          "mtime": mtime})  # fmt: skip
        found.sort(key=lambda c: -int(c["step"]))
        return found[:MAX_CHECKPOINTS]

    def config_text(self) -> str:
        config = self.info.get("config")
        if not isinstance(config, dict):
            return ""
        return json.dumps(config, indent=2, ensure_ascii=False, default=str)

    # ------------------------------------------------------------------ incremental reads

    def metrics(self, since: int, last_step: int | None, crc: int | None = None) -> dict[str, Any]:
        """Metrics rows after byte ``since``, as columns: ``{"offset", "size", "reset",
        "skipped", "status", "checkpoints", "cols": {name: [value or null, ...]}}``
        (``cols["step"]`` always, one entry per row)."""
        chunk = read_lines(self.path / METRICS_FILE, since, last_step, crc=crc)
        cols: dict[str, list[Any]] = {"step": []}
        skipped = chunk.skipped
        n = 0
        for _, line in chunk.lines:
            row = _loads(line)
            if not isinstance(row, dict) or _number(row.get("step")) is None:
                skipped += 1
                continue
            _add_row(cols, n, row)
            n += 1
        for col in cols.values():
            if len(col) < n:
                col.extend([None] * (n - len(col)))
        cols.setdefault("step", [])
        return {
            "offset": chunk.end,
            "crc": chunk.crc,
            "size": chunk.size,
            "reset": chunk.reset,
            "skipped": skipped,
            "status": self.status(),
            "updated_at": str(self.info.get("updated_at") or "")[:40],
            "checkpoints": [
                {"step": c["step"], "complete": c["complete"]} for c in self.checkpoints()
            ],
            "cols": cols,
        }

    def rewards(self, since: int, last_step: int | None, crc: int | None = None) -> dict[str, Any]:
        """Each step's reward distribution after byte ``since`` of ``rollouts.jsonl``:
        ``{"offset", "size", "reset", "steps": [...], "q": [[min, p25, p50, p75, max]],
        "n": [...], "samples": [...]}``."""
        chunk = read_lines(self.path / ROLLOUTS_FILE, since, last_step, crc=crc)
        steps: list[int] = []
        qs: list[list[float] | None] = []
        ns: list[int] = []
        samples: list[int] = []
        for _, line in chunk.lines:
            # vf train writes the rewards before the rollouts: parse only what comes before
            cut = line.find(b', "rollouts": [')
            row = _loads(line[:cut] + b"}") if cut > 0 else None
            if not isinstance(row, dict):
                row = _loads(line)
            else:
                row["rollouts"] = line.count(b'"used": ') or []  # previews without parsing
            if not isinstance(row, dict) or _number(row.get("step")) is None:
                continue
            raw = row.get("rewards")
            values = [
                v for v in map(_number, raw if isinstance(raw, list) else []) if v is not None
            ]
            rollouts = row.get("rollouts")
            steps.append(int(row["step"]))
            qs.append(_quantiles(values) if values else None)
            ns.append(len(values))
            samples.append(
                rollouts if type(rollouts) is int
                else len(rollouts) if isinstance(rollouts, list) else 0
            )  # fmt: skip
        return {
            "offset": chunk.end,
            "crc": chunk.crc,
            "size": chunk.size,
            "reset": chunk.reset,
            "steps": steps,
            "q": qs,
            "n": ns,
            "samples": samples,
        }

    def step_rollouts(self, step: int) -> dict[str, Any] | None:
        """The rewards and sample rollouts ``vf train`` kept for ``step`` (None: none)."""
        path = self.path / ROLLOUTS_FILE
        with self._lock:
            self._index_rollouts(path)
            where = self._step_offsets.get(step)
        if where is None:
            return None
        try:
            with path.open("rb") as f:
                f.seek(where[0])
                line = f.read(where[1])
        except OSError:
            return None
        row = _loads(line)
        if not isinstance(row, dict) or row.get("step") != step:
            return None
        rollouts = row.get("rollouts")
        raw = row.get("rewards")
        return {
            "step": step,
            "rewards": [v for v in map(_number, raw if isinstance(raw, list) else []) if v is not None],
            "rollouts": [r for r in rollouts if isinstance(r, dict)]
            if isinstance(rollouts, list) else [],
            "rollouts_dropped": row.get("rollouts_dropped") or 0,
        }  # fmt: skip

    def _index_rollouts(self, path: Path) -> None:
        """Extend the step -> (offset, length) index of ``rollouts.jsonl`` over what was
        appended since (rebuilt when the file was replaced or cut)."""
        try:
            st = path.stat()
        except OSError:
            self._step_offsets.clear()
            self._indexed = (0, 0)
            return
        inode, done = self._indexed
        if inode != st.st_ino or st.st_size < done:
            self._step_offsets.clear()
            done = 0
        while done < st.st_size:
            chunk = read_lines(path, done, None)
            if chunk.reset:  # cut under us
                self._step_offsets.clear()
            for pos, line in chunk.lines:
                m = _STEP_PREFIX.match(line[:40])
                step = int(m.group(1)) if m else None
                if step is None:
                    row = _loads(line)
                    s = row.get("step") if isinstance(row, dict) else None
                    step = s if isinstance(s, int) and not isinstance(s, bool) else None
                if step is not None:
                    self._step_offsets[step] = (pos, len(line))
            if chunk.end <= chunk.start:
                break
            done = chunk.end
        self._indexed = (st.st_ino, done)

    def status(self) -> str:
        """``run.json``'s status, except that a run still marked ``running`` whose process
        (``pid`` on ``host``, this machine) is gone is ``died``: killed without a chance to
        say so (SIGKILL, out of memory, the machine's power)."""
        info = self.info
        status = info.get("status")
        if not isinstance(status, str):
            return "unknown"
        if status == "running" and _gone(info.get("pid"), info.get("host")):
            return "died"
        return status


def _gone(pid: Any, host: Any) -> bool:
    """Whether the process ``pid`` of this machine ``host`` no longer runs (False when the
    run was on another machine, or the file does not say)."""
    if (
        not isinstance(pid, int)
        or isinstance(pid, bool)
        or pid <= 0
        or host != socket.gethostname()
    ):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False
