"""A run's ``traces.jsonl``: one episode record per line, appended as each episode finishes."""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from verifiers.v1.cli.output import TRACES_FILE
from verifiers.v1.trace import EnvInfo, Episode, Trace, WireEpisode, WireTrace

__all__ = [
    "TRACES_FILE",
    "append_episode",
    "append_trace",
    "read_episodes",
    "traces_file",
    "type_adapter",
    "write_episode",
]

type_adapter = functools.cache(TypeAdapter)
"""``TypeAdapter(t)``, built once per type (an adapter costs a schema build)."""


def traces_file(results_dir: Path) -> Path:
    """``results_dir/traces.jsonl``."""
    return Path(results_dir) / TRACES_FILE


def write_episode(results_dir: Path, episode: Episode[Any, Any, Any]) -> None:
    """Append ``episode``'s record (:meth:`Episode.to_record`: its traces' runtime ``state``
    left out) as one line of ``results_dir/traces.jsonl``."""
    line = json.dumps(episode.to_record(), separators=(",", ":"))
    with (Path(results_dir) / TRACES_FILE).open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def read_episodes(
    results_dir: Path, trace_type: type[Trace[Any, Any, Any]] = WireTrace
) -> list[WireEpisode]:
    """The episodes of ``results_dir/traces.jsonl``, each trace read as ``trace_type`` (the
    default :data:`WireTrace` reads any taskset's records without importing it)."""
    episodes: list[WireEpisode] = []
    path = Path(results_dir) / TRACES_FILE
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number} is not a JSON record: {exc}") from exc
            episode = WireEpisode.model_validate({**row, "traces": []})
            episode.traces = [trace_type.model_validate(t) for t in row.get("traces", [])]
            episodes.append(episode)
    return episodes


async def append_episode(
    results_dir: Path, episode: Episode[Any, Any, Any], lock: asyncio.Lock
) -> None:
    """Append ``episode`` to ``results_dir/traces.jsonl`` from a worker thread, holding the
    run's ``lock`` so lines never interleave. Once begun the write completes even when the
    caller is cancelled (the cancellation is raised after it): a finished episode is never
    lost half-written."""

    async def persist() -> None:
        async with lock:
            await asyncio.to_thread(write_episode, results_dir, episode)

    writing = asyncio.ensure_future(persist())
    try:
        await asyncio.shield(writing)
    except asyncio.CancelledError:
        await writing
        raise


async def append_trace(
    results_dir: Path, trace: Trace[Any, Any, Any], lock: asyncio.Lock, env: str = ""
) -> None:
    """Append one finished trace as a single-agent episode (env id ``env``), as
    :func:`append_episode` appends one."""
    episode: Episode[Any, Any, Any] = Episode(
        env=EnvInfo(id=env), task=trace.task, traces=[trace], ok=trace.ok
    )
    await append_episode(results_dir, episode, lock)
