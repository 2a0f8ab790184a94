"""Durable evaluation results: ``results.jsonl`` + ``metadata.json`` in one run directory.

``results.jsonl`` holds one JSON record per finished rollout, appended and flushed as each one
finishes, so a killed run loses at most the rollouts in flight. ``metadata.json`` is rewritten
atomically (temp file + rename). A run is resumed by reading back the records that finished
without error and running only the rest.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from verifiers.types import ModelResponse, State, Usage, state_usage

__all__ = [
    "ResultsWriter",
    "config_hash",
    "pass_at_k",
    "read_records",
    "scoring_notes",
    "state_to_record",
    "summarize",
    "write_json_atomic",
]

RESULTS_FILE = "results.jsonl"
METADATA_FILE = "metadata.json"


def _default(obj: Any) -> Any:
    if isinstance(obj, Usage):
        return obj.as_dict()
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return str(obj)


def dumps(obj: Any) -> bytes:
    """JSON bytes (orjson; anything not JSON-native becomes a string)."""
    return orjson.dumps(obj, default=_default, option=orjson.OPT_NON_STR_KEYS)


def _messages_out(messages: Any) -> Any:
    """Messages as saved: tool-call arguments as objects, not JSON strings."""
    if not isinstance(messages, list):
        return messages
    out = []
    for m in messages:
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        if calls:
            m = dict(m)
            fixed = []
            for c in calls:
                fn = c.get("function") or {}
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass
                fixed.append({**c, "function": {**fn, "arguments": args}})
            m["tool_calls"] = fixed
        out.append(m)
    return out


def _step_out(step: Any) -> dict[str, Any]:
    """One model call as saved: which messages were sent (``prompt_len``: the first so many of
    ``prompt + completion``; an agent's own request history is not repeated), the assistant
    message, how the call ended and, when the model returned them, the token ids and logprobs
    (prompt and completion masks are implied: 0 for prompt ids, 1 for completion ids)."""
    response = step.get("response")
    tokens = step.get("tokens")
    out: dict[str, Any] = {
        "prompt_len": step.get("prompt_len", 0),
        "completion": _messages_out(step.get("completion")),
        "finish_reason": getattr(response, "finish_reason", None),
        "usage": response.usage.as_dict() if isinstance(response, ModelResponse) else None,
        "is_truncated": bool(step.get("is_truncated", False)),
        "tokens": None,
    }
    if tokens is not None:
        out["tokens"] = {
            "prompt_ids": tokens.get("prompt_ids"),
            "completion_ids": tokens.get("completion_ids"),
            "completion_logprobs": tokens.get("completion_logprobs"),
        }
    return out


def _error_out(error: Any) -> Any:
    """A rollout's error record as saved: ``type``, ``message``, ``traceback``, plus the type
    name under ``error`` (where 0.3.x's records keep it)."""
    if isinstance(error, Mapping) and "error" not in error and isinstance(error.get("type"), str):
        return {**error, "error": error["type"]}
    return error


def state_to_record(state: State, state_columns: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON-safe record of one finished rollout, with its ``trajectory``: one step per
    model call (:func:`_step_out`), carrying the call's token ids when the model returned
    them (a served model asked for ``return_token_ids``, or the built-in oracle)."""
    usage = state_usage(state)
    timing = state["timing"]
    record: dict[str, Any] = {
        "example_id": state["example_id"],
        "rollout_index": state.get("rollout_index", 0),
        "task": state.get("task"),
        "prompt": _messages_out(state["prompt"]),
        "completion": _messages_out(state["completion"]),
        "answer": state.get("answer"),
        "info": state.get("info"),
        "reward": state.get("reward"),
        "metrics": state.get("metrics", {}),
        "reward_errors": state.get("reward_errors", []),
        "error": _error_out(state.get("error")),
        "stop_condition": state.get("stop_condition"),
        "is_completed": bool(state.get("is_completed")),
        "is_truncated": bool(state.get("is_truncated")),
        "num_turns": state.get("turn", 0),
        "usage": usage.as_dict(),
        "timing": {
            "generation_ms": round(timing.get("generation_ms", 0.0), 3),
            "scoring_ms": round(timing.get("scoring_ms", 0.0), 3),
        },
        "trajectory": [_step_out(step) for step in state.get("trajectory") or ()],
    }
    for col in state_columns:
        # a state column asked for by name is the state's own value; for "trajectory" that
        # is the full step list (prompt messages, extras), as 0.3.x's state_columns give it
        if col in state and (col not in record or col == "trajectory"):
            record[col] = state[col]
    return record


def config_hash(config: dict[str, Any]) -> str:
    """A stable hash of what identifies a run (env, args, model, endpoint, sampling, sizes)."""
    return hashlib.sha256(
        orjson.dumps(config, default=_default, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()


def _umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (a brief window, harmless here)
    os.umask(mask)
    return mask


def _mkstemp_like_open(directory: Path, prefix: str) -> tuple[int, str]:
    """``mkstemp`` whose file gets the mode a plain ``open`` would give (0666 less the umask):
    results are shared files, not secrets, and ``mkstemp`` alone makes them 0600."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=directory)
    os.fchmod(fd, 0o666 & ~_umask())
    return fd, tmp


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as pretty JSON to ``path`` atomically (temp file in the same directory,
    fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _mkstemp_like_open(path.parent, f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(data, default=_default, option=orjson.OPT_INDENT_2))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_records(path: Path) -> list[dict[str, Any]]:
    """Complete records of a ``results.jsonl``; a torn last line (killed mid-write) is
    ignored."""
    if not path.is_file():
        return []
    records = []
    with path.open("rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break  # torn write at the end
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return records


class ResultsWriter:
    """Appends records to ``results.jsonl``, one ``write`` + ``flush`` per record."""

    def __init__(self, path: Path, keep: Iterable[dict[str, Any]] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        if keep is not None:
            # rewrite with only the kept records (drops errored ones and any torn line)
            fd, tmp = _mkstemp_like_open(path.parent, ".results.")
            with os.fdopen(fd, "wb") as f:
                for rec in keep:
                    f.write(dumps(rec) + b"\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        self._file: IO[bytes] = path.open("ab")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(dumps(record) + b"\n")
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimate from ``n`` samples with ``c`` correct."""
    if k > n:
        return float("nan")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def scoring_notes(num_rollouts: int, num_scored: int) -> list[str]:
    """What the reward mean and pass@k count, when some rollouts have no reward: both are over
    the scored rollouts only (an errored rollout is neither a 0 nor a failure there)."""
    unscored = num_rollouts - num_scored
    if not unscored:
        return []
    word = "rollout has" if unscored == 1 else "rollouts have"
    return [
        f"reward (mean) and pass@k count the {num_scored} scored rollouts only: "
        f"{unscored} errored {word} no reward and {'is' if unscored == 1 else 'are'} left out "
        "(not counted as 0 or as failures)"
    ]


def summarize(
    records: Sequence[dict[str, Any]], rollouts_per_example: int, pass_threshold: float = 0.5
) -> dict[str, Any]:
    """Counts, averages, standard error, pass@k for k = 1..rollouts_per_example, usage.

    ``avg_reward``, its standard error and ``pass_at_k`` are over the ``num_scored`` rollouts
    that have a reward (pass@k: per example, over its scored rollouts, averaged over examples);
    ``notes`` says so in words when some rollouts are unscored."""
    rewards = [float(r["reward"]) for r in records if r.get("reward") is not None]
    errored = [r for r in records if r.get("error")]
    error_types = Counter(str(r["error"].get("type", "error")) for r in errored)
    first_errors: dict[str, str] = {}
    for r in errored:  # the first message of each type: what a user reads to find the cause
        first_errors.setdefault(
            str(r["error"].get("type", "error")), str(r["error"].get("message", ""))
        )
    with_reward_errors = [r for r in records if r.get("reward_errors")]
    reward_error_funcs = Counter(
        str(e.get("func")) for r in with_reward_errors for e in r["reward_errors"]
    )
    first_reward_errors: dict[str, str] = {}
    for r in with_reward_errors:  # the first failure of each function, as the user reads it
        for e in r["reward_errors"]:
            if isinstance(e, dict):
                first_reward_errors.setdefault(
                    str(e.get("func")), f"{e.get('type', 'Error')}: {e.get('message', '')}"
                )
    # not scored because of an error: the rollout errored, or a reward function raised and
    # left no reward (with score_on_error the function counts 0.0 and the rollout is scored)
    failed = [
        r for r in records if r.get("error") or (r.get("reward_errors") and r.get("reward") is None)
    ]
    metric_values: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for name, value in (r.get("metrics") or {}).items():
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value)
            ):
                metric_values[name].append(float(value))
    by_example: dict[Any, list[float]] = defaultdict(list)
    for r in records:
        if r.get("reward") is not None:
            by_example[r["example_id"]].append(float(r["reward"]))
    pass_k: dict[str, float] = {}
    for k in range(1, max(rollouts_per_example, 1) + 1):
        vals = [
            pass_at_k(len(v), sum(1 for x in v if x >= pass_threshold), k)
            for v in by_example.values()
            if len(v) >= k
        ]
        if vals:
            pass_k[str(k)] = sum(vals) / len(vals)
    stderr = statistics.stdev(rewards) / math.sqrt(len(rewards)) if len(rewards) > 1 else None
    prompt_tokens = sum(int((r.get("usage") or {}).get("prompt_tokens", 0)) for r in records)
    completion_tokens = sum(
        int((r.get("usage") or {}).get("completion_tokens", 0)) for r in records
    )
    return {
        "num_rollouts": len(records),
        "num_scored": len(rewards),
        "notes": scoring_notes(len(records), len(rewards)),
        "num_errors": len(errored),
        "error_types": dict(error_types),
        "first_errors": first_errors,
        "num_reward_errors": len(with_reward_errors),
        "reward_error_funcs": dict(reward_error_funcs),
        "first_reward_errors": first_reward_errors,
        "num_failed": len(failed),
        "num_truncated": sum(1 for r in records if r.get("is_truncated")),
        "avg_reward": _mean(rewards),
        "reward_std": statistics.pstdev(rewards) if rewards else None,
        "reward_stderr": stderr,
        "pass_at_k": pass_k,
        "pass_threshold": pass_threshold,
        "metrics": {name: _mean(v) for name, v in sorted(metric_values.items())},
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "avg_prompt_tokens": prompt_tokens / len(records) if records else 0.0,
            "avg_completion_tokens": completion_tokens / len(records) if records else 0.0,
        },
    }
