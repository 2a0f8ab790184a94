"""A fair verification worker (issue 36, point 5): several workers at once, each one job at a
time, a slow release holding one worker and not the queue, quotas of unfinished jobs per user
and per environment (429 naming the quota), poisoned jobs failed after their attempts with the
reason, never retried forever and never stopping the queue; `vf hub serve --workers N`."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from hub_server import models as m
from hub_server.services import open_service
from hub_server.services.context import now
from hub_server.services.jobs import enqueue
from hub_server.settings import Settings
from hub_server.worker import Worker

from .conftest import BACKENDS, Hub, make_settings
from .live import live_server
from .test_run_trust import _body, _honest, _meta, _published, _put


@pytest.fixture(params=BACKENDS)
def make_hub(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """``make_hub(**settings)``: a hub of its own (database, queue, limits) on the backend."""
    from hub_server.app import create_app

    opened: list[tuple[Any, Any, Any]] = []

    def make(**changes: Any) -> Hub:
        gen = make_settings(request.param, request, tmp_path / f"data{len(opened)}")
        settings = next(gen).with_(job_retry_s=0.0, **changes)
        app = create_app(settings)
        _, admin = app.state.service.create_user(f"admin-{uuid.uuid4().hex[:6]}", admin=True)
        server = live_server(app)
        url = server.__enter__()
        opened.append((gen, app, server))
        return Hub(url=url, app=app, settings=settings, admin_token=admin, tmp=tmp_path)

    make.backend = request.param  # type: ignore[attr-defined]
    try:
        yield make
    finally:
        for gen, app, server in reversed(opened):
            server.__exit__(None, None, None)
            app.state.engine.dispose()
            gen.close()


def _kind() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def test_two_workers_drain_twenty_jobs_of_three_users_and_a_slow_release_holds_one(
    make_hub: Any,
) -> None:
    """PostgreSQL (SKIP LOCKED): worker 1 holds release A's first job until every other
    user's job is done; worker 2 meanwhile drains them all, taking none of A's other jobs
    while A is busy (a fair claim), and no job runs twice."""
    if make_hub.backend != "postgres-s3":
        pytest.skip("several workers at once need PostgreSQL (on SQLite run one worker)")
    hub = make_hub()
    kind = _kind()
    env_a, env_b, env_c = 9001, 9002, 9003
    alice, bob, carol = 501, 502, 503
    jobs: dict[int, int] = {}  # job id -> environment
    services = [open_service(hub.settings.with_(auto_migrate=False)) for _ in range(2)]
    with services[0].session() as db:
        plan = [(alice, env_a)] * 6 + [(bob, env_b)] * 7 + [(carol, env_c)] * 7
        made = [enqueue(db, kind, i, user_id=u, environment_id=e) for i, (u, e) in enumerate(plan)]
        db.commit()
        jobs = {j.id: j.environment_id or 0 for j in made}
    others = sum(1 for e in jobs.values() if e != env_a)
    lock = threading.Lock()
    started: list[tuple[str, int]] = []
    finished_others = [0]
    others_done = threading.Event()
    a_started = threading.Event()

    def work(worker: Worker, job: Any) -> str:
        env = jobs[job.id]
        with lock:
            started.append((worker.name, job.id))
        if env == env_a:
            a_started.set()
            assert others_done.wait(60), "the other users' jobs were held behind release A"
        else:
            with lock:
                finished_others[0] += 1
                if finished_others[0] == others:
                    others_done.set()
        return "ok"

    workers = [Worker(s, name=f"w{i}-{kind}") for i, s in enumerate(services)]
    for w in workers:
        w.handlers = {kind: work}
    threads = [threading.Thread(target=w.run, kwargs={"until_idle": True}) for w in workers]
    try:
        threads[0].start()
        assert a_started.wait(60)  # worker 1 holds release A's oldest job
        threads[1].start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
    finally:
        for s in services:
            s.engine.dispose()
    counts = Counter(job_id for _, job_id in started)
    assert set(counts) == set(jobs) and set(counts.values()) == {1}, counts
    order = [job_id for _, job_id in started]
    first_a = order[0]
    assert jobs[first_a] == env_a and started[0][0] == workers[0].name
    later_a = [i for i, job_id in enumerate(order) if jobs[job_id] == env_a and job_id != first_a]
    last_other = max(i for i, job_id in enumerate(order) if jobs[job_id] != env_a)
    assert min(later_a) > last_other, "worker 2 took release A's jobs before the others"
    listed = [j for j in hub.service.jobs.list(limit=100) if j.kind == kind]
    assert {j.status for j in listed} == {"done"} and len(listed) == 20


def test_a_push_past_a_job_quota_is_refused_naming_the_quota(make_hub: Any) -> None:
    hub = make_hub(max_queued_jobs_per_user=2, max_queued_jobs_per_environment=3)
    owner, token, name, sha = _published(hub, "quota")  # its validation: one job of the user
    first = _meta(name, sha)
    assert _put(hub.url, token, first, _body(first, _honest())).status_code == 201
    second = _meta(name, sha, model="another")
    refused = _put(hub.url, token, second, _body(second, _honest(2, 2)))
    assert refused.status_code == 429, refused.text
    msg = refused.json()["message"]
    assert "quota per user is 2" in msg and "VF_HUB_MAX_QUEUED_JOBS_PER_USER" in msg
    assert int(refused.headers["retry-after"]) > 0
    _, other = hub.new_user("quota-other")
    third = _meta(name, sha, model="third")
    assert _put(hub.url, other, third, _body(third, _honest(2, 2))).status_code == 201
    fourth = _meta(name, sha, model="fourth")
    refused = _put(hub.url, other, fourth, _body(fourth, _honest(1, 3)))
    assert refused.status_code == 429 and "quota per environment is 3" in refused.json()["message"]
    # the refused runs were not recorded; once the worker has taken the jobs, pushes go on
    service = open_service(hub.settings.with_(auto_migrate=False))
    try:
        with service.session() as db:
            for job in db.query(m.Job).all():
                job.status = "done"
            db.commit()
    finally:
        service.engine.dispose()
    assert _put(hub.url, token, second, _body(second, _honest(1, 2))).status_code == 201
    listed = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0/runs").json()
    assert sorted(r["model"] for r in listed) == ["another", "m", "third"]


def test_a_poisoned_job_fails_after_its_attempts_with_the_reason_and_the_queue_goes_on(
    make_hub: Any,
) -> None:
    """A job whose log the database cannot store as it is (NUL bytes: PostgreSQL text), and
    a job whose worker dies on its last attempt: both end failed with the reason, each after
    its attempts, and the job behind them runs."""
    hub = make_hub()
    service = open_service(hub.settings.with_(auto_migrate=False, job_retry_s=0.0))
    kind = _kind()
    tries: list[int] = []
    ran: list[int] = []

    def poisoned(worker: Worker, job: Any) -> str:
        if job.subject_id == 3:
            ran.append(job.subject_id)
            return "ok"
        tries.append(job.attempt)
        raise RuntimeError(f"binary garbage \x00\x01 on try {job.attempt}")

    worker = Worker(service)
    worker.handlers = {kind: poisoned}
    try:
        with service.session() as db:
            bad = enqueue(db, kind, 1)
            dead = enqueue(db, kind, 2)  # its worker died on attempt 3 of 3
            dead.status, dead.locked_by, dead.attempts = "running", "dead-worker", 3
            dead.locked_at = now() - timedelta(hours=1)
            good = enqueue(db, kind, 3)
            db.commit()
            ids = {"bad": bad.id, "dead": dead.id, "good": good.id}
        done = worker.run(until_idle=True)
        by_id = {j.id: j for j in service.jobs.list(limit=1000)}
    finally:
        service.engine.dispose()
    assert tries == [1, 2, 3] and ran == [3] and done == 4
    assert by_id[ids["bad"]].status == "failed"
    assert "binary garbage" in (by_id[ids["bad"]].log or "") and "on try 3" in (
        by_id[ids["bad"]].log or ""
    )
    assert by_id[ids["dead"]].status == "failed"
    assert "stopped answering on attempt 3 of 3" in (by_id[ids["dead"]].log or "")
    assert by_id[ids["good"]].status == "done"


def test_the_default_job_timeout_fits_a_validation() -> None:
    assert Settings().job_timeout_s <= 300
    assert Settings.from_env({"VF_HUB_MAX_QUEUED_JOBS_PER_USER": "7"}).max_queued_jobs_per_user == 7


def test_vf_hub_serve_workers_starts_that_many_worker_processes(tmp_path: Path) -> None:
    from .procserver import hub_process

    settings = Settings(data_dir=tmp_path / "data")
    open_service(settings).engine.dispose()  # a hub to serve
    with hub_process(settings, "--workers", "2") as proc:
        assert httpx.get(f"{proc.url}/healthz", timeout=30).status_code == 200
        children = psutil.Process(proc.proc.pid).children()
        workers = [c for c in children if c.cmdline()[3:5] == ["hub", "worker"]]
        assert len(workers) == 2, [c.cmdline() for c in children]
    assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in workers)
