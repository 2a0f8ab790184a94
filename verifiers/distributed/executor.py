"""Running an evaluation plan on Ray: the ``executor`` of :func:`verifiers.evaluate_async`.

The driver keeps everything a run owns (the run directory, ``results.jsonl``, resume, the
progress callback); the cluster only runs groups. A fixed number of driver-side lanes pull the
plan's jobs (an example and its missing rollout indices) one at a time and send each as one
call to a worker, so the rollouts in flight never exceed the global ``max_concurrent`` (a
group larger than that runs alone) and nothing queues beyond the lanes: a slow cluster slows
the driver (back-pressure). A group whose worker dies is sent again to another worker; the
records the driver writes come only from the call that answered, so each rollout lands in
``results.jsonl`` exactly once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from verifiers.distributed.pool import WorkerPool, connect
from verifiers.distributed.spec import ClientFactory, EnvSpec, RayConfig, oracle_client

if TYPE_CHECKING:
    from verifiers.eval_plan import Job, RunPlan

__all__ = ["RayExecutor"]


class RayExecutor:
    """Runs an evaluation's jobs on Ray workers (see the module docs).

    ``env``: what each worker loads (an :class:`EnvSpec`, an id or a package directory).
    ``client_factory``: a picklable callable building the worker's client (default: the
    oracle). Use it once, as ``evaluate_async(..., executor=RayExecutor(...))``.
    """

    backend = "ray"

    def __init__(
        self,
        env: EnvSpec | str,
        config: RayConfig | None = None,
        client_factory: ClientFactory = oracle_client,
        *,
        on_started: Callable[[WorkerPool], None] | None = None,
    ) -> None:
        self.env_spec = env if isinstance(env, EnvSpec) else EnvSpec.of(env)
        self.config = config or RayConfig()
        self.client_factory = client_factory
        self.on_started = on_started
        self.pool: WorkerPool | None = None
        self._summary: dict[str, Any] = {"backend": "ray", "address": self.config.address}

    def summary(self) -> dict[str, Any]:
        """Workers, replacements, re-runs and groups per node (for the run's metadata)."""
        if self.pool is not None:
            self._summary.update(self.pool.stats.as_dict())
        return dict(self._summary)

    async def run(
        self,
        plan: RunPlan,
        model: str,
        max_concurrent: int,
        add_record: Callable[[dict[str, Any]], None],
        state_columns: Sequence[str] = (),
    ) -> None:
        """Run every job of ``plan`` on the cluster; ``add_record`` takes each record."""
        if not plan.jobs:
            return
        connection = connect(self.config.address)
        started = time.perf_counter()
        try:
            self.pool = WorkerPool(self.config, self.env_spec, self.client_factory)
            try:
                await self.pool.start()
                self._summary["startup_s"] = round(time.perf_counter() - started, 3)
                if self.on_started is not None:
                    self.on_started(self.pool)
                await self._run_jobs(plan, model, max_concurrent, add_record, state_columns)
            finally:
                await self.pool.close()
        finally:
            connection.close()

    async def _run_jobs(
        self,
        plan: RunPlan,
        model: str,
        max_concurrent: int,
        add_record: Callable[[dict[str, Any]], None],
        state_columns: Sequence[str],
    ) -> None:
        assert self.pool is not None
        pool = self.pool
        jobs = iter(plan.jobs)
        sampling: Mapping[str, Any] = dict(plan.settings.sampling_args)
        columns = list(state_columns)

        async def lane() -> None:
            for job in jobs:
                row, indices = job
                result = await pool.call("run_job", row, list(indices), model, sampling, columns)
                _check(job, result["records"])
                for record in result["records"]:
                    add_record(record)

        count = _lanes(plan.jobs, max_concurrent)
        tasks = [asyncio.ensure_future(lane()) for _ in range(count)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


def _lanes(jobs: list[Job], max_concurrent: int) -> int:
    """Groups in flight at once: as many as fit in ``max_concurrent`` rollouts (at least one)."""
    size = max(len(indices) for _, indices in jobs)
    if max_concurrent <= 0:
        return len(jobs)
    return max(1, min(len(jobs), max_concurrent // size))


def _check(job: Job, records: list[dict[str, Any]]) -> None:
    row, indices = job
    got = sorted(r["rollout_index"] for r in records)
    if got != sorted(indices) or any(r["example_id"] != row["example_id"] for r in records):
        raise RuntimeError(
            f"a Ray worker answered example {row['example_id']!r} rollouts {indices} with "
            f"{[(r['example_id'], r['rollout_index']) for r in records]}"
        )
