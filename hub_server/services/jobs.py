"""The job queue behind `vf hub worker`, in the hub's own database.

A job is a row of ``hub_jobs``: ``queued`` until a worker claims it, ``running`` while one holds
it, then ``done`` or, after ``max_attempts`` tries that crashed or timed out, ``failed`` with
its log. Claiming is one transaction: on PostgreSQL ``SELECT ... FOR UPDATE SKIP LOCKED`` picks a
row no other worker holds (so workers on several machines share the queue), and the claim
itself is a conditional update (``WHERE status = 'queued'``), so even where the database has no
row locks (SQLite: run one worker) a job is never taken twice. A running job whose lease
(``job_timeout_s`` plus a grace) has passed belongs to a worker that died: it is taken again,
until its attempts are spent; then it is marked failed with the reason (a poisoned job is
never retried forever, and never stops the queue: the claim moves on to the next job).

Fairness: a worker takes the oldest due job of an environment no worker is busy with before
any other (a slow or stuck release holds one worker, not the queue), and every push is held
to quotas of unfinished jobs per user and per environment (:func:`check_quota`: a 429 naming
the quota).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session, aliased

from hub_server import models as m
from hub_server.errors import TooManyRequests
from hub_server.services.context import Part, now

KINDS = ("rescore", "validate")
MAX_LOG = 16 * 1024  # the tail of a job's log that is kept
LEASE_GRACE_S = 60.0


UNFINISHED = ("queued", "running")


def enqueue(
    db: Session,
    kind: str,
    subject_id: int,
    *,
    max_attempts: int = 3,
    user_id: int | None = None,
    environment_id: int | None = None,
) -> m.Job:
    """Add a job in ``db``'s transaction (committed with the change that asked for it);
    ``user_id`` (who pushed) and ``environment_id`` are what the quotas and the fair claim
    count by."""
    job = m.Job(
        kind=kind,
        subject_id=subject_id,
        user_id=user_id,
        environment_id=environment_id,
        status="queued",
        attempts=0,
        max_attempts=max_attempts,
        run_after=now(),
        created_at=now(),
    )
    db.add(job)
    return job


@dataclass(frozen=True)
class Claimed:
    id: int
    kind: str
    subject_id: int
    attempt: int
    max_attempts: int


def check_quota(
    db: Session, settings: Any, *, user_id: int | None, environment_id: int | None, what: str
) -> None:
    """Refuse (429, naming the quota) a push that would queue more unfinished jobs for one
    user or one environment than the hub allows (``VF_HUB_MAX_QUEUED_JOBS_PER_USER``,
    ``..._PER_ENVIRONMENT``; 0: no limit)."""
    checks = (
        ("per user", m.Job.user_id, user_id, settings.max_queued_jobs_per_user,
         "VF_HUB_MAX_QUEUED_JOBS_PER_USER"),
        ("per environment", m.Job.environment_id, environment_id,
         settings.max_queued_jobs_per_environment, "VF_HUB_MAX_QUEUED_JOBS_PER_ENVIRONMENT"),
    )  # fmt: skip
    for label, column, value, limit, variable in checks:
        if value is None or limit <= 0:
            continue
        waiting = db.scalar(
            select(func.count())
            .select_from(m.Job)
            .where(column == value, m.Job.status.in_(UNFINISHED))
        )
        if (waiting or 0) >= limit:
            raise TooManyRequests(
                f"{what} refused: the job quota {label} is {limit} unfinished verification "
                f"jobs ({variable}) and {waiting} are queued or running; push again once the "
                "hub's workers have taken them (`vf eval runs list` shows their progress)",
                retry_after=max(1, int(settings.job_timeout_s)),
            )


def bounded_log(text: str) -> str:
    text = text.replace("\x00", "\\x00")  # PostgreSQL text holds no NUL: a log must store
    if len(text) <= MAX_LOG:
        return text
    return "[... earlier output cut ...]\n" + text[-MAX_LOG:]


class JobService(Part):
    """Claiming, finishing and listing jobs."""

    def claim(self, worker: str, kinds: tuple[str, ...] = KINDS) -> Claimed | None:
        """Take the oldest due job for ``worker`` (None when there is none): first among
        environments no live worker is busy with, then any. A job of a dead worker whose
        attempts are spent is marked failed on the way (and the next one is taken)."""
        for _ in range(100):  # each pass either claims, fails one spent job, or finds none
            outcome = self._claim_one(worker, kinds)
            if not isinstance(outcome, str):
                return outcome
        return None

    def _claim_one(self, worker: str, kinds: tuple[str, ...]) -> Claimed | str | None:
        lease = timedelta(seconds=self.ctx.settings.job_timeout_s + LEASE_GRACE_S)
        with self.session() as db:
            t = now()
            due = or_(
                (m.Job.status == "queued") & (m.Job.run_after <= t),
                (m.Job.status == "running") & (m.Job.locked_at < t - lease),
            )
            busy = aliased(m.Job)
            idle_env = ~(
                select(busy.id)
                .where(
                    busy.environment_id == m.Job.environment_id,
                    busy.status == "running",
                    busy.locked_at >= t - lease,
                )
                .exists()
            )
            job = None
            for extra in (idle_env, None):
                stmt = select(m.Job).where(m.Job.kind.in_(kinds), due)
                if extra is not None:
                    stmt = stmt.where(extra)
                stmt = stmt.order_by(m.Job.run_after, m.Job.id).limit(1)
                job = db.scalar(stmt.with_for_update(skip_locked=True, of=m.Job))
                if job is not None:
                    break
            if job is None:
                return None
            if job.status == "running" and job.attempts >= job.max_attempts:
                job.status = "failed"
                job.finished_at = t
                job.log = bounded_log(
                    (job.log or "")
                    + f"\nworker {job.locked_by} stopped answering on attempt {job.attempts} of "
                    f"{job.max_attempts}; no retry left"
                )
                db.commit()
                self._subject_failed(job.kind, job.subject_id, job.log or "")
                return "again"
            claimed = Claimed(job.id, job.kind, job.subject_id, job.attempts + 1, job.max_attempts)
            took = db.execute(
                update(m.Job)
                .where(
                    m.Job.id == job.id, m.Job.status == job.status, m.Job.attempts == job.attempts
                )
                .values(
                    status="running", locked_by=worker[:100], locked_at=t, attempts=job.attempts + 1
                )
            )
            db.commit()
            if took.rowcount != 1:  # type: ignore[attr-defined]
                return "again"  # another worker took it first
            return claimed

    def finish(self, job_id: int, worker: str, log: str) -> None:
        with self.session() as db:
            db.execute(
                update(m.Job)
                .where(m.Job.id == job_id, m.Job.locked_by == worker[:100])
                .values(status="done", finished_at=now(), log=bounded_log(log))
            )
            db.commit()

    def retry_or_fail(self, job: Claimed, worker: str, log: str) -> bool:
        """After a crash or timeout: queue the job again (with a back-off) while attempts are
        left, else mark it failed (and its subject); returns whether it was retried."""
        retry = job.attempt < job.max_attempts
        with self.session() as db:
            values: dict[str, Any] = {"log": bounded_log(log), "locked_by": None}
            if retry:
                wait = self.ctx.settings.job_retry_s * 2 ** (job.attempt - 1)
                values.update(status="queued", run_after=now() + timedelta(seconds=wait))
            else:
                values.update(status="failed", finished_at=now())
            db.execute(
                update(m.Job)
                .where(m.Job.id == job.id, m.Job.locked_by == worker[:100])
                .values(**values)
            )
            db.commit()
        if not retry:
            self._subject_failed(job.kind, job.subject_id, log)
        return retry

    def _subject_failed(self, kind: str, subject_id: int, log: str) -> None:
        with self.session() as db:
            if kind == "rescore":
                row = db.get(m.EvalResult, subject_id)
                if row is not None:
                    row.rescore_status = "failed"
                    row.rescore_detail = {"status": "failed", "error": bounded_log(log)[-2000:]}
            elif kind == "validate":
                rel = db.get(m.Release, subject_id)
                if rel is not None:
                    rel.validation_status = "error"
                    rel.validation = {"error": bounded_log(log)[-2000:]}
            db.commit()

    def backfill(self) -> tuple[int, int]:
        """Queue the work a hub from before the worker never asked for: validation of every
        release with a wheel and an entry point, re-scoring of every pinned pushed run.
        Returns ``(validations, re-scorings)`` queued."""
        with self.session() as db:
            wheel_releases = (
                select(m.File.release_id).where(m.File.wheel_slot == 1).scalar_subquery()
            )
            releases = list(
                db.scalars(
                    select(m.Release).where(
                        m.Release.validation_status.is_(None), m.Release.id.in_(wheel_releases)
                    )
                )
            )
            validations = 0
            for rel in releases:
                if rel.entry_points:
                    rel.validation_status = "pending"
                    enqueue(db, "validate", rel.id)
                    validations += 1
            runs = list(
                db.scalars(
                    select(m.EvalResult).where(
                        m.EvalResult.rescore_status.is_(None),
                        m.EvalResult.verified.is_(True),
                        m.EvalResult.results_key.is_not(None),
                    )
                )
            )
            for row in runs:
                row.rescore_status = "pending"
                enqueue(db, "rescore", row.id)
            db.commit()
            return validations, len(runs)

    def list(self, status: str | None = None, limit: int = 100) -> list[m.Job]:
        with self.session() as db:
            stmt = select(m.Job).order_by(m.Job.id.desc()).limit(limit)
            if status:
                stmt = stmt.where(m.Job.status == status)
            jobs = list(db.scalars(stmt))
            db.expunge_all()
            return jobs
