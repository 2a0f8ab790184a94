"""The ``Environment`` base class: dataset, rollout driver, limits, scoring and cleanup.

The environment owns the rollout loop; subclasses supply hooks:

- ``setup_state(state)``: prepare per-rollout resources (async; may start them as tasks so they
  overlap with the first model call).
- ``env_response(messages, state)``: the environment's turn (``MultiTurnEnv``), returns the new
  messages to append.
- ``@vf.stop`` methods ``(state) -> bool``: extra stop conditions, highest priority first.
  A classic ``is_completed(messages, state)`` override is honoured too.
- ``@vf.cleanup`` methods ``(state)``: always run after scoring, also on error and cancellation.
- ``@vf.teardown`` methods ``()``: run once by :meth:`close`.
- ``oracle_response(state)``: the message a perfect model sends (used by ``-m oracle``).

One rollout: ``init_state`` -> ``setup_state`` -> loop (model call, stop checks,
``env_response``) -> scoring by the rubric -> cleanup. History is appended, never rebuilt.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from verifiers.decorators import discover, stop
from verifiers.errors import (
    ConfigError,
    OverlongPromptError,
)
from verifiers.types import (
    Message,
    Messages,
    MessageType,
    ModelResponse,
    SamplingArgs,
    State,
    StepTokens,
    TrajectoryStep,
    Usage,
)
from verifiers.utils.async_utils import call_maybe_async, is_async_callable

if TYPE_CHECKING:
    from datasets import Dataset

    from verifiers.clients.base import Client
    from verifiers.evaluation import EvalResult
    from verifiers.parsers.parser import Parser
    from verifiers.rubrics.rubric import Rubric

__all__ = ["Environment"]

logger = logging.getLogger("verifiers.envs")

DatasetLike = Any  # datasets.Dataset | list[dict] | Callable[[], datasets.Dataset]


class Environment:
    """Base class of every environment (classic ``verifiers`` call shape).

    Args:
        dataset: training rows (``datasets.Dataset``, a list of dicts, or a zero-argument
            builder returning one). Columns: ``prompt`` (messages) or ``question`` (text),
            ``answer``, ``info``, ``task``; ``example_id`` is added when missing.
        eval_dataset: evaluation rows, same columns; ``vf-eval`` uses it when present.
        system_prompt: prepended as a system message when prompts are built from ``question``.
        few_shot: messages inserted between the system prompt and the question.
        parser: the parser rewards and the oracle use (default :class:`verifiers.Parser`).
        rubric: the reward functions (default: an empty :class:`verifiers.Rubric`).
        sampling_args: defaults merged under the caller's sampling arguments.
        message_type: ``"chat"`` (default) or ``"completion"``.
        tool_defs: OpenAI tool schemas offered to the model (``ToolEnv`` fills this).
        max_turns: model calls per rollout (``-1``: no limit).
        max_total_completion_tokens: completion-token budget per rollout (``-1``: none).
        timeout_seconds: wall-clock limit per rollout, covering generation, tools and scoring.
        max_seq_len: stop when prompt + completion tokens reach this length.
        score_rollouts: score with the rubric (default True).
        env_id, env_args: recorded in results.
    """

    _known_kwargs: ClassVar[frozenset[str]] = frozenset(
        {"max_workers", "map_kwargs", "pass_threshold", "oai_tools", "max_concurrent"}
    )

    def __init__(
        self,
        dataset: DatasetLike | None = None,
        eval_dataset: DatasetLike | None = None,
        system_prompt: str | None = None,
        few_shot: Messages | None = None,
        parser: Parser | None = None,
        rubric: Rubric | None = None,
        sampling_args: SamplingArgs | None = None,
        message_type: MessageType = "chat",
        tool_defs: list[dict[str, Any]] | None = None,
        max_turns: int = -1,
        max_total_completion_tokens: int = -1,
        timeout_seconds: float | None = None,
        max_seq_len: int | None = None,
        score_rollouts: bool = True,
        env_id: str | None = None,
        env_args: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - self._known_kwargs)
        if unknown:
            raise ConfigError(self._unknown_kwargs_message(unknown))
        if message_type not in ("chat", "completion"):
            raise ConfigError(f"message_type must be 'chat' or 'completion', not {message_type!r}")
        if message_type == "completion" and (system_prompt or few_shot):
            raise ConfigError(
                "system_prompt and few_shot apply to chat prompts only; with "
                "message_type='completion' put the instructions into the dataset's prompt text"
            )
        if dataset is None and eval_dataset is None:
            raise ConfigError(
                f"{type(self).__name__} needs a dataset or an eval_dataset (columns: "
                "'prompt' or 'question', optional 'answer', 'info', 'task')."
            )
        from verifiers.parsers.parser import Parser as _Parser
        from verifiers.rubrics.rubric import Rubric as _Rubric

        self.parser: Parser = parser if parser is not None else _Parser()
        self.rubric: Rubric = rubric if rubric is not None else _Rubric(parser=self.parser)
        self.system_prompt = system_prompt
        self.few_shot = list(few_shot or [])
        self.sampling_args: SamplingArgs = dict(sampling_args or {})
        self.message_type: MessageType = message_type
        self.oai_tools: list[dict[str, Any]] = list(tool_defs or kwargs.get("oai_tools") or [])
        self.max_turns = max_turns
        self.max_total_completion_tokens = max_total_completion_tokens
        self.timeout_seconds = timeout_seconds
        self.max_seq_len = max_seq_len
        self.score_rollouts = score_rollouts
        self.env_id = env_id or type(self).__name__
        self.env_args: dict[str, Any] = dict(env_args or {})
        # set by load_environment() when the environment comes from an installed distribution
        self.env_version: str | None = None
        self.env_distribution: str | None = None
        self.env_wheel_sha256: str | None = None
        # its [tool.verifiers.eval] table: defaults for vf.evaluate and vf-eval
        self.env_eval_defaults: dict[str, Any] = {}
        self.pass_threshold: float = float(kwargs.get("pass_threshold", 0.5))
        self.map_kwargs: dict[str, Any] = dict(kwargs.get("map_kwargs") or {})
        self._raw: dict[str, DatasetLike | None] = {"train": dataset, "eval": eval_dataset}
        self._formatted: dict[str, Dataset] = {}
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._stop_conditions = [(m, is_async_callable(m)) for m in discover(self, "stop")]
        self._cleanup_handlers = discover(self, "cleanup")
        self._teardown_handlers = discover(self, "teardown")
        self._classic_is_completed = self._find_classic_is_completed()

    def _unknown_kwargs_message(self, unknown: list[str]) -> str:
        import difflib

        accepted: set[str] = set(self._known_kwargs)
        for klass in type(self).__mro__:
            init = vars(klass).get("__init__")
            if init is not None:
                accepted.update(
                    n
                    for n, p in inspect.signature(init).parameters.items()
                    if n != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD
                )
        parts = []
        for name in unknown:
            close = difflib.get_close_matches(name, sorted(accepted), n=1)
            parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return (
            f"{type(self).__name__} got unknown keyword argument(s): {', '.join(parts)}. "
            "Check the spelling, or handle environment-specific options in load_environment()."
        )

    # ------------------------------------------------------------------ datasets

    @property
    def dataset(self) -> Dataset | None:
        """The formatted training dataset (``None`` when the environment has only eval rows)."""
        return self._get_formatted("train") if self._raw["train"] is not None else None

    @property
    def eval_dataset(self) -> Dataset | None:
        """The formatted evaluation dataset (``None`` when not given)."""
        return self._get_formatted("eval") if self._raw["eval"] is not None else None

    def get_dataset(self, n: int = -1, seed: int | None = None) -> Dataset:
        """The training dataset (falls back to the eval dataset), first ``n`` rows or a seeded
        shuffle of them."""
        split = "train" if self._raw["train"] is not None else "eval"
        return self._select(self._get_formatted(split), n, seed)

    def get_eval_dataset(self, n: int = -1, seed: int | None = None) -> Dataset:
        """The evaluation dataset (falls back to the training dataset)."""
        split = "eval" if self._raw["eval"] is not None else "train"
        return self._select(self._get_formatted(split), n, seed)

    def get_rows(self, split: str = "eval", n: int = -1) -> list[dict[str, Any]]:
        """Formatted rows as plain dicts (cached): what rollouts are driven from."""
        if self._raw.get(split) is None:
            split = "train" if split == "eval" else "eval"
        rows = self._rows.get(split)
        if rows is None:
            rows = [self._normalise_row(r) for r in self._get_formatted(split).to_list()]
            self._rows[split] = rows
        return rows if n < 0 else rows[:n]

    @staticmethod
    def _select(ds: Dataset, n: int, seed: int | None) -> Dataset:
        if seed is not None:
            ds = ds.shuffle(seed=seed)
        if 0 <= n < len(ds):
            ds = ds.select(range(n))
        return ds

    def _get_formatted(self, split: str) -> Dataset:
        ds = self._formatted.get(split)
        if ds is None:
            raw = self._raw[split]
            if raw is None:
                raise ConfigError(f"{type(self).__name__} has no {split} dataset")
            ds = self.format_dataset(_to_dataset(raw))
            self._formatted[split] = ds
        return ds

    def format_dataset(self, dataset: Dataset) -> Dataset:
        """Add ``prompt`` (from ``question``), ``example_id``, ``answer``, ``info`` and ``task``
        columns where missing."""
        cols = set(dataset.column_names)
        if "prompt" not in cols and "question" not in cols:
            raise ConfigError(
                f"{type(self).__name__}: the dataset needs a 'prompt' or a 'question' column; "
                f"it has {sorted(cols)}"
            )
        if "example_id" not in cols:
            dataset = dataset.add_column("example_id", list(range(len(dataset))))
        if "prompt" not in cols:
            prompts = [self._prompt_from_question(q) for q in dataset["question"]]
            dataset = dataset.add_column("prompt", prompts)  # type: ignore[arg-type]
        elif self.message_type == "chat" and self.system_prompt:
            system = {"role": "system", "content": self.system_prompt}
            prompts = [
                [system, *p]
                if isinstance(p, list) and (not p or p[0].get("role") != "system")
                else p
                for p in dataset["prompt"]
            ]
            dataset = dataset.remove_columns("prompt").add_column("prompt", prompts)  # type: ignore[arg-type]
        if "answer" not in cols:
            dataset = dataset.add_column("answer", [""] * len(dataset))
        if "task" not in cols:
            dataset = dataset.add_column("task", ["default"] * len(dataset))
        return dataset

    def _prompt_from_question(self, question: str) -> Messages | str:
        if self.message_type == "completion":
            return question
        prompt: Messages = []
        if self.system_prompt:
            prompt.append({"role": "system", "content": self.system_prompt})
        prompt.extend(self.few_shot)
        prompt.append({"role": "user", "content": question})
        return prompt

    @staticmethod
    def _normalise_row(row: dict[str, Any]) -> dict[str, Any]:
        info = row.get("info")
        if isinstance(info, str):
            try:
                row["info"] = json.loads(info) if info else {}
            except ValueError:
                row["info"] = {"text": info}
        elif info is None:
            row["info"] = {}
        prompt = row.get("prompt")
        if isinstance(prompt, list):
            # Arrow fills absent struct fields with None; drop them so the wire format is clean
            row["prompt"] = [
                {k: v for k, v in m.items() if v is not None or k == "content"} for m in prompt
            ]
        return row

    # ------------------------------------------------------------------ state

    async def init_state(
        self,
        input: Mapping[str, Any],
        client: Client,
        model: str,
        sampling_args: SamplingArgs | None = None,
        *,
        rollout_index: int = 0,
    ) -> State:
        """A fresh :class:`State` for one rollout of ``input`` (a formatted dataset row)."""
        prompt = input["prompt"]
        args = {**self.sampling_args, **(sampling_args or {})}
        state = State(
            prompt=prompt,
            completion=[] if self.message_type == "chat" else "",
            answer=input.get("answer", ""),
            task=input.get("task", "default"),
            info=input.get("info") or {},
            example_id=input.get("example_id", 0),
            rollout_index=rollout_index,
            trajectory=[],
            responses=[],
            turn=0,
            usage=Usage(),
            timing={"start": time.time(), "generation_ms": 0.0, "scoring_ms": 0.0},
            reward=None,
            metrics={},
            reward_errors=[],
            error=None,
            is_completed=False,
            stop_condition=None,
            is_truncated=False,
            model=model,
            sampling_args=args,
            client=client,
            oai_tools=self.oai_tools,
        )
        return state

    async def setup_state(self, state: State) -> State:
        """Per-rollout preparation hook (async). Return the state (or ``None``)."""
        return state

    # ------------------------------------------------------------------ hooks

    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        """The environment's turn: new messages to append after the model's message."""
        raise NotImplementedError(f"{type(self).__name__} must implement env_response()")

    async def is_completed(self, state: State, **kwargs: Any) -> bool:
        """True when any stop condition holds; records which in ``state["stop_condition"]``."""
        return await self._check_stop(state, kwargs.get("messages"))

    async def oracle_response(self, state: State) -> Message:
        """The message a perfect model sends now (the built-in ``oracle`` model).

        Default: the gold answer formatted by the parser. Environments whose gold behaviour is
        not a single final answer (tools, games) override this.
        """
        answer = state.get("answer", "")
        text = self.parser.format_answer(str(answer))
        return {"role": "assistant", "content": text}

    @stop(priority=100)
    async def has_error(self, state: State) -> bool:
        return state.get("error") is not None

    @stop(priority=90)
    async def prompt_too_long(self, state: State) -> bool:
        return bool(state.get("prompt_too_long"))

    @stop(priority=80)
    async def max_turns_reached(self, state: State) -> bool:
        return self.max_turns > 0 and state["turn"] >= self.max_turns

    @stop(priority=70)
    async def max_total_completion_tokens_reached(self, state: State) -> bool:
        limit = self.max_total_completion_tokens
        return limit > 0 and cast(Usage, state["usage"]).completion_tokens >= limit

    @stop(priority=60)
    async def has_final_env_response(self, state: State) -> bool:
        return state.get("final_env_response") is not None

    def _find_classic_is_completed(self) -> tuple[Callable[..., Any], bool] | None:
        """A subclass's ``is_completed`` override and whether it takes ``messages`` first."""
        if type(self).is_completed is Environment.is_completed:
            return None
        method = cast(Callable[..., Any], self.is_completed)
        return method, "messages" in inspect.signature(method).parameters

    async def _check_stop(self, state: State, messages: Messages | None) -> bool:
        for cond, is_async in self._stop_conditions:
            hit = await cond(state) if is_async else cond(state)
            if hit:
                state["stop_condition"] = cond.__name__
                return True
        return False

    async def _should_stop(self, state: State, messages: Messages | str) -> bool:
        if await self._check_stop(state, None):
            return True
        if self._classic_is_completed is not None:
            override, wants_messages = self._classic_is_completed
            if wants_messages:
                done = await call_maybe_async(override, messages, state)
            else:
                done = await call_maybe_async(override, state)
            if done:
                state["stop_condition"] = state.get("stop_condition") or "is_completed"
                return True
        return False

    # ------------------------------------------------------------------ the loop

    async def get_model_response(self, state: State, prompt: Messages | str) -> ModelResponse:
        """Call the model for this turn (or the oracle), honouring the token budget."""
        from verifiers.clients.oracle import OracleClient

        client = state["client"]
        if isinstance(client, OracleClient):
            message = await self.oracle_response(state)
            return client.respond(message, prompt)
        args: SamplingArgs = state["sampling_args"]
        budget = self.max_total_completion_tokens
        if budget > 0:
            remaining = budget - cast(Usage, state["usage"]).completion_tokens
            current = args.get("max_tokens")
            if current is None or current > remaining:
                args = {**args, "max_tokens": max(remaining, 1)}
        response: ModelResponse = await client.get_response(
            prompt,
            state["model"],
            sampling_args=args,
            tools=self.oai_tools or None,
            message_type=self.message_type,
        )
        return response

    async def rollout(
        self,
        input: Mapping[str, Any],
        client: Client | Any,
        model: str,
        sampling_args: SamplingArgs | None = None,
    ) -> State:
        """Run one rollout (no scoring) and return its state. Cleanup handlers run."""
        from verifiers.clients.base import as_client

        state = await self.init_state(input, as_client(client), model, sampling_args)
        try:
            await self._drive(state)
        finally:
            await self._cleanup(state)
        return state

    async def _drive(self, state: State) -> None:
        """init -> setup -> turns, with errors and the timeout recorded on the state."""
        started = time.perf_counter()
        try:
            if self.timeout_seconds is not None and self.timeout_seconds > 0:
                cm = asyncio.timeout(self.timeout_seconds)
                try:
                    async with cm:
                        await self._loop(state)
                except TimeoutError:
                    if not cm.expired():
                        raise
                    raise _RolloutTimeout from None
            else:
                await self._loop(state)
        except _RolloutTimeout:
            state["stop_condition"] = "timeout"
            state["is_truncated"] = True
            state["timed_out"] = True
        except asyncio.CancelledError:
            raise
        except Exception as e:  # recorded per rollout; the run goes on
            state["error"] = _error_record(e)
            state["stop_condition"] = state.get("stop_condition") or "has_error"
        finally:
            state["timing"]["generation_ms"] = (time.perf_counter() - started) * 1000.0
            state["is_completed"] = True

    async def _loop(self, state: State) -> None:
        new_state = await self.setup_state(state)
        if new_state is not None and new_state is not state:
            state.update(new_state)
        chat = self.message_type == "chat"
        prompt = state["prompt"]
        messages: Any = list(prompt) if chat else str(prompt)
        state["_messages"] = messages
        trajectory: list[TrajectoryStep] = state["trajectory"]
        usage: Usage = state["usage"]
        while True:
            if await self._should_stop(state, messages):
                return
            prompt_len = len(messages)
            try:
                response = await self.get_model_response(state, messages)
            except OverlongPromptError:
                state["prompt_too_long"] = True
                state["is_truncated"] = True
                state["stop_condition"] = "prompt_too_long"
                return
            usage.add(response.usage)
            state["responses"].append(response)
            state["turn"] += 1
            truncated = response.finish_reason == "length"
            if truncated:
                state["is_truncated"] = True
            tokens: StepTokens | None = None
            if response.completion_token_ids is not None and response.prompt_token_ids is not None:
                tokens = {
                    "prompt_ids": response.prompt_token_ids,
                    "completion_ids": response.completion_token_ids,
                    "completion_logprobs": response.completion_logprobs,
                }
            if chat:
                message = response.message
                messages.append(message)
                state["completion"].append(message)
                completion: Any = [message]
            else:
                text = response.content
                messages += text
                state["_messages"] = messages
                state["completion"] += text
                completion = text
            trajectory.append(
                {
                    "prompt_len": prompt_len,
                    "completion": completion,
                    "response": response,
                    "tokens": tokens,
                    "is_truncated": truncated,
                    "extras": {},
                }
            )
            if self.max_seq_len:
                if tokens is not None:
                    seq_len = len(tokens["prompt_ids"]) + len(tokens["completion_ids"])
                else:
                    seq_len = response.usage.prompt_tokens + response.usage.completion_tokens
                if seq_len >= self.max_seq_len:
                    state["prompt_too_long"] = True
                    state["is_truncated"] = True
            if await self._should_stop(state, messages):
                return
            reply = await self.env_response(messages, state)
            new_messages = _unpack_env_response(reply, state)
            if chat:
                messages.extend(new_messages)
                state["completion"].extend(new_messages)
            else:
                messages += new_messages
                state["_messages"] = messages
                state["completion"] += new_messages

    # ------------------------------------------------------------------ scoring and groups

    async def run_rollout(
        self,
        input: Mapping[str, Any],
        client: Client,
        model: str,
        sampling_args: SamplingArgs | None = None,
        *,
        rollout_index: int = 0,
        score: bool = True,
    ) -> State:
        """One complete rollout: generate, score (individual rewards), clean up."""
        state = await self.init_state(
            input, client, model, sampling_args, rollout_index=rollout_index
        )
        try:
            await self._drive(state)
            if score and self.score_rollouts:
                await self._score([state], group=False)
        finally:
            await self._cleanup(state)
        return state

    async def run_group(
        self,
        input: Mapping[str, Any],
        client: Client,
        model: str,
        n: int,
        sampling_args: SamplingArgs | None = None,
        *,
        score: bool = True,
        semaphore: asyncio.Semaphore | None = None,
        first_index: int = 0,
    ) -> list[State]:
        """``n`` rollouts of one example, scored together (group rewards see all of them).

        ``semaphore`` bounds concurrent rollouts (concurrency counts rollouts, not groups).
        The classic call shape ``run_group(group_inputs, client, model, sampling_args)`` (one
        input per rollout) is accepted too and returns the rollouts' JSON records.
        """
        if isinstance(input, list):
            return await self._run_classic_group(input, client, model, n, sampling_args)  # type: ignore[arg-type]
        states = [
            await self.init_state(
                input, client, model, sampling_args, rollout_index=first_index + i
            )
            for i in range(n)
        ]
        await self._run_states(states, score=score, semaphore=semaphore)
        return states

    async def _run_states(
        self, states: list[State], *, score: bool, semaphore: asyncio.Semaphore | None
    ) -> None:
        """Drive the group's rollouts concurrently, score them together, clean up."""

        async def drive(state: State) -> None:
            if semaphore is None:
                await self._drive(state)
            else:
                async with semaphore:
                    await self._drive(state)

        try:
            await asyncio.gather(*(drive(s) for s in states))
            if score and self.score_rollouts:
                await self._score(states, group=True)
        finally:
            await asyncio.gather(*(self._cleanup(s) for s in states))

    async def _run_classic_group(
        self,
        group_inputs: list[Mapping[str, Any]],
        client: Any,
        model: str,
        sampling_args: Any,
        extra: Any,
    ) -> list[Any]:
        """``run_group(group_inputs, client, model, sampling_args, ...)``, the classic shape."""
        from verifiers.clients.base import as_client
        from verifiers.results import state_to_record

        args = sampling_args if isinstance(sampling_args, dict) else extra
        resolved = as_client(client)
        states = [
            await self.init_state(row, resolved, model, args, rollout_index=i)
            for i, row in enumerate(group_inputs)
        ]
        await self._run_states(states, score=True, semaphore=None)
        return [state_to_record(s) for s in states]

    @property
    def has_group_rewards(self) -> bool:
        return bool(getattr(self.rubric, "has_group_rewards", False))

    async def _score(self, states: list[State], *, group: bool) -> None:
        scorable = [s for s in states if s.get("error") is None]
        for s in states:
            s["metrics"]["num_turns"] = float(s["turn"])
            self.add_metrics(s)
        if not scorable:
            return
        started = time.perf_counter()
        try:
            timeout = self._remaining_time(scorable)
            async with asyncio.timeout(timeout):
                if (group and len(scorable) > 1) or self.has_group_rewards:
                    await self.rubric.score_group(scorable)
                else:
                    for s in scorable:
                        await self.rubric.score_rollout(s)
        except TimeoutError:
            for s in scorable:
                s["reward"] = None
                s["error"] = {
                    "type": "TimeoutError",
                    "message": f"scoring did not finish within timeout_seconds={self.timeout_seconds}",
                }
        finally:
            elapsed = (time.perf_counter() - started) * 1000.0
            for s in scorable:
                s["timing"]["scoring_ms"] = elapsed

    def _remaining_time(self, states: Sequence[State]) -> float | None:
        if not self.timeout_seconds:
            return None
        now = time.time()
        start = float(min(s["timing"]["start"] for s in states))
        return max(self.timeout_seconds - (now - start), 0.0)

    def add_metrics(self, state: State) -> None:
        """Hook: environment metrics written into ``state["metrics"]`` before scoring."""

    async def _cleanup(self, state: State) -> None:
        for handler in self._cleanup_handlers:
            try:
                await call_maybe_async(handler, state)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("cleanup handler %s failed", handler.__name__)
        state.pop("_messages", None)

    async def close(self) -> None:
        """Run ``@vf.teardown`` handlers (once per environment)."""
        handlers, self._teardown_handlers = self._teardown_handlers, []
        for handler in handlers:
            try:
                await call_maybe_async(handler)
            except Exception:
                logger.exception("teardown handler %s failed", handler.__name__)

    # ------------------------------------------------------------------ evaluation facades

    async def evaluate(
        self,
        client: Any,
        model: str,
        sampling_args: SamplingArgs | None = None,
        num_examples: int = -1,
        rollouts_per_example: int = 1,
        max_concurrent: int = -1,
        **kwargs: Any,
    ) -> EvalResult:
        """Evaluate on the eval dataset (classic call shape). See :func:`verifiers.evaluate_async`."""
        from verifiers.evaluation import evaluate_async

        return await evaluate_async(
            self,
            client=client,
            model=model,
            sampling_args=sampling_args,
            num_examples=num_examples,
            rollouts_per_example=rollouts_per_example,
            max_concurrent=max_concurrent,
            **kwargs,
        )

    async def generate(
        self,
        inputs: Any,
        client: Any,
        model: str,
        sampling_args: SamplingArgs | None = None,
        max_concurrent: int = -1,
        **kwargs: Any,
    ) -> EvalResult:
        """Roll out and score the given rows (a ``datasets.Dataset`` or a list of dicts with
        ``prompt`` or ``question``, ``answer``, ``info``, ``task``), classic call shape."""
        from verifiers.evaluation import evaluate_async

        return await evaluate_async(
            self,
            client=client,
            model=model,
            inputs=inputs,
            sampling_args=sampling_args,
            max_concurrent=max_concurrent,
            **kwargs,
        )

    def generate_sync(self, inputs: Any, client: Any, model: str, **kwargs: Any) -> EvalResult:
        """Blocking :meth:`generate`."""
        from verifiers.evaluation import evaluate

        return evaluate(self, client=client, model=model, inputs=inputs, **kwargs)

    def format_inputs(self, inputs: Any) -> list[dict[str, Any]]:
        """Caller-given rows formatted like dataset rows (prompt built, ids added)."""
        if isinstance(inputs, list):
            # info dicts of different shapes (rows of several environments) cannot share an
            # Arrow column: they travel as JSON, which _normalise_row decodes
            inputs = [
                {**r, "info": json.dumps(r["info"])} if isinstance(r.get("info"), dict) else r
                for r in inputs
            ]
        return [self._normalise_row(r) for r in self.format_dataset(_to_dataset(inputs)).to_list()]

    def evaluate_sync(self, client: Any, model: str, **kwargs: Any) -> EvalResult:
        """Blocking :meth:`evaluate` (refuses to run inside a running event loop)."""
        from verifiers.evaluation import evaluate

        kwargs.setdefault("num_examples", -1)  # the classic defaults of evaluate()
        kwargs.setdefault("rollouts_per_example", 1)
        return evaluate(self, client=client, model=model, **kwargs)


class _RolloutTimeout(Exception):
    pass


def _error_record(e: BaseException) -> dict[str, Any]:
    return {
        "type": type(e).__name__,
        "message": str(e),
        "traceback": "".join(traceback.format_exception(e)),
    }


def _unpack_env_response(reply: Any, state: State) -> Any:
    """Accept the classic shapes: new messages, ``(messages, state)``, one message, or text."""
    if isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[1], dict):
        new_state = reply[1]
        if new_state is not state:
            state.update(new_state)
        reply = reply[0]
    if reply is None:
        return []
    if isinstance(reply, dict):
        return [reply]
    return reply


def _to_dataset(raw: DatasetLike) -> Dataset:
    from datasets import Dataset

    if callable(raw) and not isinstance(raw, Dataset):
        raw = raw()
    if isinstance(raw, Dataset):
        return raw
    if isinstance(raw, list):
        try:
            return Dataset.from_list(raw)
        except (TypeError, ValueError) as e:  # pyarrow's ArrowTypeError / ArrowInvalid
            raise ConfigError(
                f"the rows cannot form a datasets.Dataset ({type(e).__name__}: {e}); each column "
                "must hold one type in every row (store an 'info' that varies as a JSON string)"
            ) from None
    if isinstance(raw, dict):  # columns, the classic ``generate(inputs={...})`` shape
        lengths = {k: len(v) for k, v in raw.items() if isinstance(v, list)}
        if len(lengths) != len(raw) or len(set(lengths.values())) > 1:
            raise ConfigError(
                "a dict of inputs must map each column name to a list, all of one length; got "
                + ", ".join(f"{k}: {type(v).__name__}" for k, v in raw.items())
            )
        return Dataset.from_dict(raw)
    to_list = getattr(raw, "to_list", None)
    if callable(to_list):  # e.g. an IterableDataset slice or a pandas frame
        return Dataset.from_list(list(to_list()))
    raise ConfigError(
        f"dataset must be a datasets.Dataset, a list of dicts or a dict of columns, not "
        f"{type(raw).__name__}"
    )
