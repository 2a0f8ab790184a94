"""Eval runs pushed to the hub (``vf eval push``), their leaderboards and their pages.

A push is one gzip stream: the run's ``metadata.json`` on the first line, then its
``results.jsonl``. The server reads the environment's name, version and wheel sha256 from that
metadata, pins the run to the release (``pinned``) only when the sha256 is one of the
release's files (otherwise it is refused unless the pusher allows an unpinned run). What a
pinned run's numbers are worth is the worker's to say (re-scored, gold: :mod:`hub_server.worker`).
The compressed stream is stored as a blob; pages decompress it once into a local cache and
page it through the same index as ``vf view``.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

import orjson
from packaging.utils import canonicalize_name
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from hub_server import models as m
from hub_server.auth import Principal
from hub_server.errors import BadRequest, Conflict, Forbidden, NotFound
from hub_server.privatefs import private_dir
from hub_server.services.context import Part
from hub_server.services.jobs import check_quota, enqueue
from hub_server.services.journal import record
from hub_server.services.lookups import (
    eval_results_with_submitter,
    find_release,
    release_of,
    visible_environment,
)
from hub_server.services.runfiles import (
    MAX_METADATA_BYTES,
    RAW_FILE,
    RAW_MAP,
    Unpacked,
    _dir_size,
    _touch,
    run_key,
    unpack,
)
from hub_server.services.runviews import (
    _bounded_summary,
    _claimed,
    _finite,
    _jsonable,
    _leader_row,
    _metrics,
    _rank,
    provenance,
    run_url,
)
from verifiers.hub import schemas as s
from verifiers.results import METADATA_FILE
from verifiers.web.runs import Run

__all__ = ["MAX_METADATA_BYTES", "RunService", "provenance", "run_key", "run_url", "unpack"]

RUN_ID_RE = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
RECENT_S = 10.0  # a cached run viewed this recently is evicted only from an overfull cache


class RunService(Part):
    """Pushes, leaderboards, run pages and moderation over the hub's database and blobs."""

    @property
    def cache(self) -> Path:
        return self.ctx.settings.data_dir / "run-cache"

    # ------------------------------------------------------------------ push

    def push(
        self,
        who: Principal,
        run_id: str,
        body: IO[bytes],
        *,
        body_sha256: str,
        body_size: int,
        project: str | None,
        allow_unverified: bool,
    ) -> s.RunPushed:
        who.require_scope("upload")
        if not RUN_ID_RE.match(run_id):
            raise BadRequest(f"invalid run id {run_id!r}: use 8-64 letters, digits, '-' or '_'")
        settings = self.ctx.settings
        with tempfile.TemporaryDirectory(prefix="vf-run-") as tmp:
            body.seek(0)
            got = unpack(
                body,
                Path(tmp),
                settings.max_run_uncompressed_bytes,
                compressed_size=body_size,
                max_ratio=settings.max_compression_ratio,
                max_records=settings.max_run_records,
            )
            meta = got.metadata
            if meta.get("run_id") not in (None, run_id):
                raise BadRequest(
                    f"the URL's run id {run_id} differs from the metadata's {meta['run_id']}"
                )
            run = Run.open(got.dir)
            shape = _shape(run, meta)
            summary = run.summary()
            if not summary["num_rollouts"]:
                raise BadRequest("the run has no results; evaluate first, then push")
            body.seek(0)
            return self._record(
                who,
                run_id,
                meta,
                summary,
                shape,
                got,
                body,
                body_size,
                project=project,
                allow_unverified=allow_unverified,
            )

    def _record(
        self,
        who: Principal,
        run_id: str,
        meta: dict[str, Any],
        summary: dict[str, Any],
        shape: tuple[int, int],
        got: Unpacked,
        body: IO[bytes],
        body_size: int,
        *,
        project: str | None,
        allow_unverified: bool,
    ) -> s.RunPushed:
        with self.session() as db:
            env, rel, owner = self._target(db, who, meta, project)
            shas = set(db.scalars(select(m.File.sha256).where(m.File.release_id == rel.id)))
            wheel = str(meta.get("env_wheel_sha256") or "")
            verified = wheel in shas
            if not verified and not allow_unverified:
                raise BadRequest(
                    f"this run's environment is not the hub's {owner}/{env.name} {rel.version} "
                    f"(wheel sha256 {wheel or 'not recorded'}): install it with `vf env install "
                    f"{owner}/{env.name}@{rel.version}` and evaluate again, or push with "
                    "--allow-unverified to list it as unpinned"
                )
            existing = db.scalar(select(m.EvalResult).where(m.EvalResult.run_id == run_id))
            if existing is not None:
                if existing.results_sha256 == got.stream_sha256 and existing.release_id == rel.id:
                    return self._pushed(existing, owner, env.name, rel.version, created=False)
                raise Conflict(
                    f"run {run_id} was already pushed with other results; each run is pushed "
                    "once (evaluate again for a new run)"
                )
            same = db.scalar(
                select(m.EvalResult).where(
                    m.EvalResult.release_id == rel.id,
                    m.EvalResult.content_sha256 == got.content_sha256,
                )
            )
            if same is not None:  # identical results under another run id: one run
                return self._pushed(same, owner, env.name, rel.version, created=False)
            if verified:
                check_quota(db, self.ctx.settings, user_id=who.user_id, environment_id=env.id,
                            what=f"pushing run {run_id}")  # fmt: skip
            key = run_key(got.stream_sha256)
            if not self.ctx.storage.exists(key):
                self.ctx.storage.put(key, body)
            num_examples, per_example = shape
            row = m.EvalResult(
                release_id=rel.id,
                wheel_sha256=wheel if len(wheel) == 64 else "0" * 64,
                model=str(meta.get("model") or "?")[:200],
                num_examples=num_examples,
                rollouts_per_example=per_example,
                metrics=_metrics(summary),
                details={
                    "summary": _jsonable(_bounded_summary(summary)),
                    "started_at": str(meta.get("started_at") or "")[:64] or None,
                },
                submitted_by=who.user_id,
                run_id=run_id,
                verified=verified,
                gold=False,  # earned only from the worker's own oracle rollouts (worker.py)
                rescore_status="pending" if verified else None,
                results_key=key,
                results_sha256=got.stream_sha256,
                results_size=body_size,
                content_sha256=got.content_sha256,
            )
            db.add(row)
            record(db, "push_run", project=env.name, version=rel.version, actor=who.user_name)
            try:
                db.flush()
                if verified:
                    enqueue(db, "rescore", row.id, user_id=who.user_id, environment_id=env.id)
                db.commit()
            except IntegrityError:  # the same run id (or results) pushed concurrently
                raise Conflict(f"run {run_id} is being pushed by another request") from None
            return self._pushed(row, owner, env.name, rel.version, created=True)

    def _target(
        self, db: Any, who: Principal, meta: dict[str, Any], project: str | None
    ) -> tuple[m.Environment, m.Release, str]:
        owner_want = None
        if project:
            owner_want, _, name = project.partition("/")
            if not name:
                raise BadRequest(f"--env {project!r} must be OWNER/NAME")
        else:
            name = str(meta.get("env_distribution") or meta.get("env_id") or "")
        if not name:
            raise BadRequest("the run's metadata names no environment; push with --env OWNER/NAME")
        env = db.scalar(
            select(m.Environment).where(m.Environment.name == canonicalize_name(name[:300]))
        )
        owner = env.namespace.name if env is not None else ""
        if (
            env is None
            or (owner_want and owner_want.lower() != owner)
            or (env.private and not who.can_read(owner, env.name))
        ):
            raise NotFound(
                f"no environment {(project or name)[:300]} on this hub; publish it with "
                "`vf env push`, or name it with --env OWNER/NAME"
            )
        if not who.token_allows(owner, env.name):
            raise Forbidden(f"this token is restricted and cannot push runs of {owner}/{env.name}")
        version = str(meta.get("env_version") or "")[:100]
        rel = find_release(db, env.id, version) if version else None
        if rel is None:
            raise NotFound(
                f"{owner}/{env.name} has no version {version or '(none recorded)'} on this hub; "
                "evaluate a published version (vf env install OWNER/NAME@VERSION)"
            )
        return env, rel, owner

    def _pushed(
        self, row: m.EvalResult, owner: str, name: str, version: str, *, created: bool
    ) -> s.RunPushed:
        return s.RunPushed(
            run_id=row.run_id or "",
            owner=owner,
            name=name,
            version=version,
            model=row.model,
            pinned=row.verified,
            verified=row.verified,
            created=created,
            provenance=provenance(row),
            num_rollouts=int((row.details.get("summary") or {}).get("num_rollouts", 0)),
            avg_reward=_finite(row.metrics.get("reward")),
            url=run_url(owner, name, row.run_id or ""),
        )

    # ------------------------------------------------------------------ reading

    def leaderboard(
        self,
        who: Principal | None,
        owner: str,
        name: str,
        version: str,
        *,
        include_gold: bool = False,
    ) -> list[s.LeaderboardRow]:
        """The release's runs, best first by what the hub knows (re-scored, self-reported,
        mismatched, unpinned), then by mean reward. Gold runs only with ``include_gold``;
        hidden runs only for the environment's owners and admins."""
        with self.session() as db:
            env = visible_environment(db, who, owner, name)
            rel = release_of(db, env, version)
            rows = eval_results_with_submitter(db, rel.id)
            moderator = _moderates(who, env)
            out = [
                _leader_row(r, pusher, env.namespace.name, env.name)
                for r, pusher in rows
                if (include_gold or provenance(r) != "gold") and (moderator or not r.hidden)
            ]
        out.sort(key=lambda x: (_rank(x.provenance), -(x.avg_reward or -math.inf), x.created_at))
        return out

    def open_run(self, who: Principal | None, owner: str, name: str, run_id: str) -> Any:
        """``(Run, row info)`` of a pushed run, unpacked into the local cache on first use."""
        with self.session() as db:
            env = visible_environment(db, who, owner, name)
            found = self._find(db, env, run_id)
            if found is None:
                raise NotFound(f"no run {run_id} of {owner}/{name}")
            result, version, pusher = found
            if result.hidden and not (
                _moderates(who, env) or (who is not None and who.user_id == result.submitted_by)
            ):
                raise NotFound(f"no run {run_id} of {owner}/{name}")
            info = {
                "version": version,
                "pusher": pusher,
                "pinned": result.verified,
                "provenance": provenance(result),
                "rescore": result.rescore_detail,
                "summary": (result.details or {}).get("summary"),
                "hidden": result.hidden,
                "created_at": result.created_at,
                "run_id": run_id,
            }
            key, sha = str(result.results_key), result.results_sha256 or ""
        return Run.open(self.materialise(key, sha)), info

    def _find(self, db: Any, env: m.Environment, run_id: str) -> Any:
        row = db.execute(
            select(m.EvalResult, m.Release.version, m.Namespace.name)
            .join(m.Release, m.EvalResult.release_id == m.Release.id)
            .join(m.User, m.EvalResult.submitted_by == m.User.id)
            .join(m.Namespace, m.User.namespace_id == m.Namespace.id)
            .where(m.EvalResult.run_id == run_id, m.Release.environment_id == env.id)
        ).first()
        if row is None or not row[0].results_key:
            return None
        return row

    def raw_record(
        self, who: Principal | None, owner: str, name: str, run_id: str, i: int
    ) -> tuple[Path, int, int]:
        """Where rollout ``i`` of a run lies as pushed: ``(file, offset, length)`` (the page
        shows long records shortened; this is the whole record, for download)."""
        run, _ = self.open_run(who, owner, name, run_id)
        if not 0 <= i < len(run.index):
            raise NotFound(f"run {run_id} has no rollout {i}")
        offset, length = int(run.index.offsets[i]), int(run.index.lengths[i])
        mapping = run.path / RAW_MAP
        if mapping.is_file():
            got = orjson.loads(mapping.read_bytes()).get(str(offset))
            if got is not None:
                return run.path / RAW_FILE, int(got[0]), int(got[1])
        return run.results, offset, length

    def materialise(self, key: str, sha: str) -> Path:
        """The run's directory in the local cache (unpacked from its blob on first use); the
        cache is kept under ``run_cache_bytes`` by evicting the least recently used runs."""
        dest = self.cache / sha
        if (dest / METADATA_FILE).is_file():
            _touch(dest)
            return dest
        private_dir(self.cache)
        tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=self.cache))  # 0700
        try:
            with tempfile.TemporaryFile() as gz:
                for chunk in self.ctx.storage.open(key):
                    gz.write(chunk)
                gz.seek(0)
                unpack(gz, tmp, 2**62)
            os.replace(tmp, dest)
        except OSError:
            if not (dest / METADATA_FILE).is_file():  # not a lost race: a real failure
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _touch(dest)
        self.evict(keep=dest)
        return dest

    def evict(self, keep: Path | None = None) -> list[str]:
        """Remove least recently used runs from the cache until it is under its limit."""
        limit = self.ctx.settings.run_cache_bytes
        entries = []
        total = 0
        try:
            listing = list(os.scandir(self.cache))
        except FileNotFoundError:
            return []
        for entry in listing:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            size = _dir_size(Path(entry.path))
            total += size
            try:
                used = (Path(entry.path) / ".used").stat().st_mtime
            except FileNotFoundError:
                used = 0.0
            entries.append((used, entry.name, size))
        removed = []
        # a run viewed in the last seconds may be being read: spared while the cache is
        # under twice its limit
        recent = time.time() - RECENT_S if total <= 2 * limit else math.inf
        for used, entry_name, size in sorted(entries):
            if total <= limit:
                break
            path = self.cache / entry_name
            if (keep is not None and path == keep) or used > recent:
                continue
            trash = self.cache / f".evicted-{entry_name}-{os.getpid()}"
            try:
                os.replace(path, trash)
            except OSError:
                continue
            shutil.rmtree(trash, ignore_errors=True)
            total -= size
            removed.append(entry_name)
        return removed

    def validation(
        self, who: Principal | None, owner: str, name: str, version: str
    ) -> dict[str, Any] | None:
        """The release's validation by a hub worker: ``{"status", "report"}``, or None when
        none was asked for (a release without a wheel or entry point)."""
        with self.session() as db:
            env = visible_environment(db, who, owner, name)
            rel = release_of(db, env, version)
            if rel.validation_status is None:
                return None
            return {"status": rel.validation_status, "report": rel.validation or {}}

    # ------------------------------------------------------------------ moderation

    def moderate(
        self, who: Principal, owner: str, name: str, run_id: str, action: str
    ) -> s.LeaderboardRow | None:
        """``hide``/``unhide`` (the environment's owners, admins) or ``delete`` (they and the
        run's submitter) a pushed run; returns the run's row (None once deleted)."""
        if action not in ("hide", "unhide", "delete"):
            raise BadRequest(f"unknown action {action!r}: use hide, unhide or delete")
        with self.session() as db:
            env = visible_environment(db, who, owner, name)
            found = self._find(db, env, run_id)
            if found is None:
                raise NotFound(f"no run {run_id} of {owner}/{name}")
            row, version, pusher = found
            env_owner = env.namespace.name
            own = who.user_id == row.submitted_by and who.has_scope("upload")
            if not (own and action == "delete"):
                if not who.has_scope("yank"):
                    raise Forbidden(
                        f"{action} of a run needs the 'yank' scope on {env_owner}/{env.name} "
                        "(the environment's owners and admins), or, to delete your own run, "
                        "the 'upload' scope"
                    )
                if not (who.is_admin or env_owner in who.namespaces) or not who.token_allows(
                    env_owner, env.name
                ):
                    raise Forbidden(
                        f"only the owners of {env_owner}/{env.name} and admins can {action} "
                        "runs pushed by others; a submitter can delete their own"
                    )
            if action == "delete":
                key = row.results_key
                db.execute(delete(m.Job).where(m.Job.kind == "rescore", m.Job.subject_id == row.id))
                db.delete(row)
                record(db, "delete_run", project=env.name, version=version, actor=who.user_name)
                db.flush()
                others = db.scalar(
                    select(func.count())
                    .select_from(m.EvalResult)
                    .where(m.EvalResult.results_key == key)
                )
                db.commit()
                if key and not others:
                    self.ctx.storage.delete(key)
                return None
            row.hidden = action == "hide"
            record(db, f"{action}_run", project=env.name, version=version, actor=who.user_name)
            db.commit()
            return _leader_row(row, pusher, env_owner, env.name)


def _moderates(who: Principal | None, env: m.Environment) -> bool:
    """Whether ``who`` may see and hide any run of ``env`` (its owners and admins)."""
    if who is None:
        return False
    return who.is_admin or (
        env.namespace.name in who.namespaces and who.token_allows(env.namespace.name, env.name)
    )


def _shape(run: Run, meta: dict[str, Any]) -> tuple[int, int]:
    """``(examples, rollouts per example)`` read from the records; a count the metadata
    claims that disagrees with them is refused with the reason."""
    counts = Counter(run.index.example_ids)
    examples, per_example = len(counts), max(counts.values(), default=0)
    claimed_k = _claimed(meta.get("rollouts_per_example"))
    if claimed_k is not None and claimed_k != per_example:
        raise BadRequest(
            f"the metadata claims rollouts_per_example = {claimed_k}, but the records hold at "
            f"most {per_example} rollouts of any example; push the run as vf-eval wrote it"
        )
    claimed_n = _claimed(meta.get("num_examples"))
    if claimed_n is not None and claimed_n not in (examples, -1):
        raise BadRequest(
            f"the metadata claims num_examples = {claimed_n}, but the records hold "
            f"{examples} examples; push the run as vf-eval wrote it"
        )
    return examples, per_example
