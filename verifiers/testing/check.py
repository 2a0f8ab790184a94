"""``check_environment``: a model-free conformance check any environment author can run.

::

    from verifiers.testing import check_environment

    report = check_environment("wordle")            # or an Environment object
    print(report)                                   # one line per check
    report.raise_for_failures()                     # in a test: fail with every message

Checks, in order (a failed ``load`` skips the rest):

``load``
    The id resolves to an installed environment and ``load_environment(**env_args)`` returns a
    :class:`verifiers.Environment`.
``dataset``
    The evaluation dataset is non-empty and its first rows have a usable ``prompt`` (messages
    with roles, or text), a text ``answer``, a dict ``info`` and a text ``task``.
``rubric``
    The rubric has at least one reward function with a non-zero weight.
``gold``
    The built-in oracle (``-m oracle``: the gold answer, or the environment's own
    ``oracle_response``) gets at least ``min_gold_reward`` on every checked example, without
    errors. Skipped when the environment has neither gold answers nor an ``oracle_response``.
``no_op``
    A model that only ever says ``no_op_reply`` (no answer, no tool call) gets at most
    ``max_no_op_reward``, and its rollouts finish without being errored.
``records``
    The scripted rollouts produce JSON-serialisable records with a finite reward, a stop
    condition and at least one turn.
``cleanup``
    After the rollouts, the environment holds no per-rollout resources (for sandbox
    environments: no live sandboxes). Skipped for environments that track none.

Every check has a time limit (``timeout_s``) and reports pass, fail or skip with a message.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from verifiers.errors import ConfigError, VerifiersError

if TYPE_CHECKING:
    from verifiers.envs.environment import Environment
    from verifiers.evaluation import EvalResult

__all__ = [
    "CheckReport",
    "CheckResult",
    "EnvironmentCheckError",
    "check_environment",
    "check_environment_async",
]

Status = Literal["pass", "fail", "skip"]

NO_OP_REPLY = "I don't know."
_EPS = 1e-6


class EnvironmentCheckError(VerifiersError, AssertionError):
    """An environment failed :func:`check_environment`; the message lists every failure."""

    def __init__(self, report: CheckReport) -> None:
        self.report = report
        lines = [f"{r.name}: {r.message}" for r in report.failures]
        super().__init__(
            f"environment {report.env_id!r} failed {len(lines)} check(s):\n  " + "\n  ".join(lines)
        )


@dataclass(slots=True)
class CheckResult:
    """The outcome of one check."""

    name: str
    status: Status
    message: str
    duration_s: float = 0.0
    error_type: str | None = None
    """The exception class behind a failure (e.g. ``EnvironmentNotFoundError``), if any."""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "message": self.message,
            "duration_s": round(self.duration_s, 3),
            "error_type": self.error_type,
        }


@dataclass(slots=True)
class CheckReport:
    """All check results for one environment. ``ok`` is true when nothing failed."""

    env_id: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    def __getitem__(self, name: str) -> CheckResult:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(name)

    def raise_for_failures(self) -> None:
        """Raise :class:`EnvironmentCheckError` when any check failed."""
        if not self.ok:
            raise EnvironmentCheckError(self)

    def as_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "ok": self.ok,
            "checks": [r.as_dict() for r in self.results],
        }

    def __str__(self) -> str:
        width = max((len(r.name) for r in self.results), default=4)
        lines = [f"{self.env_id}: {'ok' if self.ok else 'FAILED'}"]
        for r in self.results:
            lines.append(f"  {r.status.upper():4}  {r.name:<{width}}  {r.message}")
        return "\n".join(lines)


def check_environment(
    env: Environment | str,
    *,
    env_args: dict[str, Any] | None = None,
    num_examples: int = 3,
    min_gold_reward: float = 1.0,
    max_no_op_reward: float = 0.0,
    no_op_reply: str = NO_OP_REPLY,
    timeout_s: float = 120.0,
    raise_on_failure: bool = False,
) -> CheckReport:
    """Run the conformance checks on ``env`` (an :class:`Environment` or an installed id).

    Args:
        env: the environment, or its id for :func:`verifiers.load_environment`.
        env_args: arguments for ``load_environment`` (only with an id).
        num_examples: how many examples the rollout checks use (the first N).
        min_gold_reward: the reward every gold (oracle) rollout must reach.
        max_no_op_reward: the most a do-nothing answer may score.
        no_op_reply: what the do-nothing model says every turn.
        timeout_s: time limit of each rollout check.
        raise_on_failure: raise :class:`EnvironmentCheckError` instead of returning a failed
            report.

    Returns the :class:`CheckReport`. Blocking; inside a running event loop use
    :func:`check_environment_async`.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ConfigError(
            "check_environment() blocks and cannot run inside a running event loop; "
            "use `await check_environment_async(...)` instead"
        )
    return asyncio.run(
        check_environment_async(
            env,
            env_args=env_args,
            num_examples=num_examples,
            min_gold_reward=min_gold_reward,
            max_no_op_reward=max_no_op_reward,
            no_op_reply=no_op_reply,
            timeout_s=timeout_s,
            raise_on_failure=raise_on_failure,
        )
    )


async def check_environment_async(
    env: Environment | str,
    *,
    env_args: dict[str, Any] | None = None,
    num_examples: int = 3,
    min_gold_reward: float = 1.0,
    max_no_op_reward: float = 0.0,
    no_op_reply: str = NO_OP_REPLY,
    timeout_s: float = 120.0,
    raise_on_failure: bool = False,
) -> CheckReport:
    """:func:`check_environment` for async code (same arguments)."""
    if num_examples < 1:
        raise ConfigError(f"num_examples must be >= 1, got {num_examples}")
    if not isinstance(env, str) and env_args:
        raise ConfigError("env_args only apply when env is an environment id")
    report = CheckReport(env_id=env if isinstance(env, str) else str(env.env_id))
    checker = _Checker(report, timeout_s)

    loaded = await checker.run("load", lambda: _check_load(env, env_args or {}))
    if loaded is None:
        for name in ("dataset", "rubric", "gold", "no_op", "records", "cleanup"):
            report.results.append(CheckResult(name, "skip", "the environment did not load"))
    else:
        rows = await checker.run("dataset", lambda: _check_dataset(loaded, num_examples))
        await checker.run("rubric", lambda: _check_rubric(loaded))
        if rows is None:
            for name in ("gold", "no_op", "records", "cleanup"):
                report.results.append(CheckResult(name, "skip", "the dataset is not usable"))
        else:
            await checker.run(
                "gold", lambda: _check_gold(loaded, rows, num_examples, min_gold_reward)
            )
            no_op = await checker.run(
                "no_op",
                lambda: _check_no_op(loaded, num_examples, no_op_reply, max_no_op_reward),
            )
            if no_op is None:
                report.results.append(
                    CheckResult("records", "skip", "the scripted rollouts did not run")
                )
            else:
                await checker.run("records", lambda: _check_records(no_op))
            await checker.run("cleanup", lambda: _check_cleanup(loaded))
        if isinstance(env, str):
            await loaded.close()
    if raise_on_failure:
        report.raise_for_failures()
    return report


# ---------------------------------------------------------------------------------- machinery


class _Failed(Exception):
    """A check's own verdict: the message is for the report; ``error_type`` names the
    exception that caused it, if any."""

    def __init__(self, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


class _Skipped(Exception):
    """The check does not apply; the message says why."""


class _Checker:
    def __init__(self, report: CheckReport, timeout_s: float) -> None:
        self.report = report
        self.timeout_s = timeout_s

    async def run(self, name: str, check: Callable[[], Awaitable[tuple[Any, str]]]) -> Any:
        """Run one check; record it; return its value (``None`` when it failed or skipped)."""
        started = time.perf_counter()
        value: Any = None
        error_type: str | None = None
        try:
            async with asyncio.timeout(self.timeout_s):
                value, message = await check()
            status: Status = "pass"
        except _Failed as e:
            status, message, error_type = "fail", str(e), e.error_type
        except _Skipped as e:
            status, message = "skip", str(e)
        except TimeoutError:
            status, message = "fail", f"did not finish within {self.timeout_s:g} s"
            error_type = "TimeoutError"
        except asyncio.CancelledError:
            raise
        except Exception as e:  # an environment bug: report it, keep checking
            status, message = "fail", f"raised {type(e).__name__}: {e}"
            error_type = type(e).__name__
        self.report.results.append(
            CheckResult(name, status, message, time.perf_counter() - started, error_type)
        )
        return value if status == "pass" else None


# ---------------------------------------------------------------------------------- checks


async def _check_load(env: Environment | str, env_args: dict[str, Any]) -> tuple[Any, str]:
    from verifiers.envs.environment import Environment

    if isinstance(env, Environment):
        return env, f"{type(env).__name__} given"
    if not isinstance(env, str):
        raise _Failed(f"expected an Environment or an environment id, got {type(env).__name__}")
    from verifiers.loading import load_environment

    started = time.perf_counter()
    try:
        loaded = load_environment(env, **env_args)
    except VerifiersError as e:
        raise _Failed(str(e), type(e).__name__) from None
    version = getattr(loaded, "env_version", None)
    where = f" {version}" if version else ""
    return loaded, (
        f"{type(loaded).__name__}{where} loaded in {time.perf_counter() - started:.2f} s"
    )


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in value)
    )


async def _check_dataset(env: Environment, n: int) -> tuple[Any, str]:
    dataset = env.get_eval_dataset()
    size = len(dataset)
    if size == 0:
        raise _Failed("the evaluation dataset is empty")
    columns = set(dataset.column_names)
    missing = {"prompt", "answer", "task", "example_id"} - columns
    if missing:
        raise _Failed(f"formatted dataset lacks column(s) {sorted(missing)}; has {sorted(columns)}")
    rows = env.get_rows("eval", n)
    problems: list[str] = []
    for row in rows:
        where = f"example {row.get('example_id')!r}"
        prompt = row.get("prompt")
        if env.message_type == "chat" and not _is_messages(prompt):
            problems.append(f"{where}: prompt is not a non-empty list of messages with roles")
        elif env.message_type == "completion" and not (isinstance(prompt, str) and prompt):
            problems.append(f"{where}: prompt is not a non-empty string")
        if not isinstance(row.get("answer"), str):
            problems.append(f"{where}: answer is {type(row.get('answer')).__name__}, not str")
        if not isinstance(row.get("info"), dict):
            problems.append(f"{where}: info is {type(row.get('info')).__name__}, not a dict")
        if not isinstance(row.get("task"), str):
            problems.append(f"{where}: task is {type(row.get('task')).__name__}, not str")
    if problems:
        raise _Failed("; ".join(problems[:5]))
    extra = sorted(columns - {"prompt", "answer", "task", "example_id", "info"})
    cols = "prompt, answer, info, task" + (f" (+ {', '.join(extra)})" if extra else "")
    return rows, f"{size} rows; columns {cols}"


async def _check_rubric(env: Environment) -> tuple[Any, str]:
    from verifiers.rubrics.rubric import func_name

    funcs = list(env.rubric.get_reward_funcs())
    weights = list(env.rubric.get_reward_weights())
    if not funcs:
        raise _Failed("the rubric has no reward functions")
    scored = [func_name(f) for f, w in zip(funcs, weights, strict=True) if w != 0]
    metrics = [func_name(f) for f, w in zip(funcs, weights, strict=True) if w == 0]
    if not scored:
        raise _Failed(f"every reward function has weight 0 (metrics only: {', '.join(metrics)})")
    text = "rewards: " + ", ".join(scored)
    if metrics:
        text += "; metrics: " + ", ".join(metrics)
    return None, text


def _has_oracle(env: Environment, rows: list[dict[str, Any]]) -> bool:
    from verifiers.envs.environment import Environment as _Base

    overridden = type(env).oracle_response is not _Base.oracle_response
    return overridden or any(str(r.get("answer") or "").strip() for r in rows)


async def _evaluate(env: Environment, client: Any, model: str, n: int) -> EvalResult:
    from verifiers.evaluation import evaluate_async

    return await evaluate_async(
        env,
        client=client,
        model=model,
        num_examples=n,
        rollouts_per_example=1,
        max_concurrent=n,
        keep_states=True,
    )


def _describe(record: dict[str, Any]) -> str:
    where = f"example {record.get('example_id')!r}"
    if record.get("error"):
        err = record["error"]
        return f"{where}: errored ({err.get('type')}: {err.get('message')})"
    if record.get("reward_errors"):
        first = record["reward_errors"][0]
        text = first.get("message") if isinstance(first, dict) else str(first)
        return f"{where}: a reward function raised ({text})"
    return f"{where}: reward {record.get('reward')!r}"


async def _check_gold(
    env: Environment, rows: list[dict[str, Any]], n: int, min_reward: float
) -> tuple[Any, str]:
    if not _has_oracle(env, rows):
        raise _Skipped("no gold answers and no oracle_response(): nothing to check")
    result = await _evaluate(env, None, "oracle", n)
    bad = [
        r
        for r in result.records
        if r.get("error")
        or r.get("reward_errors")
        or r.get("reward") is None
        or float(r["reward"]) < min_reward - _EPS
    ]
    if bad:
        raise _Failed(
            f"{len(bad)}/{len(result.records)} gold rollouts below {min_reward:g}: "
            + "; ".join(_describe(r) for r in bad[:3])
        )
    rewards = [float(r["reward"]) for r in result.records]
    return result, f"{len(rewards)} gold rollouts, min reward {min(rewards):g}"


async def _check_no_op(env: Environment, n: int, reply: str, max_reward: float) -> tuple[Any, str]:
    from verifiers.testing.scripted import ScriptedClient

    client = ScriptedClient(responder=lambda prompt: reply)
    result = await _evaluate(env, client, "scripted-no-op", n)
    errored = [r for r in result.records if r.get("error")]
    if errored:
        raise _Failed(
            f"{len(errored)}/{len(result.records)} no-op rollouts errored instead of scoring: "
            + "; ".join(_describe(r) for r in errored[:3])
        )
    high = [
        r
        for r in result.records
        if r.get("reward_errors")
        or r.get("reward") is None
        or float(r["reward"]) > max_reward + _EPS
    ]
    if high:
        raise _Failed(
            f"a model answering {reply!r} should get at most {max_reward:g}: "
            + "; ".join(_describe(r) for r in high[:3])
        )
    turns = max(int(r.get("num_turns") or 0) for r in result.records)
    return result, (
        f"{len(result.records)} rollouts answering {reply!r}: reward <= {max_reward:g} "
        f"(up to {turns} turn{'s' if turns != 1 else ''})"
    )


async def _check_records(result: EvalResult) -> tuple[Any, str]:
    import json

    problems: list[str] = []
    for record in result.records:
        where = f"example {record.get('example_id')!r}"
        try:
            json.dumps(record)  # strict: no object may leak into a record as its repr
        except (TypeError, ValueError) as e:
            problems.append(f"{where}: record is not plain JSON ({e})")
            continue
        reward = record.get("reward")
        if not isinstance(reward, int | float) or not math.isfinite(float(reward)):
            problems.append(f"{where}: reward {reward!r} is not a finite number")
        if not record.get("stop_condition"):
            problems.append(f"{where}: no stop condition recorded")
        if int(record.get("num_turns") or 0) < 1:
            problems.append(f"{where}: no model turn recorded")
        for key, value in (record.get("metrics") or {}).items():
            if not isinstance(value, int | float):
                problems.append(f"{where}: metric {key!r} is {type(value).__name__}")
    if problems:
        raise _Failed("; ".join(problems[:5]))
    stops = sorted({str(r["stop_condition"]) for r in result.records})
    return None, f"records serialise; stop conditions: {', '.join(stops)}"


async def _check_cleanup(env: Environment) -> tuple[Any, str]:
    active = getattr(env, "active_sandboxes", None)
    if active is None:
        raise _Skipped("the environment tracks no per-rollout resources")
    if active:
        raise _Failed(f"{len(active)} sandbox(es) still live after the rollouts finished")
    return None, "no live sandboxes after the rollouts"
