"""A run's ``traces.jsonl``: one episode record per line, appended as each episode finishes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verifiers.v1.cli.output import TRACES_FILE
from verifiers.v1.trace import Episode, Trace, WireEpisode, WireTrace

__all__ = ["TRACES_FILE", "read_episodes", "traces_file", "write_episode"]


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
