"""`vf hub worker`: takes jobs from the hub's database and runs them in sandboxes.

Two kinds of job (see :mod:`hub_server.services.jobs` for the queue):

``validate``
    A newly published release: its wheel is unpacked (a wheel install runs no code; the files
    are only extracted) into a job directory that a bubblewrap sandbox sees read-only, and
    ``vf env validate``'s checks run inside the sandbox. The report goes on the release, and
    the environment's page shows it.
``rescore``
    A pushed run pinned to a release's wheel: the same unpacked wheel, the run's records, and
    inside the sandbox the environment's rubric recomputes every reward from the pushed
    completions. The worker (outside, not trusting the sandbox with the verdict) compares them
    with the pushed rewards: ``agree`` or ``mismatch`` (with the first differences).

Environment code runs only inside the sandbox: no network, a read-only view of the job
directory, this installation's ``verifiers`` and its dependencies, memory and time limits. A
re-score job's sandbox is nested (the environment may sandbox its own grading inside it), gets
the release's dependencies from the hub (:mod:`hub_server.jobdeps`) and the machine's agent
cache read-only; see docs/security.md.
A job that crashes or times out is retried with a back-off, then marked failed with its log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import secrets
import shutil
import socket
import sys
import sysconfig
import tempfile
import threading
import traceback
import uuid
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import select

from hub_server import models as m
from hub_server.services.jobs import Claimed, bounded_log
from hub_server.services.runfiles import MAX_METADATA_BYTES
from hub_server.services.runviews import _bounded_summary, _jsonable, _metrics

log = logging.getLogger("hub_server.worker")

Handler = Callable[["Worker", Claimed], str]
TASKS = Path(__file__).with_name("sandbox_tasks.py")
REWARD_TOLERANCE = 1e-6
MAX_REPORT = 64 * 1024  # bytes of a validation report kept on the release
MISMATCH_EXAMPLES = 5
ORACLE_MODELS = frozenset({"oracle"})  # a run claiming these is checked against the oracle
AGENT_CACHE_INSIDE = "/opt/vf/agents"  # where a re-score job sees the machine's agent cache


class JobError(Exception):
    """A job could not be done (the message is its log)."""


class Worker:
    """One worker: ``run_once`` takes and runs one job; ``run`` loops until stopped."""

    def __init__(
        self,
        service: Any,
        *,
        name: str | None = None,
        handlers: dict[str, Handler] | None = None,
        backend: str | None = None,
    ) -> None:
        self.service = service
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.handlers: dict[str, Handler] = {"rescore": rescore_job, "validate": validate_job}
        self.handlers.update(handlers or {})
        self.backend = backend
        self.stopping = threading.Event()

    @property
    def settings(self) -> Any:
        return self.service.settings

    def run_once(self) -> bool:
        """Run one due job; False when there was none."""
        job = self.service.jobs.claim(self.name, tuple(self.handlers))
        if job is None:
            return False
        handler = self.handlers[job.kind]
        try:
            out = handler(self, job)
        except Exception as e:  # a crash: retried, then failed with its log
            detail = e.args[0] if isinstance(e, JobError) and e.args else traceback.format_exc()
            retried = self.service.jobs.retry_or_fail(job, self.name, str(detail))
            log.warning(
                "job %s (%s %s) failed on attempt %s%s",
                job.id, job.kind, job.subject_id, job.attempt, "; retrying" if retried else "",
            )  # fmt: skip
            return True
        self.service.jobs.finish(job.id, self.name, out)
        return True

    def run(self, *, poll_s: float | None = None, until_idle: bool = False) -> int:
        """Take jobs until :meth:`stop` (or, with ``until_idle``, until none is due); returns
        how many ran."""
        done = 0
        wait = self.settings.worker_poll_s if poll_s is None else poll_s
        while not self.stopping.is_set():
            try:
                ran = self.run_once()
            except Exception:  # the database went away, ...: keep the worker alive
                log.exception("the worker could not take a job")
                ran = False
            done += ran
            if not ran:
                if until_idle:
                    return done
                self.stopping.wait(wait)
        return done

    def stop(self) -> None:
        self.stopping.set()

    def start_thread(self) -> threading.Thread:
        t = threading.Thread(target=self.run, name=f"vf-hub-worker-{self.name}", daemon=True)
        t.start()
        return t


# ---------------------------------------------------------------------------- job directory


_JOBS_ROOT: list[Path] = []


def _job_dir() -> Path:
    """A directory the sandbox's own uid can read (it runs as another uid when the worker is
    root) but no other local user can find: a random name in a directory they cannot list."""
    if not _JOBS_ROOT or not _JOBS_ROOT[0].is_dir():
        root = Path(tempfile.mkdtemp(prefix="vf-hub-jobs-"))
        root.chmod(0o711)
        _JOBS_ROOT[:] = [root]
    d = _JOBS_ROOT[0] / secrets.token_hex(16)
    d.mkdir(mode=0o700)
    d.chmod(0o755)
    return d


def _readable(path: Path) -> None:
    for dirpath, _dirs, files in os.walk(path):
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)


def _extract_wheel(wheel: Path, site: Path) -> None:
    """Install a (pure) wheel by extracting it: no code runs. ``*.data/purelib`` and
    ``platlib`` go to the top, other ``.data`` parts are dropped."""
    site.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = info.filename
            parts = name.split("/")
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            if info.is_dir() or any(p in ("", ".", "..") for p in parts) or name.startswith("/"):
                continue
            target = site.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
    _readable(site)


def _wheel_of(service: Any, release_id: int, sha256: str | None = None) -> tuple[Any, str]:
    """The release's wheel file row and its environment id (entry point name)."""
    with service.session() as db:
        rel = db.get(m.Release, release_id)
        if rel is None:
            raise JobError(f"release {release_id} no longer exists")
        stmt = select(m.File).where(m.File.release_id == rel.id, m.File.wheel_slot == 1)
        if sha256:
            stmt = select(m.File).where(m.File.release_id == rel.id, m.File.sha256 == sha256)
        f = db.scalar(stmt)
        if f is None or not f.filename.endswith(".whl"):
            raise JobError(f"release {release_id} has no wheel to run")
        names = sorted((rel.entry_points or {}).keys())
        db.expunge(f)
    if not names:
        raise JobError(
            f"{f.filename} declares no entry point in [verifiers.environments]; nothing to load"
        )
    return f, names[0]


def _fetch(service: Any, key: str, dest: Path) -> None:
    with dest.open("wb") as out:
        for chunk in service.storage.open(key):
            out.write(chunk)


def _inflate_records(service: Any, key: str, dest: Path) -> None:
    """The pushed run's records (the stream after its metadata line), bounded as at push."""
    limit = service.settings.max_run_uncompressed_bytes
    inflater = zlib.decompressobj(wbits=31)
    total = 0
    head = True
    with dest.open("wb") as out:
        pending = bytearray()

        def take(data: bytes) -> None:
            nonlocal total, head
            total += len(data)
            if total > limit:
                raise JobError(f"the run expands beyond {limit} bytes")
            if head:
                pending.extend(data)
                nl = pending.find(b"\n")
                if nl < 0:
                    if len(pending) > MAX_METADATA_BYTES:
                        raise JobError("the run's metadata line is over 1 MiB")
                    return
                data, head = bytes(pending[nl + 1 :]), False
                pending.clear()
            out.write(data)

        for chunk in service.storage.open(key):
            while chunk:
                take(inflater.decompress(chunk, 1 << 20))
                chunk = inflater.unconsumed_tail
        take(inflater.flush())
    dest.chmod(0o644)


# ---------------------------------------------------------------------------- the sandbox


def _sdk_binds() -> tuple[dict[str, str], str]:
    """Read-only binds that give the sandbox's python this installation's ``verifiers`` and
    its dependencies, and the PYTHONPATH that finds them (after the job's own site). The
    dependencies keep a ``site-packages`` path: some libraries (dill, so ``datasets``) treat
    modules elsewhere as user code and pickle them by value."""
    import verifiers

    sdk = Path(verifiers.__file__).resolve().parent
    deps = Path(sysconfig.get_paths()["purelib"]).resolve()
    binds = {str(sdk): "/opt/vf/sdk/verifiers", str(deps): "/opt/vf/lib/site-packages"}
    return binds, "/job/site:/opt/vf/sdk:/opt/vf/lib/site-packages"


def _agent_cache_bind() -> tuple[dict[str, str], dict[str, str]]:
    """The agent programs this machine has cached (``verifiers.agents.installs``), read-only at
    :data:`AGENT_CACHE_INSIDE`, for environments whose sandboxes run one; nothing when there
    is no cache."""
    from verifiers.agents.installs import agent_cache_dir

    cache = agent_cache_dir()
    if not cache.is_dir():
        return {}, {}
    return {str(cache.resolve()): AGENT_CACHE_INSIDE}, {"VF_AGENT_CACHE": AGENT_CACHE_INSIDE}


def run_in_sandbox(
    job_dir: Path,
    argv: list[str],
    out_name: str,
    *,
    timeout: float,
    backend: str | None = None,
    nested: bool = False,
) -> tuple[bytes, str]:
    """Run ``python3 /job/sandbox_tasks.py ARGV...`` in a fresh sandbox that sees ``job_dir``
    read-only at ``/job``; returns the file it wrote (``out_name`` in its work dir) and its
    output (stdout and stderr, bounded) for the log. The job's dependencies from the hub, if
    any, are in ``job_dir/deps/*`` (after its own ``site`` on the path). ``nested``: the
    environment may start sandboxes of its own (bwrap's ``nested`` mode; see
    docs/security.md), and sees this machine's agent cache read-only."""
    from verifiers.sandbox import SandboxLimits, create_sandbox

    shutil.copyfile(TASKS, job_dir / "sandbox_tasks.py")
    (job_dir / "sandbox_tasks.py").chmod(0o644)
    binds, pythonpath = _sdk_binds()
    binds[str(job_dir)] = "/job"
    deps = sorted(p.name for p in (job_dir / "deps").glob("*") if p.is_dir())
    if deps:
        own, _, rest = pythonpath.partition(":")
        pythonpath = ":".join([own, *(f"/job/deps/{d}" for d in deps), rest])
    limits = SandboxLimits(
        memory_mb=4096, cpu_seconds=int(timeout) + 5, timeout=timeout, processes=128,
        disk_mb=512, max_output_bytes=256 * 1024,
    )  # fmt: skip
    env = {
        "PYTHONPATH": pythonpath,
        "HOME": "/home/user",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    out_path = f"/home/user/{out_name}"

    async def go() -> tuple[bytes, str]:
        options: dict[str, Any] = {}
        if backend in (None, "bwrap"):
            if nested:
                agent_binds, agent_env = _agent_cache_bind()
                binds.update(agent_binds)
                # the sandboxes inside start the Python agent (nothing compiled per job)
                env.update(agent_env, VF_SANDBOX_AGENT="python")
                options["nested"] = True
            options["ro_binds"] = binds
        sb = create_sandbox(backend or "bwrap", limits=limits, **options)
        async with sb:
            r = await sb.exec(
                ["python3", "/job/sandbox_tasks.py", *argv, out_path],
                env=env,
                cwd="/home/user",
                timeout=timeout,
            )
            output = (r.stdout or "") + (r.stderr or "")
            if r.timed_out:
                raise JobError(bounded_log(f"timed out after {timeout:g}s\n{output}"))
            if r.exit_code != 0:
                raise JobError(bounded_log(f"exit status {r.exit_code}\n{output}"))
            try:
                data = await sb.read_file(out_path, max_bytes=64 << 20)
            except (FileNotFoundError, ValueError) as e:
                raise JobError(bounded_log(f"no result: {e}\n{output}")) from None
            return data, output

    return asyncio.run(go())


# ---------------------------------------------------------------------------- jobs


def validate_job(worker: Worker, job: Claimed) -> str:
    service = worker.service
    f, env_id = _wheel_of(service, job.subject_id)
    job_dir = _job_dir()
    try:
        wheel = job_dir / f.filename
        _fetch(service, f.blob_key, wheel)
        _extract_wheel(wheel, job_dir / "site")
        wheel.unlink()
        used = _install_dependencies(service, job.subject_id, job_dir / "deps")
        # nested: an environment that grades in a sandbox of its own validates as it re-scores
        data, output = run_in_sandbox(
            job_dir,
            ["validate", env_id],
            "report.json",
            timeout=worker.settings.job_timeout_s,
            backend=worker.backend,
            nested=True,
        )
        output = "".join(f"dependency: {d}\n" for d in used) + output
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)
    try:
        report = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise JobError(f"the validation wrote no JSON report\n{output}") from None
    if not isinstance(report, dict):
        raise JobError("the validation report is not a JSON object")
    report = _bounded_report(report)
    with service.session() as db:
        rel = db.get(m.Release, job.subject_id)
        if rel is not None:
            rel.validation = report
            rel.validation_status = "passed" if report.get("ok") else "failed"
            db.commit()
    return f"validated {env_id} ({f.filename}): {'ok' if report.get('ok') else 'failed'}\n{output}"


def _bounded_report(report: dict[str, Any]) -> dict[str, Any]:
    """What of a report is kept: ok, env id and each check's name, status, time, message (cut)."""
    results = []
    for r in (report.get("checks") or [])[:20]:
        if isinstance(r, dict):
            results.append(
                {
                    "name": str(r.get("name", "?"))[:50],
                    "status": str(r.get("status", "?"))[:10],
                    "duration_s": r.get("duration_s") if isinstance(r.get("duration_s"), int | float) else None,
                    "message": str(r.get("message") or "")[:1000],
                }
            )  # fmt: skip
    return {"ok": bool(report.get("ok")), "env_id": str(report.get("env_id", ""))[:200],
            "results": results}  # fmt: skip


def rescore_job(worker: Worker, job: Claimed) -> str:
    service = worker.service
    with service.session() as db:
        row = db.get(m.EvalResult, job.subject_id)
        if row is None:
            return f"run {job.subject_id} was deleted"
        release_id, wheel_sha, key = row.release_id, row.wheel_sha256, row.results_key
        claims_oracle = row.model.strip().lower() in ORACLE_MODELS
        per_example = row.rollouts_per_example
    if not key:
        raise JobError("the run has no stored records")
    f, env_id = _wheel_of(service, release_id, wheel_sha)
    job_dir = _job_dir()
    try:
        wheel = job_dir / f.filename
        _fetch(service, f.blob_key, wheel)
        _extract_wheel(wheel, job_dir / "site")
        wheel.unlink()
        used = _install_dependencies(service, release_id, job_dir / "deps")
        records = job_dir / "records.jsonl"
        _inflate_records(service, key, records)
        data, output = run_in_sandbox(
            job_dir,
            ["rescore", env_id, "/job/records.jsonl", "1" if claims_oracle else "0"],
            "rewards.jsonl",
            timeout=worker.settings.job_timeout_s,
            backend=worker.backend,
            nested=True,
        )
        output = "".join(f"dependency: {d}\n" for d in used) + output
        outcome = compare_rewards(records, data, rollouts_per_example=per_example)
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)
    summary = _jsonable(_bounded_summary(outcome.pop("summary")))
    gold = claims_oracle and outcome["status"] == "agree" and outcome.get("oracle") == "agree"
    with service.session() as db:
        row = db.get(m.EvalResult, job.subject_id)
        if row is not None:
            row.rescore_status = outcome["status"]
            row.rescore_detail = outcome
            row.gold = gold
            details = dict(row.details or {})
            details.setdefault("pushed_summary", details.get("summary"))
            details["summary"] = summary
            row.details = details
            row.metrics = summary_metrics(summary)  # the leaderboard: re-scored rewards only
            db.commit()
    return (
        f"re-scored {outcome['records']} records of run {job.subject_id}: {outcome['status']}"
        f"{' (gold)' if gold else ''}\n{output}"
    )


def _install_dependencies(service: Any, release_id: int, deps_dir: Path) -> list[str]:
    """Extract the wheels of the release's dependencies from the hub
    (:func:`hub_server.jobdeps.hub_dependencies`) into ``deps_dir/N``; what was used, for the
    job's log."""
    from hub_server.jobdeps import UnresolvedDependency, hub_dependencies

    try:
        with service.session() as db:
            found = hub_dependencies(db, release_id)
    except UnresolvedDependency as e:
        raise JobError(str(e)) from None
    for n, dep in enumerate(found):
        wheel = deps_dir / dep.file.filename
        deps_dir.mkdir(exist_ok=True)
        _fetch(service, dep.file.blob_key, wheel)
        _extract_wheel(wheel, deps_dir / f"{n:02d}")
        wheel.unlink()
    if found:
        _readable(deps_dir)
    return [dep.describe() for dep in found]


def _reward(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return (
        math.isfinite(a) and math.isfinite(b) and abs(a - b) <= REWARD_TOLERANCE * max(1.0, abs(b))
    )


def _sandbox_lines(
    recomputed: bytes,
) -> tuple[dict[int, tuple[float | None, bool]], dict[str, list[float | None]], float]:
    """What the sandbox wrote: per record position ``(reward, could not compute)``, the
    oracle's rewards per example id, and the environment's pass threshold."""
    got: dict[int, tuple[float | None, bool]] = {}
    oracle: dict[str, list[float | None]] = {}
    threshold = 0.5
    for line in recomputed.splitlines():
        with contextlib.suppress(orjson.JSONDecodeError, TypeError, KeyError, ValueError):
            item = orjson.loads(line)
            if "i" in item:
                got[int(item["i"])] = (_reward(item["reward"]), bool(item.get("failed")))
            elif "oracle" in item:
                oracle[str(item["oracle"])] = [_reward(r) for r in item["rewards"]][:1000]
            elif "pass_threshold" in item and (t := _reward(item["pass_threshold"])) is not None:
                threshold = t
    return got, oracle, threshold


def compare_rewards(
    records: Path, recomputed: bytes, *, rollouts_per_example: int = 1
) -> dict[str, Any]:
    """Compare EVERY pushed record's reward (errored ones too) with the one the sandbox
    recomputed (by line). A record is *agreed* (recomputed, equal), a *mismatch* (recomputed,
    different) or *not computable* (the sandbox could not compute it: the record lacks what
    the rubric reads, a reward function raised, or no line came back) unless the pushed
    record failed the same way. The run's status: ``agree`` only when every record agreed,
    ``mismatch`` when any differs, else ``unscorable``. Also returns the summary of the
    recomputed rewards (what the hub lists) and, where the sandbox ran the oracle, whether the
    run's rewards are the oracle's (``oracle``: ``agree`` or ``differs``)."""
    from verifiers.results import summarize

    got, oracle, threshold = _sandbox_lines(recomputed)
    counts = Counter[str]()
    mismatches: list[dict[str, Any]] = []
    rescored: list[dict[str, Any]] = []
    oracle_ok = bool(oracle)
    with records.open("rb") as f:
        for i, line in enumerate(f):
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(rec, dict):
                continue
            counts["records"] += 1
            pushed = _reward(rec.get("reward"))
            mine, failed = got.get(i, (None, True))
            example = str(rec.get("example_id"))[:100]
            if i not in got:
                counts["missing"] += 1
            elif _same(pushed, mine) and (not failed or rec.get("reward_errors")):
                counts["agreed"] += 1
            elif failed:
                counts["unscorable"] += 1  # could not compute: not a lie, not a check either
                mine = None
            else:
                counts["mismatches"] += 1
                if len(mismatches) < MISMATCH_EXAMPLES:
                    mismatches.append({"rollout": i, "example_id": example,
                                       "pushed": pushed, "recomputed": mine})  # fmt: skip
            mine_ok = i in got and not failed
            rescored.append(_rescored(rec, example, mine if mine_ok else None))
            theirs = oracle.get(example)
            if not theirs or not all(_same(pushed, r) for r in theirs):
                oracle_ok = False
    total = counts["records"]
    if counts["mismatches"]:
        status = "mismatch"
    elif total and counts["agreed"] == total:
        status = "agree"
    else:
        status = "unscorable"  # the hub could not recompute every reward: it says so
    out = {
        "status": status,
        "records": total,
        "agreed": counts["agreed"],
        "checked": counts["agreed"] + counts["mismatches"],
        "mismatches": counts["mismatches"],
        "unscorable": counts["unscorable"],
        "missing": counts["missing"],
        "examples": mismatches,
        "summary": summarize(rescored, max(1, rollouts_per_example), threshold),
    }
    if oracle:
        out["oracle"] = "agree" if oracle_ok else "differs"
    return out


def _rescored(rec: dict[str, Any], example: str, reward: float | None) -> dict[str, Any]:
    """What the summary of the recomputed rewards reads of a record (its error bounded)."""
    err = rec.get("error")
    error = None
    if err:
        kind = err.get("type", "error") if isinstance(err, dict) else "error"
        msg = err.get("message", "") if isinstance(err, dict) else ""
        error = {"type": str(kind)[:100], "message": str(msg)[:300]}
    example_id = rec.get("example_id")
    if not isinstance(example_id, int | str) or isinstance(example_id, bool):
        example_id = example
    return {"example_id": example_id, "reward": reward, "error": error}


def summary_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """The leaderboard's numbers from a summary (mean reward, its stderr, pass@k)."""
    return _metrics(summary)


def main_loop(service: Any, *, once: bool = False, backend: str | None = None) -> int:
    worker = Worker(service, backend=backend)
    print(f"vf hub worker {worker.name}: taking jobs", file=sys.stderr, flush=True)
    try:
        return worker.run(until_idle=once)
    except KeyboardInterrupt:
        return 0
