"""A trainer-independent source of scored training batches.

:class:`RolloutSource` keeps up to ``max_in_flight`` groups (one example, ``rollouts_per_example``
rollouts, scored together) running against one or more inference endpoints, assigned
round-robin (a group stays on one endpoint). ``await next_batch(step)`` returns the next
``groups_per_batch`` usable groups as :class:`~verifiers.train.samples.Sample` lists with
advantages; groups finished early wait in a buffer, which is what makes training asynchronous
and off-policy. Each group records the policy version it was launched under; at
``next_batch(step)`` any group older than ``max_off_policy_steps`` is cancelled (in flight) or
dropped (buffered). Errored rollouts are dropped and counted, groups whose rewards have no
variance are filtered (their advantages are all zero), and with a :class:`DifficultyConfig`
examples are sorted online into easy/normal/hard pools by pass rate and drawn with fixed ratios.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from verifiers.clients.base import Client
from verifiers.errors import ConfigError, InfraError
from verifiers.train.rollout_previews import pick_previews
from verifiers.train.samples import ChatTokenizer, Sample, build_samples
from verifiers.types import SamplingArgs, State

__all__ = [
    "AdvantageFn",
    "Batch",
    "DifficultyConfig",
    "RolloutSource",
    "RolloutSourceConfig",
    "group_mean_advantages",
]

logger = logging.getLogger(__name__)

AdvantageFn = Callable[[list[float]], list[float]]
MAX_STEP_REWARDS = 4096
Pool = Literal["easy", "normal", "hard"]


def group_mean_advantages(rewards: list[float]) -> list[float]:
    """Reward minus the group's mean reward (the default)."""
    mean = sum(rewards) / len(rewards)
    return [r - mean for r in rewards]


class GroupRunner(Protocol):
    """What the source needs from an environment (:class:`verifiers.Environment` has it)."""

    async def run_group(
        self,
        input: Mapping[str, Any],
        client: Client,
        model: str,
        n: int,
        sampling_args: SamplingArgs | None = None,
    ) -> list[State]: ...


@dataclass(slots=True)
class DifficultyConfig:
    """Online difficulty pools.

    An example's pass rate is the fraction of rollouts of its latest group with
    ``reward >= pass_threshold``. It is *easy* when the pass rate is ``>= easy_at``, *hard* when
    ``<= hard_at``, *normal* otherwise (and before it was seen). New groups draw their pool with
    probabilities proportional to the ratios; an empty pool's share goes to the others, and when
    every pool with a positive ratio is empty any non-empty pool is used (counted as
    ``pool_fallback``) so that training never stalls.
    """

    easy_ratio: float = 0.0
    normal_ratio: float = 1.0
    hard_ratio: float = 0.0
    easy_at: float = 1.0
    hard_at: float = 0.0
    pass_threshold: float = 0.5

    def __post_init__(self) -> None:
        ratios = (self.easy_ratio, self.normal_ratio, self.hard_ratio)
        if any(r < 0 for r in ratios) or sum(ratios) <= 0:
            raise ConfigError(
                f"difficulty ratios must be >= 0 with a positive sum, got easy={self.easy_ratio}, "
                f"normal={self.normal_ratio}, hard={self.hard_ratio}"
            )
        if self.hard_at >= self.easy_at:
            raise ConfigError(
                f"difficulty thresholds need hard_at < easy_at, got {self.hard_at} >= {self.easy_at}"
            )


@dataclass(slots=True)
class RolloutSourceConfig:
    """How the source runs. ``max_in_flight`` bounds the groups running or waiting to be
    consumed. New groups are launched as soon as others finish, also while the trainer trains
    on the batch just returned, except with ``max_off_policy_steps = 0`` (strictly on-policy:
    nothing is generated between ``next_batch`` calls; pair it with ``max_in_flight =
    groups_per_batch`` to waste no groups). A batch is returned short
    (counted as ``short_batches``) after ``max_skipped_groups`` unusable groups in a row, so
    that a policy which solves every example cannot hang training; ``max_failed_groups``
    groups in a row without any usable rollout raise :class:`verifiers.InfraError`."""

    model: str = "policy"
    rollouts_per_example: int = 16
    groups_per_batch: int = 8
    max_in_flight: int = 16
    max_off_policy_steps: int = 8
    sampling_args: SamplingArgs = field(default_factory=dict)
    filter_zero_variance: bool = True
    difficulty: DifficultyConfig | None = None
    on_mismatch: Literal["split", "drop"] = "split"
    seed: int = 0
    max_seq_len: int | None = None
    overlong: Literal["truncate", "mask", "zero", "drop"] = "mask"
    max_failed_groups: int = 32
    max_skipped_groups: int = 64
    #: rollouts of each batch kept as previews (:attr:`Batch.rollouts`, for ``vf view``)
    sample_rollouts: int = 0

    def __post_init__(self) -> None:
        for name in ("rollouts_per_example", "groups_per_batch", "max_in_flight"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_in_flight < self.groups_per_batch:
            raise ConfigError(
                f"max_in_flight ({self.max_in_flight}) must be >= groups_per_batch "
                f"({self.groups_per_batch}): a batch needs that many groups in flight"
            )
        if self.max_off_policy_steps < 0:
            raise ConfigError("max_off_policy_steps must be >= 0")


@dataclass(slots=True)
class Batch:
    """One training step's samples and what the source saw while collecting them."""

    step: int
    samples: list[Sample]
    metrics: dict[str, float]
    counts: Counter[str]
    #: why the groups consumed after the last accepted one were unusable (a short batch):
    #: ``zero_variance``, ``stale``, ``errored``, ``overlong`` -> number of groups
    unusable: Counter[str] = field(default_factory=Counter)
    #: the reward of every scored rollout of the groups consumed (not stale), at most
    #: :data:`MAX_STEP_REWARDS`: the step's reward distribution
    rewards: list[float] = field(default_factory=list)
    #: up to ``sample_rollouts`` previews of the consumed rollouts (lowest to highest reward,
    #: an errored one first when there is one; texts shortened): what ``vf view`` shows
    rollouts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def nothing_to_learn(self) -> bool:
        """No group usable only because every scored group had the same reward in all its
        rollouts (a mastered, or hopeless, task): an update would have zero advantage."""
        return (
            not self.samples
            and self.unusable["zero_variance"] > 0
            and not self.unusable["errored"]
            and not self.unusable["overlong"]
        )


@dataclass(slots=True)
class _Group:
    group_id: int
    row_index: int
    client_index: int
    policy_version: int
    states: list[State] = field(default_factory=list)


class RolloutSource:
    """Continuous batching of environment groups into training batches (see module docs)."""

    def __init__(
        self,
        env: GroupRunner,
        clients: Client | Sequence[Client],
        config: RolloutSourceConfig | None = None,
        *,
        rows: Sequence[Mapping[str, Any]] | None = None,
        tokenizer: ChatTokenizer | None = None,
        advantage_fn: AdvantageFn = group_mean_advantages,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.env = env
        self.clients: list[Client] = [clients] if isinstance(clients, Client) else list(clients)
        if not self.clients:
            raise ConfigError("RolloutSource needs at least one client (inference endpoint)")
        from verifiers.response_cache import CachingClient

        if any(isinstance(c, CachingClient) for c in self.clients):
            raise ConfigError(
                "training never uses the response cache: it would train on stale samples of "
                "an older policy; pass the inference client itself (the cache is for "
                "evaluations: vf.evaluate(cache=...), vf-eval --cache)"
            )
        self.config = config or RolloutSourceConfig()
        self.rows: list[Mapping[str, Any]] = list(rows) if rows is not None else env_rows(env)
        if not self.rows:
            raise ConfigError("the environment has no training rows")
        self.tokenizer = tokenizer
        self.advantage_fn = advantage_fn
        self.clock = clock
        self.policy_version = 0
        self.pass_rates: dict[int, float] = {}
        self._pools: dict[Pool, _IndexedSet] = {"easy": _IndexedSet(), "hard": _IndexedSet()}
        self.counts: Counter[str] = Counter()  # lifetime totals
        self.client_groups: list[int] = [0] * len(self.clients)
        self._rng = random.Random(self.config.seed)
        self._order: list[int] = []
        self._cursor = 0
        self._next_client = 0
        self._next_group = 0
        self._inflight: dict[asyncio.Task[list[State]], _Group] = {}
        self._ready: deque[_Group] = deque()
        self._failed_in_a_row = 0

    # ------------------------------------------------------------------ public

    async def next_batch(self, step: int) -> Batch:
        """The samples of the next ``groups_per_batch`` usable groups for training ``step``.

        ``step`` is the number of optimizer steps already applied to the weights the endpoints
        now serve: the current policy version.
        """
        started = self.clock()
        self.policy_version = max(self.policy_version, step)
        counts: Counter[str] = Counter()
        await self._cancel_stale(counts)
        samples: list[Sample] = []
        rewards: dict[str, list[float]] = {}
        lags: list[int] = []
        accepted = 0
        need = self.config.groups_per_batch
        build_seconds = 0.0
        skipped = 0
        unusable: Counter[str] = Counter()  # the reasons of the current run of unusable groups
        seen: list[tuple[_Group, bool]] = []  # consumed groups (not stale), accepted or not
        while accepted < need and skipped < self.config.max_skipped_groups:
            while self._ready and accepted < need and skipped < self.config.max_skipped_groups:
                group = self._ready.popleft()
                t0 = time.perf_counter()
                reason = self._consume(group, samples, rewards, lags, counts)
                build_seconds += time.perf_counter() - t0
                if reason != "stale":
                    seen.append((group, reason is None))
                if reason is None:
                    accepted += 1
                    skipped = 0
                    unusable.clear()
                else:
                    skipped += 1
                    unusable[reason] += 1
            if accepted >= need or skipped >= self.config.max_skipped_groups:
                break
            self._fill(counts)
            done, _ = await asyncio.wait(self._inflight, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=lambda t: self._inflight[t].group_id):
                self._complete(task, counts)
        if accepted < need:
            # e.g. the policy solves (or fails) everything: every group is filtered
            counts["short_batches"] += 1
            if accepted:  # an empty batch is reported by the trainer, which decides about it
                logger.warning(
                    "step %d: training on %d of %d groups: the %d groups consumed after the "
                    "last usable one were all unusable (%s)",
                    step + 1,  # numbered like the trainer's lines: the step this batch trains
                    accepted,
                    need,
                    skipped,
                    describe_unusable(unusable),
                )
        if self.config.max_off_policy_steps > 0:
            # keep generating while the trainer trains on this batch (continuous batching)
            self._fill(counts)
        self.counts.update(counts)
        elapsed = self.clock() - started
        all_rewards = [r for task_rewards in rewards.values() for r in task_rewards]
        n_tokens = sum(len(s) for s in samples)
        loss_tokens = sum(s.num_loss_tokens for s in samples)
        metrics: dict[str, float] = {
            "reward": sum(all_rewards) / len(all_rewards) if all_rewards else 0.0,
            "num_samples": float(len(samples)),
            "num_tokens": float(n_tokens),
            "num_loss_tokens": float(loss_tokens),
            "off_policy_lag_mean": sum(lags) / len(lags) if lags else 0.0,
            "off_policy_lag_max": float(max(lags, default=0)),
            "wait_seconds": elapsed,
            "build_seconds": build_seconds,
            "in_flight": float(len(self._inflight)),
            "buffered": float(len(self._ready)),
        }
        if len(rewards) > 1:  # several tasks (an EnvGroup): the mean reward of each
            for name, task_rewards in sorted(rewards.items()):
                metrics[f"reward/{name}"] = sum(task_rewards) / len(task_rewards)
        if self.config.difficulty is not None:
            for pool, size in self._pool_sizes().items():
                metrics[f"pool_{pool}"] = float(size)
        step_rewards = [
            float(st["reward"])
            for g, _ in seen
            for st in g.states
            if st.get("error") is None and isinstance(st.get("reward"), int | float)
        ][:MAX_STEP_REWARDS]
        return Batch(
            step=step,
            samples=samples,
            metrics=metrics,
            counts=counts,
            unusable=unusable,
            rewards=step_rewards,
            rollouts=pick_previews(seen, self.config.sample_rollouts),
        )

    def set_policy_version(self, version: int) -> None:
        """Record that the endpoints now serve weights after ``version`` optimizer steps."""
        self.policy_version = max(self.policy_version, version)

    async def close(self) -> None:
        """Cancel every running group and wait for their cleanup."""
        tasks = list(self._inflight)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._inflight.clear()
        self._ready.clear()

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to continue the data order and the difficulty pools."""
        return {
            "pass_rates": dict(self.pass_rates),
            "rng": self._rng.getstate(),
            "order": list(self._order),
            "cursor": self._cursor,
            "next_group": self._next_group,
            "counts": dict(self.counts),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`. When the dataset shrank since (another version
        of the environment), rows that no longer exist are forgotten and a new epoch starts."""
        n = len(self.rows)
        self.pass_rates = {}
        self._pools = {"easy": _IndexedSet(), "hard": _IndexedSet()}
        for k, v in state["pass_rates"].items():
            if int(k) < n:
                self._set_pass_rate(int(k), float(v))
        self._rng.setstate(state["rng"])
        order = [int(i) for i in state["order"]]
        if len(order) == n and all(i < n for i in order):
            self._order, self._cursor = order, int(state["cursor"])
        else:
            self._order, self._cursor = [], 0
        self._next_group = int(state["next_group"])
        self.counts = Counter(state["counts"])

    def pool_of(self, row_index: int) -> Pool:
        """The difficulty pool of a dataset row (``normal`` when pools are off)."""
        return self._pool_of(row_index)

    # ------------------------------------------------------------------ launching

    def _fill(self, counts: Counter[str]) -> None:
        while len(self._inflight) + len(self._ready) < self.config.max_in_flight:
            row_index = self._pick_row(counts)
            client_index = self._next_client
            self._next_client = (self._next_client + 1) % len(self.clients)
            group = _Group(self._next_group, row_index, client_index, self.policy_version)
            self._next_group += 1
            self.client_groups[client_index] += 1
            task = asyncio.ensure_future(
                self.env.run_group(
                    self.rows[row_index],
                    self.clients[client_index],
                    self.config.model,
                    self.config.rollouts_per_example,
                    dict(self.config.sampling_args),
                )
            )
            self._inflight[task] = group

    def _pick_row(self, counts: Counter[str]) -> int:
        difficulty = self.config.difficulty
        if difficulty is None:
            return self._next_in_order()
        sizes = self._pool_sizes()
        weights: dict[Pool, float] = {
            "easy": difficulty.easy_ratio,
            "normal": difficulty.normal_ratio,
            "hard": difficulty.hard_ratio,
        }
        choices = [p for p in weights if sizes[p] and weights[p] > 0]
        pool: Pool
        if choices:
            pool = self._rng.choices(choices, weights=[weights[p] for p in choices])[0]
        else:
            counts["pool_fallback"] += 1
            pool = next(p for p in ("normal", "hard", "easy") if sizes[p])  # type: ignore[assignment]
        counts[f"drawn_{pool}"] += 1
        if pool == "normal":
            return self._next_in_order()
        return self._pools[pool].choice(self._rng)

    def _pool_sizes(self) -> dict[Pool, int]:
        easy, hard = len(self._pools["easy"]), len(self._pools["hard"])
        return {"easy": easy, "normal": len(self.rows) - easy - hard, "hard": hard}

    def _set_pass_rate(self, row_index: int, rate: float) -> None:
        for members in self._pools.values():
            members.discard(row_index)
        self.pass_rates[row_index] = rate
        pool = self._pool_of(row_index)
        if pool != "normal":
            self._pools[pool].add(row_index)

    def _next_in_order(self) -> int:
        """Epoch order over the normal pool: a seeded shuffle, reshuffled each pass."""
        for _ in range(2 * len(self.rows) + 1):
            if self._cursor >= len(self._order):
                self._order = list(range(len(self.rows)))
                self._rng.shuffle(self._order)
                self._cursor = 0
            index = self._order[self._cursor]
            self._cursor += 1
            if self._pool_of(index) == "normal":
                return index
        raise AssertionError("no normal example although the normal pool is not empty")

    def _pool_of(self, row_index: int) -> Pool:
        difficulty = self.config.difficulty
        rate = self.pass_rates.get(row_index)
        if difficulty is None or rate is None:
            return "normal"
        if rate >= difficulty.easy_at:
            return "easy"
        if rate <= difficulty.hard_at:
            return "hard"
        return "normal"

    # ------------------------------------------------------------------ completion

    async def _cancel_stale(self, counts: Counter[str]) -> None:
        bound = self.config.max_off_policy_steps
        stale = [
            t for t, g in self._inflight.items() if self.policy_version - g.policy_version > bound
        ]
        for task in stale:
            task.cancel()
            del self._inflight[task]
        if stale:
            counts["stale_cancelled"] += len(stale)
            await asyncio.gather(*stale, return_exceptions=True)

    def _complete(self, task: asyncio.Task[list[State]], counts: Counter[str]) -> None:
        group = self._inflight.pop(task)
        if task.cancelled():
            counts["stale_cancelled"] += 1
            return
        error = task.exception()
        if error is not None and getattr(error, "stops_training", False):
            raise error  # e.g. the env-server process died: no later group can succeed
        if error is not None:
            counts["failed_groups"] += 1
            self._failed_in_a_row += 1
            logger.warning("group %d failed: %s: %s", group.group_id, type(error).__name__, error)
            self._check_failures(error)
            return
        group.states = task.result()
        valid = [s for s in group.states if s.get("error") is None and s.get("reward") is not None]
        if not valid:
            counts["failed_groups"] += 1
            self._failed_in_a_row += 1
            self._check_failures(None, group.states)
        else:
            self._failed_in_a_row = 0
            threshold = self.config.difficulty.pass_threshold if self.config.difficulty else 0.5
            passed = sum(1 for s in valid if float(s["reward"]) >= threshold)
            self._set_pass_rate(group.row_index, passed / len(valid))
        self._ready.append(group)

    def _check_failures(
        self, error: BaseException | None, states: list[State] | None = None
    ) -> None:
        if self._failed_in_a_row < self.config.max_failed_groups:
            return
        if error is None and states:
            record = next((s.get("error") for s in states if s.get("error")), None)
            detail = str(record.get("message") if isinstance(record, Mapping) else record)
        else:
            detail = f"{type(error).__name__}: {error}" if error else "no rewards"
        raise InfraError(
            f"{self._failed_in_a_row} groups in a row produced no usable rollout (last: {detail}). "
            "Check that the inference endpoints are up and the environment runs "
            "(try `vf eval` with the same model)."
        )

    def _consume(
        self,
        group: _Group,
        samples: list[Sample],
        rewards: dict[str, list[float]],
        lags: list[int],
        counts: Counter[str],
    ) -> str | None:
        """Turn a finished group into samples; None when it was accepted into the batch, else
        why it was not (``stale``, ``errored``, ``overlong``, ``zero_variance``)."""
        lag = self.policy_version - group.policy_version
        if lag > self.config.max_off_policy_steps:
            counts["stale_dropped"] += 1
            return "stale"
        valid = [s for s in group.states if s.get("error") is None and s.get("reward") is not None]
        if len(valid) < len(group.states):
            counts["errored_rollouts"] += len(group.states) - len(valid)
        if not valid:
            return "errored"
        group_rewards = [float(s["reward"]) for s in valid]
        rewards.setdefault(str(valid[0].get("task") or "default"), []).extend(group_rewards)
        built_all: list[list[Sample]] = []
        for state in valid:
            built = build_samples(
                state,
                tokenizer=self.tokenizer,
                group_id=group.group_id,
                policy_version=group.policy_version,
                on_mismatch=self.config.on_mismatch,
            )
            counts.update(built.counts)
            built_all.append(built.samples)
        train_rewards, built_all = apply_overlong(
            group_rewards, built_all, self.config.max_seq_len, self.config.overlong, counts
        )
        if not train_rewards:
            return "overlong"
        if self.config.filter_zero_variance and max(train_rewards) - min(train_rewards) < 1e-9:
            counts["zero_variance_groups"] += 1
            return "zero_variance"
        advantages = self.advantage_fn(train_rewards)
        if len(advantages) != len(train_rewards):
            raise ConfigError(
                f"advantage_fn returned {len(advantages)} values for {len(train_rewards)} rewards"
            )
        group_samples: list[Sample] = []
        for built_samples, adv in zip(built_all, advantages, strict=True):
            for sample in built_samples:
                sample.advantage = float(adv)
            group_samples.extend(built_samples)
        if not group_samples:
            return "overlong"
        samples.extend(group_samples)
        lags.append(lag)
        return None


_UNUSABLE_WORDS = {
    "zero_variance": "had the same reward in every rollout",
    "stale": "were sampled by weights too many steps old",
    "errored": "had no rollout without an error",
    "overlong": "had every rollout over the length limit",
}


def describe_unusable(unusable: Counter[str]) -> str:
    """``3 had the same reward in every rollout, 1 were sampled by ...`` for a log line."""
    parts = [f"{n} {_UNUSABLE_WORDS.get(k, k)}" for k, n in unusable.most_common()]
    return ", ".join(parts) or "none"


def apply_overlong(
    rewards: list[float],
    built: list[list[Sample]],
    limit: int | None,
    mode: str,
    counts: Counter[str],
) -> tuple[list[float], list[list[Sample]]]:
    """Handle the rollouts of one group that have a sample longer than ``limit`` tokens
    (counted as ``overlong``), before advantages so that "zero" and "drop" change them:

    * ``truncate``: cut to ``limit`` tokens, trained with the rollout's reward;
    * ``mask``: cut, and none of its tokens trained (its reward still counts in the group);
    * ``zero``: cut, trained with reward 0;
    * ``drop``: removed from the group.

    ``rewards[i]`` and ``built[i]`` are rollout ``i``'s; returns the rewards and samples to
    compute advantages with (samples without loss tokens left out)."""
    if limit is None:
        return rewards, built
    kept_rewards: list[float] = []
    kept: list[list[Sample]] = []
    for reward, samples in zip(rewards, built, strict=True):
        if any(len(s) > limit for s in samples):
            counts["overlong"] += 1
            if mode == "drop":
                continue
            for s in samples:
                if len(s) > limit:
                    truncate_sample(s, limit, train=mode != "mask")
            if mode == "zero":
                reward = 0.0
                for s in samples:
                    s.reward = 0.0
        kept_rewards.append(reward)
        kept.append([s for s in samples if any(s.mask)])
    return kept_rewards, kept


def truncate_sample(sample: Sample, max_len: int, *, train: bool) -> None:
    """Cut ``sample`` to its first ``max_len`` tokens (in place) and mark it truncated;
    ``train=False`` also clears its mask (it carries no loss)."""
    del sample.token_ids[max_len:]
    del sample.mask[max_len:]
    if sample.logprobs is not None:
        del sample.logprobs[max_len:]
    if not train:
        sample.mask[:] = [False] * len(sample.mask)
    sample.is_truncated = True


def env_rows(env: Any) -> list[Mapping[str, Any]]:
    """Training rows of an environment: ``get_rows("train")`` when it has it (cached plain
    dicts), else the rows of ``get_dataset()``."""
    get_rows = getattr(env, "get_rows", None)
    if callable(get_rows):
        return list(get_rows("train"))
    dataset = env.get_dataset()
    return list(dataset.to_list() if hasattr(dataset, "to_list") else dataset)


class _IndexedSet:
    """A set of ints with O(1) add, discard and uniform random choice."""

    __slots__ = ("_items", "_where")

    def __init__(self) -> None:
        self._items: list[int] = []
        self._where: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item: int) -> None:
        if item not in self._where:
            self._where[item] = len(self._items)
            self._items.append(item)

    def discard(self, item: int) -> None:
        pos = self._where.pop(item, None)
        if pos is None:
            return
        last = self._items.pop()
        if pos < len(self._items):
            self._items[pos] = last
            self._where[last] = pos

    def choice(self, rng: random.Random) -> int:
        return self._items[rng.randrange(len(self._items))]
