"""A response cache for evaluations: model answers stored on disk, so that re-running an
evaluation (after changing a reward function, say) makes no model calls.

An answer is keyed by everything that determines it: the endpoint, the model, the prompt
(messages or text), the tools, the sampling arguments, the message type and the rollout's index
within its group (``-r 4`` still samples four answers per example, and a re-run gets the same
four back). Entries live in one SQLite database (WAL mode, so several runs may share it at
once); an entry older than the run's ``max_age`` is a miss and is replaced.

Only evaluations use it (``vf.evaluate(cache=...)``, ``vf-eval --cache``): a trainer needs fresh
samples from the current policy and refuses a caching client.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from verifiers.clients.base import Client
from verifiers.errors import ConfigError, EndpointError
from verifiers.types import Messages, MessageType, ModelResponse, SamplingArgs, Usage

__all__ = [
    "CachingClient",
    "EndpointCheckedClient",
    "ResponseCache",
    "current_rollout_index",
    "default_cache_dir",
    "parse_duration",
]

# the index of the rollout whose model call is being made (set by the environment per call)
current_rollout_index: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "vf_rollout_index", default=None
)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds in ``"90s"``, ``"15m"``, ``"12h"``, ``"7d"``, ``"2w"`` (a bare number: seconds)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if m is None or float(m.group(1)) <= 0:
        raise ConfigError(
            f"cache duration {text!r} is not a positive duration; write it as a number and "
            "a unit: 90s, 15m, 12h, 7d or 2w"
        )
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def default_cache_dir() -> Path:
    """``$VF_CACHE_DIR``, else ``$XDG_CACHE_HOME/verifiers/responses``, else
    ``~/.cache/verifiers/responses``."""
    if os.environ.get("VF_CACHE_DIR"):
        return Path(os.environ["VF_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verifiers" / "responses"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_jsonable)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return repr(value)


class ResponseCache:
    """The on-disk store: ``responses.sqlite`` under ``directory``.

    ``max_age`` (seconds, ``None``: forever) makes older entries misses. Safe to share between
    processes: SQLite in WAL mode with a busy timeout; each write is one transaction.
    """

    FILE = "responses.sqlite"

    def __init__(self, directory: str | Path | None = None, max_age: float | None = None):
        self.directory = Path(directory).expanduser() if directory else default_cache_dir()
        self.max_age = max_age
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    @property
    def path(self) -> Path:
        return self.directory / self.FILE

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                    "endpoint TEXT, model TEXT, created REAL, response TEXT)"
                )
                db.commit()
            except (OSError, sqlite3.Error) as e:
                raise ConfigError(
                    f"cannot open the response cache at {self.path}: {e}; pass another "
                    "directory (--cache-dir, VF_CACHE_DIR) or `vf cache clear` it"
                ) from None
            self._db = db
        return self._db

    @staticmethod
    def key(
        endpoint: str | None,
        model: str,
        prompt: Messages | str,
        tools: list[dict[str, Any]] | None,
        sampling_args: SamplingArgs | None,
        message_type: str,
        rollout_index: int | None,
    ) -> str:
        parts = {
            "endpoint": endpoint,
            "model": model,
            "prompt": prompt,
            "tools": tools or None,
            "sampling_args": dict(sampling_args or {}),
            "message_type": message_type,
            "rollout_index": rollout_index,
        }
        return hashlib.sha256(_canonical(parts).encode()).hexdigest()

    def get(self, key: str) -> ModelResponse | None:
        with self._lock:
            row = (
                self._conn()
                .execute("SELECT created, response FROM responses WHERE key = ?", (key,))
                .fetchone()
            )
        if row is None or (self.max_age is not None and time.time() - row[0] > self.max_age):
            return None
        try:
            data = json.loads(row[1])
            data["usage"] = Usage(**data.get("usage") or {})
            return ModelResponse(**data)
        except (ValueError, TypeError):
            return None  # an unreadable entry is a miss (and is replaced)

    def put(self, key: str, endpoint: str | None, model: str, response: ModelResponse) -> None:
        data = asdict(response)
        usage = response.usage
        data["usage"] = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
        }
        blob = json.dumps(data, default=_jsonable)
        with self._lock:
            db = self._conn()
            with db:
                db.execute(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                    (key, endpoint, model, time.time(), blob),
                )

    def stats(self) -> dict[str, Any]:
        """Hits and misses of this run, and where the cache is."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "dir": str(self.directory),
            "max_age_s": self.max_age,
        }

    def entries(self) -> list[dict[str, Any]]:
        """Entries per (endpoint, model): count, bytes, oldest and newest time."""
        if not self.path.is_file():
            return []
        with self._lock:
            rows = (
                self._conn()
                .execute(
                    "SELECT endpoint, model, COUNT(*), SUM(LENGTH(response)), MIN(created), "
                    "MAX(created) FROM responses GROUP BY endpoint, model ORDER BY model"
                )
                .fetchall()
            )
        return [
            {
                "endpoint": r[0],
                "model": r[1],
                "entries": r[2],
                "bytes": r[3] or 0,
                "oldest": r[4],
                "newest": r[5],
            }
            for r in rows
        ]

    def clear(self, older_than: float | None = None, model: str | None = None) -> int:
        """Delete entries (older than ``older_than`` seconds, of ``model``); how many."""
        if not self.path.is_file():
            return 0
        where: list[str] = []
        args: list[float | str] = []
        if older_than is not None:
            where.append("created < ?")
            args.append(time.time() - older_than)
        if model is not None:
            where.append("model = ?")
            args.append(model)
        sql = "DELETE FROM responses" + (" WHERE " + " AND ".join(where) if where else "")
        with self._lock:
            db = self._conn()
            with db:
                n = db.execute(sql, args).rowcount
            if older_than is None and model is None:
                db.execute("VACUUM")  # give the space back
        return int(n)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class _Wrapping(Client):
    """A client in front of ``inner``: its request-failure counters and its close are the
    wrapped client's."""

    def __init__(self, inner: Client) -> None:
        self.inner = inner

    @property
    def stats(self) -> dict[str, int]:
        return dict(getattr(self.inner, "stats", None) or {})

    async def close(self) -> None:
        await self.inner.close()


class CachingClient(_Wrapping):
    """A client that answers from ``cache`` when it can and asks ``inner`` otherwise (storing
    the answer). Errors are never stored."""

    def __init__(self, inner: Client, cache: ResponseCache, endpoint: str | None) -> None:
        super().__init__(inner)
        self.cache = cache
        self.endpoint = endpoint or type(inner).__name__

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        key = ResponseCache.key(
            self.endpoint,
            model,
            prompt,
            tools,
            sampling_args,
            message_type,
            current_rollout_index.get(),
        )
        cached = self.cache.get(key)
        if cached is not None:
            self.cache.hits += 1
            return cached
        self.cache.misses += 1
        response = await self.inner.get_response(
            prompt, model, sampling_args=sampling_args, tools=tools, message_type=message_type
        )
        if isinstance(response, ModelResponse):  # a classic client's answer is not stored
            self.cache.put(key, self.endpoint, model, response)
        return response


class EndpointCheckedClient(_Wrapping):
    """A client whose endpoint did not answer when a cached run started: a run answered from
    the cache may never need it. Before the first model call (a cache miss) ``check()`` runs
    again (it raises :class:`EndpointError` while the endpoint is down); after a failed check
    every call fails at once with that error, kept in :attr:`error`."""

    def __init__(self, inner: Client, check: Callable[[], None]) -> None:
        super().__init__(inner)
        self.check = check
        self.error: EndpointError | None = None
        self._checked = False
        self._lock = asyncio.Lock()

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        if not self._checked:
            async with self._lock:
                if not self._checked:
                    try:
                        await asyncio.to_thread(self.check)
                    except EndpointError as e:
                        self.error = e
                    self._checked = True
        if self.error is not None:
            raise EndpointError(str(self.error))
        return await self.inner.get_response(
            prompt, model, sampling_args=sampling_args, tools=tools, message_type=message_type
        )
