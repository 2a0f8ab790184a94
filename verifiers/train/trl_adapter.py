"""Train on any verifiers environment with TRL's ``GRPOTrainer``.

:class:`TRLAdapter` supplies the three things ``GRPOTrainer`` needs: a ``train_dataset`` of the
environment's prompts, a ``rollout_func`` that runs the environment (single- or multi-turn,
tools included) for each group of repeated prompts and returns token ids, sampling logprobs and
an ``env_mask`` (0 on environment tokens), and a reward function returning the environment's
rewards::

    adapter = TRLAdapter(vf.load_environment("my-env"))
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=GRPOConfig(num_generations=8, ...),
        train_dataset=adapter.train_dataset(),
        reward_funcs=adapter.reward_func,
        rollout_func=adapter.rollout_func,
    )

Without a ``client`` the adapter samples from ``trainer.model`` in process
(:class:`LocalModelClient`); pass a :class:`verifiers.Client` (e.g. ``NativeClient`` on a vLLM
server) to sample elsewhere, with ``sampling_args={"logprobs": True, "extra_body":
{"return_token_ids": True}}`` so that the server's token ids and logprobs are used (otherwise
the transcript is re-tokenized with the trainer's tokenizer and logprobs are unknown). Rollouts run on a private event loop in a
background thread. TRL takes one token sequence per completion: when a multi-turn transcript
must be split (its turns are not prefix-consistent), the first part is used and counted in
:attr:`counts`; errored rollouts train on nothing (reward ``None``).
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections import Counter
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from verifiers.clients.base import Client
from verifiers.errors import ConfigError
from verifiers.train.rollout_source import env_rows
from verifiers.train.samples import build_samples
from verifiers.types import SamplingArgs, State

__all__ = ["TRLAdapter"]

T = TypeVar("T")


def _key(prompt: Any) -> str:
    return json.dumps(prompt, sort_keys=True, default=str)


class TRLAdapter:
    """Bridges an environment to ``GRPOTrainer(rollout_func=..., reward_funcs=...)``."""

    def __init__(
        self,
        env: Any,
        *,
        client: Client | None = None,
        model: str = "policy",
        sampling_args: SamplingArgs | None = None,
    ) -> None:
        self.env = env
        self.client = client
        self.model = model
        self.sampling_args: SamplingArgs = dict(sampling_args or {})
        self.rows: list[Mapping[str, Any]] = env_rows(env)
        self._by_prompt = {_key(r["prompt"]): r for r in self.rows}
        self.counts: Counter[str] = Counter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._local: Any = None

    def train_dataset(self) -> Any:
        """A ``datasets.Dataset`` with the environment's prompts (column ``prompt``)."""
        from datasets import Dataset

        return Dataset.from_list([{"prompt": r["prompt"]} for r in self.rows])

    # ------------------------------------------------------------------ TRL hooks

    def rollout_func(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """Run the environment for ``prompts`` (consecutive repeats form one group)."""
        client = self.client or self._local_client(trainer)
        args = dict(self.sampling_args)
        max_len = getattr(getattr(trainer, "args", None), "max_completion_length", None)
        if max_len and "max_tokens" not in args:
            args["max_tokens"] = int(max_len)
        temperature = getattr(getattr(trainer, "args", None), "temperature", None)
        if temperature is not None and "temperature" not in args:
            args["temperature"] = float(temperature)
        groups: list[tuple[Mapping[str, Any], int]] = []
        for prompt in prompts:
            row = self._by_prompt.get(_key(prompt))
            if row is None:
                raise ConfigError(
                    "rollout_func got a prompt that is not in the environment's dataset; "
                    "use TRLAdapter.train_dataset() as the trainer's train_dataset"
                )
            if groups and groups[-1][0] is row:
                groups[-1] = (row, groups[-1][1] + 1)
            else:
                groups.append((row, 1))

        async def run_all() -> list[list[State]]:
            return list(
                await asyncio.gather(
                    *(self.env.run_group(row, client, self.model, n, args) for row, n in groups)
                )
            )

        states = [s for group in self._run(run_all()) for s in group]
        return self._outputs(states, trainer.processing_class)

    def reward_func(
        self, prompts: Any = None, completions: Any = None, **kwargs: Any
    ) -> list[float | None]:
        """The environment's reward of each completion (``None`` for errored rollouts)."""
        rewards: list[float | None] = list(kwargs["vf_reward"])
        return rewards

    # ------------------------------------------------------------------ internals

    def _outputs(self, states: list[State], tokenizer: Any) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {
            "prompt_ids": [],
            "completion_ids": [],
            "logprobs": [],
            "env_mask": [],
            "vf_reward": [],
        }
        eos = int(tokenizer.eos_token_id)
        for state in states:
            built = build_samples(state, tokenizer=tokenizer)
            self.counts.update(built.counts)
            if not built.samples or built.samples[0].error is not None:
                # nothing trainable: one eos token that carries no loss and no reward
                out["prompt_ids"].append([eos])
                out["completion_ids"].append([eos])
                out["logprobs"].append([0.0])
                out["env_mask"].append([0])
                out["vf_reward"].append(None)
                continue
            if len(built.samples) > 1:
                self.counts["trl_kept_first_part"] += 1
            sample = built.samples[0]
            start = sample.mask.index(True)
            # unknown sampling logprobs are NaN: TRL applies no importance correction there
            lps = sample.logprobs or [math.nan] * len(sample.token_ids)
            out["prompt_ids"].append(sample.token_ids[:start])
            out["completion_ids"].append(sample.token_ids[start:])
            out["logprobs"].append(lps[start:])
            out["env_mask"].append([int(m) for m in sample.mask[start:]])
            out["vf_reward"].append(float(state["reward"]))
        return out

    def _local_client(self, trainer: Any) -> Client:
        from verifiers.train.local_client import LocalModelClient

        model = trainer.accelerator.unwrap_model(trainer.model)
        if self._local is None or self._local.model is not model:
            self._local = LocalModelClient(model, trainer.processing_class)
        client: Client = self._local
        return client

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="vf-trl-rollouts", daemon=True).start()
            self._loop = loop
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        """Stop the background event loop."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop = None
