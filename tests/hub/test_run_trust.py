"""What the hub shows about pushed runs can be believed (issue 22, points 1-3), on both
backends: bounded run data (ratio and record limits, pass@k from the records, claimed counts
checked, long records shortened with a raw download, a bounded run cache), honest provenance
(self-reported, re-scored, gold; one run per content; hide and delete) and the verification
worker (re-scoring and validation in sandboxes, a queue shared by workers without running a
job twice)."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from hub_server.services import open_service
from hub_server.services.jobs import enqueue
from hub_server.worker import Worker
from verifiers.hub import schemas

from .conftest import Hub
from .procserver import HubProcess, hub_process

HTML = {"Accept": "text/html"}
MIB = 1024 * 1024

SCORED_ENV = """
import verifiers as vf

def load_environment(**kwargs):
    rows = [{"question": "2+2?", "answer": "4"}, {"question": "3+3?", "answer": "6"}]

    def exact(completion, answer) -> float:
        return float(completion[-1]["content"] == answer)

    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]), **kwargs)
"""


def _published(hub: Hub, prefix: str, module_body: str | None = None) -> tuple[str, str, str, str]:
    owner, token = hub.new_user(prefix)
    name = hub.unique(prefix)
    wheel = hub.wheel(name, "1.0.0", module_body=module_body or SCORED_ENV)
    r = hub.upload(wheel, token)
    assert r.status_code == 200, r.text
    return owner, token, name, hashlib.sha256(wheel.read_bytes()).hexdigest()


def _record(example: int, rollout: int, answer: str, reply: str, reward: float) -> dict[str, Any]:
    return {
        "example_id": example,
        "rollout_index": rollout,
        "prompt": [{"role": "user", "content": f"question {example}"}],
        "completion": [{"role": "assistant", "content": reply}],
        "answer": answer,
        "task": "default",
        "info": {},
        "reward": reward,
        "metrics": {"exact": reward},
    }


def _body(meta: dict[str, Any], records: list[dict[str, Any]]) -> bytes:
    lines = b"".join(orjson.dumps(r) + b"\n" for r in records)
    return gzip.compress(orjson.dumps(meta) + b"\n" + lines, compresslevel=1, mtime=0)


def _meta(name: str, sha: str, **extra: Any) -> dict[str, Any]:
    return {"run_id": f"run{uuid.uuid4().hex[:12]}", "env_distribution": name,
            "env_version": "1.0.0", "env_wheel_sha256": sha, "model": "m", **extra}  # fmt: skip


def _put(url: str, token: str | None, meta: dict[str, Any], body: bytes) -> httpx.Response:
    headers = {"Content-Type": "application/gzip"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.put(f"{url}/api/v1/runs/{meta['run_id']}", content=body, headers=headers,
                     timeout=300)  # fmt: skip


def _board(hub: Hub, owner: str, name: str, token: str | None = None, **params: str) -> Any:
    r = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0/leaderboard", token,
                params=params)  # fmt: skip
    assert r.status_code == 200, r.text
    return r.json()


def _honest(n_examples: int = 2, k: int = 1) -> list[dict[str, Any]]:
    answers = ["4", "6"]
    return [
        _record(
            e, i, answers[e % 2], answers[e % 2] if i % 2 == 0 else "7", 1.0 if i % 2 == 0 else 0.0
        )
        for e in range(n_examples)
        for i in range(k)
    ]


@pytest.fixture
def own_hub(hub: Hub, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Hub]:
    """A hub of the same backend as ``hub`` with a database (and job queue) of its own."""
    from hub_server.app import create_app

    from .conftest import make_settings
    from .live import live_server

    kind = "sqlite-local" if hub.settings.database_url is None else "postgres-s3"
    gen = make_settings(kind, request, tmp_path / "data")
    settings = next(gen).with_(job_retry_s=0.0)
    app = create_app(settings)
    _, admin = app.state.service.create_user(f"admin-{uuid.uuid4().hex[:6]}", admin=True)
    try:
        with live_server(app) as url:
            yield Hub(url=url, app=app, settings=settings, admin_token=admin, tmp=tmp_path)
    finally:
        app.state.engine.dispose()
        gen.close()


@pytest.fixture(scope="module")
def hub_proc(hub: Hub) -> Iterator[HubProcess]:
    with hub_process(hub.settings) as proc:
        yield proc


# ---------------------------------------------------------------------------- 1. bounded


def test_a_tiny_gzip_of_millions_of_lines_is_refused_with_bounded_memory(
    hub: Hub, hub_proc: HubProcess
) -> None:
    """126 KB of gzip holding 5 million `{"reward":1}` lines, no rollouts_per_example: today
    accepted after minutes and gigabytes; now refused at the ratio limit, cheaply."""
    _, token, name, sha = _published(hub, "tiny")
    meta = _meta(name, sha)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = z.compress(orjson.dumps(meta) + b"\n") + z.compress(b'{"reward":1}\n' * 5_000_000)
    body += z.flush()
    assert len(body) < 200_000
    base = hub_proc.reset_peak()
    r = _put(hub_proc.url, token, meta, body)
    growth = hub_proc.peak() - base
    print(f"peak RSS growth for the 5M-line push: {growth / MIB:.1f} MiB")
    assert r.status_code == 413, r.text
    assert "gzip bomb" in r.json()["message"]
    assert growth < 50 * MIB


def test_a_run_over_the_ratio_limit_or_the_record_limit_is_refused(hub: Hub) -> None:
    _, token, name, sha = _published(hub, "ratio")
    meta = _meta(name, sha)
    line = orjson.dumps({"example_id": 0, "reward": 0.5, "completion": "x" * (32 * MIB)})
    body = gzip.compress(orjson.dumps(meta) + b"\n" + line + b"\n", 9)
    assert len(body) < 64 * 1024
    r = _put(hub.url, token, meta, body)
    assert r.status_code == 413 and "ratio over 100" in r.json()["message"], r.text
    # the record limit: a service over the same database and storage, with a small one
    service = open_service(hub.settings.with_(max_run_records=5, auto_migrate=False))
    try:
        meta = _meta(name, sha)
        recs = [_record(i, 0, "4", "4", 1.0) for i in range(6)]
        raw = _body(meta, recs)
        from hub_server.errors import TooLarge

        with pytest.raises(TooLarge, match="over 5 records"):
            service.runs.push(service.authenticate(token), meta["run_id"], io.BytesIO(raw),
                              body_sha256="", body_size=len(raw), project=None,
                              allow_unverified=False)  # fmt: skip
    finally:
        service.engine.dispose()


def test_pass_at_k_comes_from_the_records_and_false_claims_are_refused(hub: Hub) -> None:
    owner, token, name, sha = _published(hub, "passk")
    claimed = _meta(name, sha, rollouts_per_example=10**7)
    r = _put(hub.url, token, claimed, _body(claimed, _honest(2, 2)))
    assert r.status_code == 400, r.text
    assert "rollouts_per_example = 10000000" in r.json()["message"]
    assert "at most 2 rollouts" in r.json()["message"]
    wrong_n = _meta(name, sha, num_examples=50)
    r = _put(hub.url, token, wrong_n, _body(wrong_n, _honest(2, 2)))
    assert r.status_code == 400 and "num_examples = 50" in r.json()["message"], r.text
    unclaimed = _meta(name, sha)  # no counts claimed: read from the records
    r = _put(hub.url, token, unclaimed, _body(unclaimed, _honest(3, 2)))
    assert r.status_code == 201, r.text
    (row,) = _board(hub, owner, name)
    assert row["pass_at_k"].keys() == {"1", "2"}
    assert (row["num_examples"], row["rollouts_per_example"]) == (3, 2)


def test_a_huge_rollout_page_costs_bounded_memory_and_links_the_raw_record(
    hub: Hub, hub_proc: HubProcess
) -> None:
    owner, token, name, sha = _published(hub, "bigrec")
    meta = _meta(name, sha)
    table = bytes(ord("b") if i < 40 else ord("a") for i in range(256))
    text = (b"START" + os.urandom(40 * 1000 * 1000).translate(table)).decode()
    rec = {**_record(0, 0, "4", "4", 1.0), "info": {"log": text}}
    raw_line = orjson.dumps(rec)
    body = _body(meta, [rec])
    assert _put(hub_proc.url, token, meta, body).status_code == 201
    url = f"{hub_proc.url}/{owner}/{name}/runs/{meta['run_id']}/rollouts/0"
    first = httpx.get(url, headers=HTML, timeout=300)  # unpacks into the run cache
    assert first.status_code == 200
    base = hub_proc.reset_peak()
    pages = [httpx.get(url, headers=HTML, timeout=300) for _ in range(3)]
    growth = hub_proc.peak() - base
    print(f"peak RSS growth for 3 pages of a 40 MB rollout: {growth / MIB:.1f} MiB")
    for page in pages:
        assert page.status_code == 200
        assert len(page.content) < 200_000
        assert 'id="shortened"' in page.text and "Download the whole record" in page.text
        assert "START" in page.text and "more bytes" in page.text
    assert growth < 20 * MIB, f"{growth / MIB:.0f} MiB"
    raw = httpx.get(f"{hub_proc.url}/{owner}/{name}/runs/{meta['run_id']}/raw/0", timeout=300)
    assert raw.status_code == 200 and raw.content == raw_line
    assert "attachment" in raw.headers["content-disposition"]
    assert httpx.get(f"{hub.url}/{owner}/{name}/runs/{meta['run_id']}/raw/9").status_code == 404


def test_the_run_cache_is_bounded_and_evicts_the_least_recently_used(hub: Hub) -> None:
    owner, token, name, sha = _published(hub, "cache")
    ids = []
    for _ in range(3):
        meta = _meta(name, sha)
        recs = [_record(i, 0, "4", f"{uuid.uuid4().hex}", 0.0) for i in range(20)]
        assert _put(hub.url, token, meta, _body(meta, recs)).status_code == 201
        ids.append(meta["run_id"])
    # a limit smaller than any run: each view keeps only the run it shows
    service = open_service(hub.settings.with_(run_cache_bytes=1, auto_migrate=False))
    try:
        cache = service.runs.cache
        for run_id in ids:
            run, _ = service.runs.open_run(None, owner, name, run_id)
            assert run.page(run_filters()).total == 20
            kept = [d for d in cache.iterdir() if not d.name.startswith(".")]
            assert kept == [run.path], kept
        # an evicted run unpacks again on its next view
        run, _ = service.runs.open_run(None, owner, name, ids[0])
        assert run.page(run_filters()).total == 20
    finally:
        service.engine.dispose()


def run_filters() -> Any:
    from verifiers.web.runs import Filters

    return Filters()


# ---------------------------------------------------------------------------- 2. provenance


def test_runs_are_self_reported_not_verified_and_identical_results_are_one_run(hub: Hub) -> None:
    owner, token, name, sha = _published(hub, "prov")
    meta = _meta(name, sha)
    r = _put(hub.url, token, meta, _body(meta, _honest()))
    assert r.status_code == 201 and r.json()["provenance"].startswith("self-reported")
    again = _meta(name, sha, model="m", started_at="another time")  # another run id
    second = _put(hub.url, token, again, _body(again, _honest()))
    assert second.status_code == 200, second.text
    assert second.json()["created"] is False and second.json()["run_id"] == meta["run_id"]
    _, other_token = hub.new_user("copycat")
    copied = _meta(name, sha)
    third = _put(hub.url, other_token, copied, _body(copied, _honest()))
    assert third.status_code == 200 and third.json()["run_id"] == meta["run_id"]
    board = _board(hub, owner, name)
    assert len(board) == 1 and board[0]["provenance"].startswith("self-reported")
    page = httpx.get(f"{hub.url}/{owner}/{name}", headers=HTML)
    assert "self-reported" in page.text and "verified" not in page.text.lower().replace(
        "unverified", ""
    )


def test_gold_is_earned_by_the_workers_oracle_and_stays_off_the_model_ranking(
    own_hub: Hub,
) -> None:
    hub = own_hub
    owner, token, name, sha = _published(hub, "gold")
    oracle = _meta(name, sha, model="oracle")
    assert _put(hub.url, token, oracle, _body(oracle, _honest())).status_code == 201
    model = _meta(name, sha, model="real-model")
    recs = [_record(0, 0, "4", "5", 0.0), _record(1, 0, "6", "6", 1.0)]
    assert _put(hub.url, token, model, _body(model, recs)).status_code == 201
    # before the worker: the model name earns nothing
    listed = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0/runs").json()
    assert {r["model"]: r["provenance"] for r in listed}["oracle"].startswith("self-reported")
    assert not any(r["gold"] for r in listed)
    service, worker = _worker(hub)
    try:
        _drain(worker, {("rescore", _result_id(hub, oracle["run_id"])),
                        ("rescore", _result_id(hub, model["run_id"]))})  # fmt: skip
    finally:
        service.engine.dispose()
    assert [r["model"] for r in _board(hub, owner, name)] == ["real-model"]
    listed = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0/runs").json()
    by_model = {r["model"]: r for r in listed}
    assert by_model["oracle"]["provenance"] == "gold" and by_model["oracle"]["gold"] is True
    assert by_model["oracle"]["rescore"]["oracle"] == "agree"
    assert by_model["real-model"]["provenance"] == "re-scored"
    assert by_model["real-model"]["pinned"] is True and by_model["real-model"]["verified"] is True
    page = httpx.get(f"{hub.url}/{owner}/{name}", headers=HTML)
    assert "real-model" in page.text and ">oracle<" not in page.text
    shown = httpx.get(f"{hub.url}/{owner}/{name}", params={"gold": "1"}, headers=HTML)
    assert ">oracle<" in shown.text and ">gold<" in shown.text


def test_a_page_whose_only_run_is_gold_links_to_it(own_hub: Hub) -> None:
    # the pusher's only run was an oracle run: the page said "No results yet" and offered
    # no way to show it
    hub = own_hub
    owner, token, name, sha = _published(hub, "only-gold")
    oracle = _meta(name, sha, model="oracle")
    assert _put(hub.url, token, oracle, _body(oracle, _honest())).status_code == 201
    service, worker = _worker(hub)
    try:
        _drain(worker, {("rescore", _result_id(hub, oracle["run_id"]))})
    finally:
        service.engine.dispose()
    page = httpx.get(f"{hub.url}/{owner}/{name}", headers=HTML).text
    assert 'id="gold-toggle"' in page and "1 gold (oracle) run not listed" in page
    assert "No model results yet" in page and ">oracle<" not in page
    shown = httpx.get(f"{hub.url}/{owner}/{name}", params={"gold": "1"}, headers=HTML).text
    assert ">oracle<" in shown and "Hide them" in shown


def _listed(hub: Hub, owner: str, name: str, run_id: str) -> tuple[dict[str, Any], str]:
    """A run's row in the API (gold included) and its page."""
    listed = hub.api("GET", f"/projects/{owner}/{name}/versions/1.0.0/runs").json()
    (row,) = [r for r in listed if r["run_id"] == run_id]
    page = httpx.get(f"{hub.url}/{owner}/{name}/runs/{run_id}/", headers=HTML).text
    return row, page


def _provenance_on_page(page: str) -> str:
    return page.split('id="run-provenance">', 1)[1].split("<", 1)[0]


def test_forged_runs_are_never_listed_re_scored_or_gold(own_hub: Hub) -> None:
    """Issue 36's forgeries: (1) errored records claiming reward 1.0 beside an honest one,
    (2) the model name `oracle` with wrong answers (their rewards honest, or claimed 1.0),
    (3) a wrong completion claiming 1.0: after the worker, none is "re-scored" or "gold" in
    the API or on the page, and what the hub lists is the recomputed rewards."""
    hub = own_hub
    owner, token, name, sha = _published(hub, "forgeries")
    err = {"type": "ModelError", "message": "the endpoint failed"}
    errored = _meta(name, sha, model="errored-model")
    errored_recs = [_record(0, 0, "4", "4", 1.0)] + [
        {**_record(1, i, "6", "wrong", 1.0), "error": err} for i in range(3)
    ]
    wrong_oracle = _meta(name, sha, model="oracle")
    wrong_oracle_recs = [_record(0, 0, "4", "5", 0.0), _record(1, 0, "6", "7", 0.0)]
    lying_oracle = _meta(name, sha, model="Oracle")
    lying_oracle_recs = [_record(0, 0, "4", "5", 1.0), _record(1, 0, "6", "7", 1.0)]
    wrong = _meta(name, sha, model="wrong-model")
    wrong_recs = [_record(0, 0, "4", "4", 1.0), _record(1, 0, "6", "wrong", 1.0)]
    runs = [(errored, errored_recs), (wrong_oracle, wrong_oracle_recs),
            (lying_oracle, lying_oracle_recs), (wrong, wrong_recs)]  # fmt: skip
    for meta, recs in runs:
        r = _put(hub.url, token, meta, _body(meta, recs))
        assert r.status_code == 201, r.text
        assert r.json()["provenance"] != "gold" and r.json()["pinned"] is True
    service, worker = _worker(hub)
    try:
        _drain(worker, {("rescore", _result_id(hub, meta["run_id"])) for meta, _ in runs})
    finally:
        service.engine.dispose()
    want = {
        # the errored rollouts are unscored, as the evaluation left them: out of the mean
        errored["run_id"]: ("re-score mismatch", 4, 3, 1.0),
        wrong_oracle["run_id"]: ("re-scored", 2, 0, 0.0),  # honest numbers, but not gold
        lying_oracle["run_id"]: ("re-score mismatch", 2, 2, 0.0),
        wrong["run_id"]: ("re-score mismatch", 2, 1, 0.5),
    }
    for run_id, (prov, records, mismatches, mean) in want.items():
        row, page = _listed(hub, owner, name, run_id)
        assert row["provenance"] == prov and row["gold"] is False, row
        assert row["rescore"]["records"] == records and row["rescore"]["mismatches"] == mismatches
        assert row["avg_reward"] == pytest.approx(mean), row  # the recomputed rewards only
        assert _provenance_on_page(page) == prov
        assert "gold" not in _provenance_on_page(page)
    row, page = _listed(hub, owner, name, errored["run_id"])
    assert 'id="rescored-summary"' in page and "Recomputed by the hub: 4 records" in page
    assert [e["recomputed"] for e in row["rescore"]["examples"]] == [None, None, None]
    # not gold, so on the model ranking, below the honest run
    assert {r["model"] for r in _board(hub, owner, name)} == {
        "errored-model", "oracle", "Oracle", "wrong-model"
    }  # fmt: skip


STATE_ENV = """
import verifiers as vf


class Counted(vf.SingleTurnEnv):
    async def setup_state(self, state):
        state["checked"] = 1  # a state field the record does not keep
        return await super().setup_state(state)


def load_environment(**kwargs):
    rows = [{"question": "2+2?", "answer": "4"}, {"question": "3+3?", "answer": "6"}]

    def exact(completion, answer, state) -> float:
        return float(completion[-1]["content"] == answer) * state["checked"]

    return Counted(dataset=rows, rubric=vf.Rubric(funcs=[exact]), **kwargs)
"""


def test_a_rubric_that_reads_state_is_re_scored_by_replay_and_a_broken_record_is_not(
    own_hub: Hub,
) -> None:
    """The worker replays each record (the environment runs again with the recorded answers),
    so a rubric reading a state field the record lacks is re-scored exactly, and a state
    column the pusher added cannot change the verdict; a record the environment cannot replay
    (more model answers than it asks for) is "not re-scorable", never "mismatch" or
    "re-scored"."""
    hub = own_hub
    owner, token, name, sha = _published(hub, "statey", module_body=STATE_ENV)
    plain = _meta(name, sha, model="plain")
    assert _put(hub.url, token, plain, _body(plain, _honest())).status_code == 201
    forged = _meta(name, sha, model="forged-column")
    recs = [{**r, "checked": 0} for r in _honest()]  # a column claiming another state
    assert _put(hub.url, token, forged, _body(forged, recs)).status_code == 201
    broken = _meta(name, sha, model="broken")
    extra = {"role": "assistant", "content": "and again"}
    recs = [{**r, "completion": [*r["completion"], extra]} for r in _honest()]
    assert _put(hub.url, token, broken, _body(broken, recs)).status_code == 201
    service, worker = _worker(hub)
    try:
        _drain(worker, {("rescore", _result_id(hub, m["run_id"])) for m in (plain, forged, broken)})
    finally:
        service.engine.dispose()
    for meta in (plain, forged):
        row, _ = _listed(hub, owner, name, meta["run_id"])
        assert row["provenance"] == "re-scored", row
        assert row["rescore"]["agreed"] == 2 and row["avg_reward"] == pytest.approx(1.0)
    row, page = _listed(hub, owner, name, broken["run_id"])
    assert row["provenance"] == "not re-scorable", row
    assert row["rescore"]["unscorable"] == 2 and row["rescore"]["mismatches"] == 0
    assert 'id="rescore-unscorable"' in page and _provenance_on_page(page) == "not re-scorable"


def test_owners_and_admins_hide_or_delete_runs_submitters_delete_their_own(hub: Hub) -> None:
    owner, owner_token, name, sha = _published(hub, "mod")
    pusher, pusher_token = hub.new_user("pusher")
    _, stranger_token = hub.new_user("stranger")
    runs = []
    for reward in (0.0, 1.0, 0.5):
        meta = _meta(name, sha)
        recs = [_record(0, 0, "4", str(reward), reward)]
        assert _put(hub.url, pusher_token, meta, _body(meta, recs)).status_code == 201
        runs.append(meta["run_id"])
    base = f"/projects/{owner}/{name}/runs"
    # a stranger can neither hide nor delete
    r = hub.api("POST", f"{base}/{runs[0]}/hide", stranger_token)
    assert r.status_code == 403 and "owners" in r.json()["message"]
    assert hub.api("DELETE", f"{base}/{runs[0]}", stranger_token).status_code == 403
    assert hub.api("DELETE", f"{base}/{runs[0]}").status_code == 401
    # the pusher cannot hide (only delete their own)
    assert hub.api("POST", f"{base}/{runs[0]}/hide", pusher_token).status_code == 403
    # the owner hides: gone for everyone else, marked for the owner
    r = hub.api("POST", f"{base}/{runs[0]}/hide", owner_token)
    assert r.status_code == 200 and r.json()["hidden"] is True
    assert runs[0] not in [x["run_id"] for x in _board(hub, owner, name)]
    mine = {x["run_id"]: x["hidden"] for x in _board(hub, owner, name, owner_token)}
    assert mine[runs[0]] is True
    page = httpx.get(f"{hub.url}/{owner}/{name}/runs/{runs[0]}/", headers=HTML)
    assert page.status_code == 404
    assert hub.api("POST", f"{base}/{runs[0]}/unhide", owner_token).json()["hidden"] is False
    # the submitter deletes their own; the owner and an admin delete others'
    assert hub.api("DELETE", f"{base}/{runs[0]}", pusher_token).status_code == 204
    assert hub.api("DELETE", f"{base}/{runs[1]}", owner_token).status_code == 204
    assert hub.api("DELETE", f"{base}/{runs[2]}", hub.admin_token).status_code == 204
    assert _board(hub, owner, name) == []
    assert hub.api("DELETE", f"{base}/{runs[2]}", hub.admin_token).status_code == 404
    assert pusher  # (named for the reader: the pusher is not the environment's owner)


# ---------------------------------------------------------------------------- 3. the worker


def _worker(hub: Hub, **settings: Any) -> tuple[Any, Worker]:
    service = open_service(hub.settings.with_(auto_migrate=False, **settings))
    return service, Worker(service)


def _drain(worker: Worker, want: set[tuple[str, int]]) -> None:
    """Run jobs until those in ``want`` ((kind, subject)) are finished or failed (other
    tests' jobs in the shared database run too)."""
    from sqlalchemy import select

    from hub_server import models as m

    for _ in range(200):
        with worker.service.session() as db:
            open_jobs = {
                (j.kind, j.subject_id)
                for j in db.scalars(select(m.Job).where(m.Job.status.in_(("queued", "running"))))
            }
        if not open_jobs & want:
            return
        worker.run_once()
    raise AssertionError(f"jobs {want} did not finish")


def _result_id(hub: Hub, run_id: str) -> int:
    from sqlalchemy import select

    from hub_server import models as m

    with hub.service.session() as db:
        return int(db.scalar(select(m.EvalResult.id).where(m.EvalResult.run_id == run_id)))


def test_forged_rewards_are_shown_as_a_rescore_mismatch(own_hub: Hub) -> None:
    hub = own_hub
    owner, token, name, sha = _published(hub, "forge")
    honest = _meta(name, sha, model="honest-model")
    assert _put(hub.url, token, honest, _body(honest, _honest(2, 2))).status_code == 201
    forged = _meta(name, sha, model="forged-model")
    recs = [_record(0, 0, "4", "wrong", 1.0), _record(1, 0, "6", "6", 1.0)]  # 1.0 is forged
    assert _put(hub.url, token, forged, _body(forged, recs)).status_code == 201
    service, worker = _worker(hub)
    try:
        _drain(worker, {("rescore", _result_id(hub, honest["run_id"])),
                        ("rescore", _result_id(hub, forged["run_id"]))})  # fmt: skip
    finally:
        service.engine.dispose()
    board = {r["model"]: r for r in _board(hub, owner, name)}
    assert board["honest-model"]["provenance"] == "re-scored", board["honest-model"]
    bad = board["forged-model"]
    assert bad["provenance"] == "re-score mismatch", bad
    assert bad["rescore"]["mismatches"] == 1 and bad["rescore"]["checked"] == 2
    assert bad["rescore"]["examples"][0]["pushed"] == 1.0
    assert bad["rescore"]["examples"][0]["recomputed"] == 0.0
    # the re-scored run ranks above the mismatched one, whatever their rewards
    assert [r["model"] for r in _board(hub, owner, name)] == ["honest-model", "forged-model"]
    page = httpx.get(f"{hub.url}/{owner}/{name}/runs/{forged['run_id']}/", headers=HTML)
    assert 'id="rescore-mismatch"' in page.text and "re-score mismatch" in page.text


def test_a_release_validation_report_is_on_its_page_within_a_minute(own_hub: Hub) -> None:
    hub = own_hub
    with hub_process(hub.settings, "--worker", VF_HUB_WORKER_POLL_S="0.5") as proc:
        owner, token = hub.new_user("valid")
        name = hub.unique("valid")
        r = httpx.post(
            f"{proc.url}/legacy/",
            data={":action": "file_upload", "protocol_version": "1"},
            files={"content": (f"{name.replace('-', '_')}-1.0.0-py3-none-any.whl",
                               hub.wheel(name, "1.0.0", module_body=SCORED_ENV).read_bytes())},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )  # fmt: skip
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 60
        page = ""
        while time.monotonic() < deadline:  # waits for another process's outcome
            page = httpx.get(f"{proc.url}/{owner}/{name}", headers=HTML).text
            if "validated: passed" in page or "validated: failed" in page:
                break
            time.sleep(0.5)
        assert "validated: passed" in page, page[page.find('id="validation"') :][:2000]
        assert "no validation report" not in page
        assert 'id="validation-checks"' in page and "gold" in page


def test_a_crashing_job_is_retried_then_failed_with_its_log(own_hub: Hub) -> None:
    hub = own_hub
    service, _ = _worker(hub, job_retry_s=0.0)
    tries: list[int] = []

    def crash(worker: Worker, job: Any) -> str:
        tries.append(job.attempt)
        raise RuntimeError(f"boom on try {job.attempt}")

    kind = f"t{uuid.uuid4().hex[:8]}"
    worker = Worker(service, handlers={kind: crash})
    worker.handlers = {kind: crash}  # only this test's kind
    try:
        with service.session() as db:
            job = enqueue(db, kind, 1)
            db.commit()
            job_id = job.id
        while worker.run_once():
            pass
        (failed,) = [j for j in service.jobs.list() if j.id == job_id]
    finally:
        service.engine.dispose()
    assert tries == [1, 2, 3]
    assert failed.status == "failed" and "boom on try 3" in (failed.log or "")


def test_a_job_of_a_worker_that_died_is_taken_again(own_hub: Hub) -> None:
    hub = own_hub
    from datetime import timedelta

    from hub_server import models as m
    from hub_server.services.context import now

    service, _ = _worker(hub, job_timeout_s=1.0)
    ran: list[int] = []
    kind = f"t{uuid.uuid4().hex[:8]}"
    worker = Worker(service)

    def handle(w: Any, job: Any) -> str:
        ran.append(job.attempt)
        return "ok"

    worker.handlers = {kind: handle}
    try:
        with service.session() as db:
            job = enqueue(db, kind, 1)
            job.status, job.locked_by, job.attempts = "running", "dead-worker", 1
            job.locked_at = now() - timedelta(hours=1)
            db.commit()
            job_id = job.id
        assert worker.run_once()
        with service.session() as db:
            done = db.get(m.Job, job_id)
            assert done is not None and done.status == "done" and done.locked_by == worker.name
    finally:
        service.engine.dispose()
    assert ran == [2]


def test_workers_share_the_queue_without_running_a_job_twice(own_hub: Hub) -> None:
    """Two workers (each with its own engine, as on two machines) over the same database; on
    PostgreSQL they hold jobs at the same time (FOR UPDATE SKIP LOCKED), on SQLite they take
    turns. No job runs twice."""
    hub = own_hub
    postgres = hub.settings.database_url is not None
    kind = f"t{uuid.uuid4().hex[:8]}"
    total = 12
    ran: list[tuple[str, int]] = []
    lock = threading.Lock()
    both_busy = threading.Barrier(2, timeout=60)

    def work(worker: Worker, job: Any) -> str:
        with lock:
            ran.append((worker.name, job.id))
            first = sum(1 for w, _ in ran if w == worker.name) == 1
        if postgres and first:
            both_busy.wait()  # each worker holds its first job until the other holds one
        return "ok"

    services = [open_service(hub.settings.with_(auto_migrate=False)) for _ in range(2)]
    workers = [Worker(s, name=f"w{i}-{kind}") for i, s in enumerate(services)]
    for w in workers:
        w.handlers = {kind: work}
    try:
        with services[0].session() as db:
            ids = {enqueue(db, kind, i).id for i in range(total) if db is not None}
            db.commit()
            ids = {j.id for j in services[0].jobs.list(limit=1000) if j.kind == kind}
        if postgres:
            threads = [threading.Thread(target=w.run, kwargs={"until_idle": True}) for w in workers]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
        else:  # SQLite: one worker at a time
            for w in workers:
                w.run(until_idle=True)
    finally:
        for s in services:
            s.engine.dispose()
    counts = Counter(job_id for _, job_id in ran)
    assert set(counts) == ids and set(counts.values()) == {1}, counts
    if postgres:
        assert {w for w, _ in ran} == {w.name for w in workers}


def _vf(args: list[str], hub: Hub, token: str | None, cwd: Path) -> Any:
    import subprocess
    import sys

    env = {**os.environ, "VF_HUB_URL": hub.url, "XDG_CONFIG_HOME": str(cwd / "config")}
    env.pop("VF_HUB_TOKEN", None)
    if token:
        env["VF_HUB_TOKEN"] = token
    exe = Path(sys.executable).parent / "vf"
    return subprocess.run([str(exe), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL,
                          timeout=120)  # fmt: skip


def test_vf_eval_runs_lists_hides_and_deletes(hub: Hub, tmp_path: Path) -> None:
    owner, token, name, sha = _published(hub, "cliruns")
    _, stranger = hub.new_user("clistranger")
    meta = _meta(name, sha, model="cli-model")
    assert _put(hub.url, token, meta, _body(meta, _honest())).status_code == 201
    gold = _meta(name, sha, model="oracle")
    recs = [_record(0, 0, "4", "4", 1.0)]
    assert _put(hub.url, token, gold, _body(gold, recs)).status_code == 201
    listed = _vf(["eval", "runs", "list", f"{owner}/{name}"], hub, None, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "cli-model" in listed.stdout and "self-reported" in listed.stdout
    # the model name `oracle` earns nothing without the worker's oracle rollouts
    assert "gold" not in listed.stdout and "(2 runs of" in listed.stdout
    plain = _vf(["eval", "runs", "list", f"{owner}/{name}@1.0.0", "--no-gold", "--json"],
                hub, None, tmp_path)  # fmt: skip
    listed_json = orjson.loads(plain.stdout)
    assert set(listed_json) == {"owner", "name", "version", "items"}
    assert (listed_json["owner"], listed_json["name"], listed_json["version"]) == (
        owner, name, "1.0.0"
    )  # fmt: skip
    assert sorted(r["model"] for r in listed_json["items"]) == ["cli-model", "oracle"]
    assert set(listed_json["items"][0]) == set(schemas.LeaderboardRow.model_fields)
    schemas.RunList.model_validate(listed_json, strict=False)
    latest = _vf(["eval", "runs", "list", f"{owner}/{name}", "--json"], hub, None, tmp_path)
    assert orjson.loads(latest.stdout)["version"] == "1.0.0"
    assert len(orjson.loads(latest.stdout)["items"]) == 2
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "`vf eval runs list` a `RunList`" in " ".join(readme.split())
    refused = _vf(["eval", "runs", "hide", f"{owner}/{name}", meta["run_id"]], hub, stranger,
                  tmp_path)  # fmt: skip
    assert refused.returncode == 1 and "owners" in refused.stderr
    assert "Traceback" not in refused.stderr
    hid = _vf(["eval", "runs", "hide", f"{owner}/{name}", meta["run_id"]], hub, token, tmp_path)
    assert hid.returncode == 0 and "hid run" in hid.stdout, hid.stderr
    assert meta["run_id"] not in [r["run_id"] for r in _board(hub, owner, name)]
    unconfirmed = _vf(["eval", "runs", "delete", f"{owner}/{name}", gold["run_id"]], hub, token,
                      tmp_path)  # fmt: skip
    assert unconfirmed.returncode == 1 and "--yes" in unconfirmed.stderr
    gone = _vf(["eval", "runs", "delete", f"{owner}/{name}", gold["run_id"], "--yes"], hub,
               token, tmp_path)  # fmt: skip
    assert gone.returncode == 0 and "deleted run" in gone.stdout
    bad = _vf(["eval", "runs", "list", "nonsense"], hub, None, tmp_path)
    assert bad.returncode == 2 and "OWNER/NAME" in bad.stderr


def test_vf_hub_worker_once_runs_the_due_jobs_and_vf_hub_jobs_lists_them(
    own_hub: Hub, tmp_path: Path
) -> None:
    from .procserver import settings_env

    hub = own_hub
    owner, token, name, sha = _published(hub, "cliwork")
    forged = _meta(name, sha)
    assert (
        _put(hub.url, token, forged, _body(forged, [_record(0, 0, "4", "no", 1.0)])).status_code
        == 201
    )
    env_vars = {**settings_env(hub.settings), "VF_HUB_JOB_RETRY_S": "0"}
    old = {k: os.environ.get(k) for k in env_vars}
    os.environ.update(env_vars)
    try:
        ran = _vf(["hub", "worker", "--once"], hub, None, tmp_path)
        jobs = _vf(["hub", "jobs"], hub, None, tmp_path)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert ran.returncode == 0, ran.stderr
    assert "ran 2 jobs" in ran.stderr
    assert jobs.returncode == 0 and "rescore" in jobs.stdout and "validate" in jobs.stdout
    assert jobs.stdout.count(" done ") == 2, jobs.stdout
    (row,) = _board(hub, owner, name)
    assert row["provenance"] == "re-score mismatch"


def test_backfill_queues_what_a_hub_from_before_the_worker_lacks(own_hub: Hub) -> None:
    from sqlalchemy import delete, select, update

    from hub_server import models as m

    hub = own_hub
    owner, token, name, sha = _published(hub, "backfill")
    meta = _meta(name, sha)
    assert _put(hub.url, token, meta, _body(meta, _honest())).status_code == 201
    service = hub.service
    with service.session() as db:  # as rows migrated from before 0004 look
        db.execute(delete(m.Job))
        db.execute(update(m.Release).values(validation_status=None))
        db.execute(update(m.EvalResult).values(rescore_status=None))
        db.commit()
    assert service.jobs.backfill() == (1, 1)
    assert service.jobs.backfill() == (0, 0)  # once
    with service.session() as db:
        kinds = sorted(j.kind for j in db.scalars(select(m.Job)))
    assert kinds == ["rescore", "validate"]
    (row,) = _board(hub, owner, name)
    assert row["provenance"] == "self-reported (re-score pending)"


def test_comparing_rewards_tells_a_forgery_from_a_reward_the_sandbox_could_not_compute(
    tmp_path: Path,
) -> None:
    """Every record is compared, the errored one too: its pushed reward must be what the
    rubric gives it (here: none, the rollout errored); a reward the sandbox could not compute
    makes the run not re-scorable, never re-scored, never a mismatch."""
    from hub_server.worker import compare_rewards

    records = tmp_path / "records.jsonl"
    errored = {**_record(2, 0, "6", "", 0.0), "reward": None, "error": {"type": "ModelError"}}
    recs = [_record(0, 0, "4", "4", 1.0), _record(1, 0, "6", "6", 1.0), errored]
    records.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))

    def out(*rewards: float | None, failed: tuple[int, ...] = ()) -> bytes:
        return b"".join(
            orjson.dumps({"i": i, "reward": r, "failed": i in failed}) + b"\n"
            for i, r in enumerate(rewards)
        )

    agreed = compare_rewards(records, out(1.0, 1.0, None))
    assert agreed["status"] == "agree" and agreed["agreed"] == agreed["records"] == 3
    assert agreed["summary"]["avg_reward"] == 1.0 and agreed["summary"]["num_errors"] == 1
    forged = compare_rewards(records, out(1.0, 0.0, None))
    assert forged["status"] == "mismatch" and forged["mismatches"] == 1
    assert forged["examples"] == [
        {"rollout": 1, "example_id": "1", "pushed": 1.0, "recomputed": 0.0}
    ]
    assert forged["summary"]["avg_reward"] == 0.5  # the recomputed rewards, not the pushed
    # the errored record claims a reward the rubric does not give it
    records.write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in [*recs[:2], {**errored, "reward": 1.0}])
    )
    lied = compare_rewards(records, out(1.0, 1.0, None))
    assert lied["status"] == "mismatch" and lied["examples"][0]["rollout"] == 2
    records.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    unscorable = compare_rewards(records, out(1.0, None, None, failed=(1,)))
    assert unscorable["status"] == "unscorable" and unscorable["unscorable"] == 1
    assert unscorable["mismatches"] == 0
    missing = compare_rewards(records, out(1.0, 1.0))  # one record not recomputed
    assert missing["status"] == "unscorable" and missing["missing"] == 1
    assert compare_rewards(records, b"")["status"] == "unscorable"


def test_a_run_the_worker_cannot_rescore_says_so_after_its_retries(own_hub: Hub) -> None:
    from hub_server.worker import rescore_job

    hub = own_hub
    broken = "def load_environment(**kwargs):\n    raise RuntimeError('no environment here')\n"
    owner, token, name, sha = _published(hub, "norescore", module_body=broken)
    meta = _meta(name, sha)
    assert _put(hub.url, token, meta, _body(meta, _honest())).status_code == 201
    service, worker = _worker(hub)
    worker.handlers = {"rescore": rescore_job}
    try:
        assert worker.run(until_idle=True) == 3  # the first try and two retries
    finally:
        service.engine.dispose()
    (row,) = _board(hub, owner, name)
    assert row["provenance"] == "self-reported (re-score failed)"
    assert "no environment here" in row["rescore"]["error"]
    page = httpx.get(f"{hub.url}/{owner}/{name}/runs/{meta['run_id']}/", headers=HTML)
    assert 'id="rescore-failed"' in page.text, page.text[:3000]
    assert "no environment here" in page.text
