"""The rollout loop: :class:`EnvironmentCore` and :class:`Environment`, the class every
environment subclasses.

The environment owns the rollout loop; subclasses supply hooks:

- ``setup_state(state)``: prepare per-rollout resources (async; may start them as tasks so they
  overlap with the first model call).
- ``env_response(messages, state)``: the environment's turn (``MultiTurnEnv``), returns the new
  messages to append.
- ``@vf.stop`` methods ``(state) -> bool``: extra stop conditions, highest priority first.
- ``@vf.cleanup`` methods ``(state)``: always run after scoring, also on error and cancellation.
- ``@vf.teardown`` methods ``()``: run once by :meth:`close`.
- ``oracle_response(state)``: the message a perfect model sends (used by ``-m oracle``).

One rollout: ``init_state`` -> ``setup_state`` -> loop (model call, stop checks,
``env_response``) -> scoring by the rubric -> cleanup. The history lives in a
:class:`~verifiers.envs.transcript.Transcript`: appended, never rebuilt. The datasets live in
:class:`~verifiers.envs._datasets.DatasetSplits`.

This module imports nothing from the classic room or the evaluation driver. The classic
(0.3.x) call shapes (``evaluate``/``generate`` and their ``_sync`` forms, the classic
constructor keywords, an ``is_completed`` override, the list form of ``run_group``, the old
``env_response`` return shapes, ``get_model_response``) are in
:class:`verifiers.classic.env_mixin.ClassicEnvironmentMixin`, which ``import verifiers``
registers (:mod:`verifiers.extension_points`) as a base of :class:`Environment`, between it
and :class:`EnvironmentCore`: the methods below marked "hook for the rooms above" are what it
overrides. Hooks the loop awaits (``setup_state``, ``env_response``, ``oracle_response``)
must be ``async def``; ``@vf.stop``, ``@vf.cleanup`` and ``@vf.teardown`` methods may be
either.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import traceback
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from verifiers.decorators import cleanup as cleanup_hook
from verifiers.decorators import discover, stop
from verifiers.envs._datasets import DatasetLike, DatasetSplits
from verifiers.envs._model_calls import ModelCalls
from verifiers.envs.transcript import new_transcript, render_text_rollout
from verifiers.errors import ConfigError, OverlongPromptError
from verifiers.extension_points import apply_environment_extensions, forwarder
from verifiers.messages import as_message
from verifiers.types import (
    Message,
    Messages,
    MessageType,
    ModelResponse,
    SamplingArgs,
    State,
    Usage,
    state_usage,
)
from verifiers.utils.async_utils import (
    call_maybe_async,
    is_async_callable,
    maybe_call_with_named_args,
    takes_named_context,
)
from verifiers.utils.tool_schema import as_openai_tool

if TYPE_CHECKING:
    from datasets import Dataset

    from verifiers.clients.base import Client
    from verifiers.parsers.parser import Parser
    from verifiers.rubrics.rubric import Rubric

__all__ = ["Environment", "EnvironmentCore"]

logger = logging.getLogger("verifiers.envs")


#: errors that are the model's own output (an empty reply, tool-call arguments that do not
#: parse): the rollout is scored as 0.3.x scores it (usually 0.0, a true verdict on what the
#: model did), with the error kept on the record. Any other error (the endpoint, a sandbox, a
#: tool, a timeout) leaves the rollout unscored (reward None): not the model's answer.
MODEL_OUTPUT_ERRORS = frozenset({"EmptyModelResponseError", "ToolParseError"})


def _is_scorable(state: State) -> bool:
    error = state.get("error")
    if error is None:
        return True
    kind = error.get("type") if isinstance(error, dict) else type(error).__name__
    return kind in MODEL_OUTPUT_ERRORS


class EnvironmentCore(DatasetSplits, ModelCalls):
    """The rollout loop and its hooks (the core of :class:`Environment`; subclass that).

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
        self.logger = logging.getLogger(f"verifiers.envs.{type(self).__name__}")
        if message_type not in ("chat", "completion"):
            raise ConfigError(f"message_type must be 'chat' or 'completion', not {message_type!r}")
        if message_type == "completion" and (system_prompt or few_shot):
            raise ConfigError(
                "system_prompt and few_shot apply to chat prompts only; with "
                "message_type='completion' put the instructions into the dataset's prompt text"
            )
        if dataset is None and eval_dataset is None:
            raise ConfigError(
                f"Either dataset or eval_dataset must be provided: {type(self).__name__} needs "
                "rows (columns: 'prompt' or 'question', optional 'answer', 'info', 'task')."
            )
        from verifiers.parsers.parser import Parser as _Parser
        from verifiers.rubrics.rubric import Rubric as _Rubric

        self.parser: Parser = parser if parser is not None else _Parser()
        self.rubric: Rubric = rubric if rubric is not None else _Rubric(parser=self.parser)
        if type(self.parser) is not type(getattr(self.rubric, "parser", self.parser)):
            self.logger.warning(
                "The parser and rubric parser are different. This may cause unexpected behavior."
            )
        self.system_prompt = system_prompt
        self.few_shot = list(few_shot or [])
        self.sampling_args: SamplingArgs = dict(sampling_args or {})
        self.message_type: MessageType = message_type
        self.oai_tools: list[dict[str, Any]] = [as_openai_tool(t) for t in (tool_defs or [])]
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
        self.pass_threshold: float = float(kwargs.pop("pass_threshold", 0.5))
        self.map_kwargs: dict[str, Any] = dict(kwargs.pop("map_kwargs", None) or {})
        # a subclass may assign self.dataset / self.eval_dataset before calling this and pass
        # them on (0.3.x environments do); as in 0.3.x, what is passed here is what counts
        self.__dict__.pop("_preset_splits", None)
        self._raw: dict[str, DatasetLike | None] = {"train": dataset, "eval": eval_dataset}
        self._formatted: dict[str, Dataset] = {}
        self._rows: dict[str, list[dict[str, Any]]] = {}
        # bound methods in the order they run (the classic attribute), and which are async
        self._stop_conditions = discover(self, "stop")
        self._stop_is_async = [is_async_callable(m) for m in self._stop_conditions]
        self._cleanup_handlers = discover(self, "cleanup")
        self._teardown_handlers = discover(self, "teardown")
        self._init_extra(kwargs)

    def _init_extra(self, kwargs: dict[str, Any]) -> None:
        """Hook for the rooms above: the end of ``__init__``, with the keyword arguments it
        does not take (the core takes none)."""
        if kwargs:
            raise ConfigError(
                f"{type(self).__name__} got unexpected keyword arguments: {', '.join(sorted(kwargs))}"
            )

    # ------------------------------------------------------------------ trainer setters

    def set_kwargs(self, **kwargs: Any) -> None:
        """Set attributes (``set_<name>`` methods where the environment has one), as trainers
        pass ``extra_env_kwargs``."""
        for key, value in kwargs.items():
            setter = getattr(self, f"set_{key}", None)
            if callable(setter):
                setter(value)
            else:
                setattr(self, key, value)

    def set_max_seq_len(self, max_seq_len: int | None) -> None:
        self.max_seq_len = max_seq_len

    def set_score_rollouts(self, score_rollouts: bool) -> None:
        self.score_rollouts = score_rollouts

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
        if isinstance(prompt, list):  # message objects: read as m["role"] or m.role
            prompt = [as_message(m) for m in prompt]
        args = {**self.sampling_args, **(sampling_args or {})}
        usage = Usage()
        state = State(
            prompt=prompt,
            completion=[] if self.message_type == "chat" else "",
            answer=input.get("answer", ""),
            task=input.get("task", "default"),
            info=input.get("info") or {},
            example_id=input.get("example_id", 0),
            rollout_index=rollout_index,
            trajectory=[],
            trajectory_id=uuid.uuid4().hex,
            responses=[],
            turn=0,
            usage=usage,
            usage_tracker=usage,
            timing={
                "start": time.time(),
                "generation_ms": 0.0,
                "scoring_ms": 0.0,
                "setup_ms": 0.0,
                "model_ms": 0.0,
                "env_ms": 0.0,
            },
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
            # the row itself (0.3.x's ``state["input"]``): its other columns reach reward
            # functions that name them
            input=dict(input),
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

    # the built-ins other than has_error run at the default priority, ordered by name among the
    # environment's own @vf.stop methods (as in the classic API): an environment's condition
    # named before "max_turns_reached" sees the last turn and can still score it
    @stop
    async def prompt_too_long(self, state: State) -> bool:
        return bool(state.get("prompt_too_long"))

    @stop
    async def max_turns_reached(self, state: State) -> bool:
        if self.max_turns <= 0:
            return False
        turns = state.get("turn")
        if turns is None:  # a state built by hand: count its trajectory, as 0.3.x does
            turns = len(state.get("trajectory") or [])
        return bool(turns >= self.max_turns)

    @stop
    async def max_total_completion_tokens_reached(self, state: State) -> bool:
        limit = self.max_total_completion_tokens
        return limit > 0 and state_usage(state).completion_tokens >= limit

    @stop
    async def has_final_env_response(self, state: State) -> bool:
        return state.get("final_env_response") is not None

    async def _check_stop(self, state: State, messages: Messages | None) -> bool:
        for cond, is_async in zip(self._stop_conditions, self._stop_is_async, strict=True):
            hit = await cond(state) if is_async else cond(state)
            if hit:
                state["stop_condition"] = cond.__name__
                return True
        return False

    async def _should_stop(self, state: State, messages: Messages | str) -> bool:
        """Hook for the rooms above: whether the rollout stops now."""
        return await self._check_stop(state, None)

    def _checks_stop_after_env(self, state: State) -> bool:
        """Hook for the rooms above: whether the stop conditions are checked again right
        after the environment's turn (as 0.3.x: only when it set ``final_env_response``)."""
        return state.get("final_env_response") is not None

    def _env_messages(self, reply: Any, state: State) -> Messages | str:
        """Hook for the rooms above: the new messages of an ``env_response`` reply (a list
        of messages, or text in completion mode)."""
        if isinstance(reply, list):
            return [as_message(m) for m in reply]
        return reply  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ the loop

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
                        await self._loop_or_custom(state)
                except TimeoutError:
                    if not cm.expired():
                        raise
                    raise _RolloutTimeout from None
            else:
                await self._loop_or_custom(state)
        except _RolloutTimeout:
            state["stop_condition"] = "timeout_reached"
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
            if self.message_type == "completion":
                render_text_rollout(state)

    async def _loop_or_custom(self, state: State) -> None:
        """The rollout loop, or a subclass's own ``rollout()`` (classic environments may
        replace the whole loop): its state then replaces this one's contents."""
        custom = type(self).rollout is not EnvironmentCore.rollout
        if not custom or _CUSTOM_ROLLOUT.get():
            await self._loop(state)
            return
        row = {k: state.get(k) for k in ("prompt", "answer", "info", "task", "example_id")}
        token = _CUSTOM_ROLLOUT.set(True)
        try:
            result = await self.rollout(
                row, state["client"], state["model"], state["sampling_args"]
            )
        finally:
            _CUSTOM_ROLLOUT.reset(token)
        if result is not state:
            keep = {k: state[k] for k in ("rollout_index", "timing") if k in state}
            state.clear()
            state.update(result)
            for k, v in keep.items():
                state.setdefault(k, v)
        state.setdefault("turn", len(state.get("trajectory") or []))
        state.setdefault("metrics", {})
        error = state.get("error")
        if isinstance(error, BaseException):  # a classic loop keeps the exception itself
            state["error"] = _error_record(error)
            state["stop_condition"] = state.get("stop_condition") or "has_error"

    async def _loop(self, state: State) -> None:
        timing = state["timing"]
        clock = time.perf_counter
        t0 = clock()
        new_state = await self.setup_state(state)
        if new_state is not None and new_state is not state:
            state.update(new_state)
        timing["setup_ms"] += (clock() - t0) * 1000.0
        transcript = new_transcript(state, self.message_type)
        if await self._should_stop(state, transcript.prompt):
            return
        while True:
            # a point where a timeout or cancellation can land even when the client answers
            # without suspending (an in-process or scripted model)
            await asyncio.sleep(0)
            prompt_len = len(transcript)
            sent = (
                transcript.prompt if isinstance(transcript.prompt, str) else list(transcript.prompt)
            )
            t0 = clock()
            try:
                response = await self._model_turn(state, transcript.prompt)
            except OverlongPromptError:
                state["prompt_too_long"] = True
                state["is_truncated"] = True
                state["stop_condition"] = "prompt_too_long"
                return
            finally:
                timing["model_ms"] += (clock() - t0) * 1000.0
            completion = transcript.add_response(response)
            self._record_step(state, response, prompt_len, completion, sent)
            await self.add_model_response(state, transcript.prompt, response)
            if await self._should_stop(state, transcript.prompt):
                return
            t0 = clock()
            # completion mode hands env_response the text, as the classic API did
            reply = await self.env_response(transcript.prompt, state)  # type: ignore[arg-type]
            transcript.add_env(self._env_messages(reply, state))
            timing["env_ms"] += (clock() - t0) * 1000.0
            # as in 0.3.x, the stop conditions are checked again after the model's next
            # message, except when the environment ended the rollout (final_env_response)
            if self._checks_stop_after_env(state) and await self._should_stop(
                state, transcript.prompt
            ):
                return

    async def add_model_response(
        self, state: State, prompt_messages: Messages | str, response: ModelResponse
    ) -> None:
        """Hook (0.3.x's name), awaited after each model call once the call is recorded
        (``state["trajectory"][-1]`` is its step): an override may set intermediate rewards
        or metadata on the step. The base implementation does nothing more."""

    # ------------------------------------------------------------------ scoring and groups

    async def run_rollout(
        self,
        input: Mapping[str, Any],
        client: Client | Any,
        model: str,
        sampling_args: SamplingArgs | None = None,
        *,
        rollout_index: int = 0,
        score: bool = True,
    ) -> State:
        """One complete rollout: generate, score (individual rewards), clean up; returns its
        :class:`State`."""
        state = await self.init_state(
            input, client, model, sampling_args, rollout_index=rollout_index
        )
        await self._run_states([state], score=score, semaphore=None, group=False)
        return state

    async def run_group(
        self,
        input: Mapping[str, Any],
        client: Client | Any,
        model: str,
        n: int,
        sampling_args: SamplingArgs | None = None,
        *,
        score: bool = True,
        semaphore: asyncio.Semaphore | None = None,
        first_index: int = 0,
    ) -> list[State]:
        """``n`` rollouts of one example, scored together (group rewards see all of them);
        returns their states. ``semaphore`` bounds concurrent rollouts (concurrency counts
        rollouts, not groups)."""
        states = [
            await self.init_state(
                input, client, model, sampling_args, rollout_index=first_index + i
            )
            for i in range(self._group_size(n))
        ]
        await self._run_states(states, score=score, semaphore=semaphore)
        return states

    @staticmethod
    def _group_size(n: object) -> int:
        """``n`` of ``run_group(input, client, model, n)``, or a clear error."""
        if isinstance(n, int) and not isinstance(n, bool):
            return n
        raise ConfigError(
            f"run_group(input, client, model, n, ...) takes the number of rollouts n, not "
            f"{type(n).__name__}; pass a list of inputs (one per rollout) for the classic shape"
        )

    async def _run_states(
        self,
        states: list[State],
        *,
        score: bool,
        semaphore: asyncio.Semaphore | None,
        group: bool = True,
    ) -> None:
        """Drive the group's rollouts concurrently, score them together, clean up."""

        async def drive(state: State) -> None:
            if semaphore is None:
                await self._drive(state)
            else:
                async with semaphore:
                    await self._drive(state)

        try:
            if len(states) == 1:
                await drive(states[0])
            else:
                await asyncio.gather(*(drive(s) for s in states))
            if score and self.score_rollouts:
                await self._score(states, group=group)
        finally:
            if len(states) == 1:
                await self._cleanup(states[0])
            else:
                await asyncio.gather(*(self._cleanup(s) for s in states))

    @property
    def has_group_rewards(self) -> bool:
        return bool(getattr(self.rubric, "has_group_rewards", False))

    #: whether rollouts report the ``num_turns`` metric (model calls), as 0.3.x's multi-turn
    #: environments do (``MultiTurnEnv`` and its subclasses; not a bare ``Environment``)
    num_turns_metric: bool = False

    async def _score(self, states: list[State], *, group: bool) -> None:
        scorable = [s for s in states if _is_scorable(s)]
        for s in states:
            if self.num_turns_metric:
                s["metrics"]["num_turns"] = float(s["turn"])
            self.add_metrics(s)
        if not scorable:
            return
        started = time.perf_counter()
        try:
            timeout = self._remaining_time(scorable)
            async with asyncio.timeout(timeout):
                # a group's rollouts are scored with score_group, one alone with score_rollout
                # (as 0.3.x: a rubric overriding only one of them is called the same way)
                if group or self.has_group_rewards:
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

    @cleanup_hook(priority=100)
    async def render_state(self, state: State) -> None:
        """Runs first among the cleanup handlers: a text rollout's prompt and completion are
        in their message form (the rollout loop renders them before scoring already)."""
        if self.message_type == "completion":
            render_text_rollout(state)

    async def cleanup(self, state: State) -> None:
        """Run the ``@vf.cleanup`` handlers for one rollout (highest priority first); a failing
        handler is logged and the others still run."""
        await self._cleanup(state)

    async def _cleanup(self, state: State) -> None:
        for handler in self._cleanup_handlers:
            try:
                if takes_named_context(handler):
                    # classic: the handler names what it wants (state, env, task, resources)
                    await maybe_call_with_named_args(
                        handler, state=state, env=self, task=state.get("task"), resources=None
                    )
                else:
                    await call_maybe_async(handler, state)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("cleanup handler %s failed", handler.__name__)
        state.pop("_messages", None)

    async def close(self) -> None:
        """Run ``@vf.teardown`` handlers (once per environment)."""
        await self._teardown()

    async def _teardown(self) -> None:
        """Run the ``@vf.teardown`` handlers, highest priority first (the classic name of
        :meth:`close`; the handlers run once)."""
        handlers = list(self._teardown_handlers)
        self._teardown_handlers = []
        for handler in handlers:
            try:
                await call_maybe_async(handler)
            except Exception:
                logger.exception("teardown handler %s failed", handler.__name__)


_CUSTOM_ROLLOUT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "verifiers_custom_rollout", default=False
)


class _RolloutTimeout(Exception):
    pass


def _error_record(e: BaseException) -> dict[str, Any]:
    return {
        "type": type(e).__name__,
        "message": str(e),
        "traceback": "".join(traceback.format_exception(e)),
    }


class Environment(EnvironmentCore):
    """Base class of every environment: :class:`EnvironmentCore`'s rollout loop, plus what the
    rooms above the core register (:mod:`verifiers.extension_points`; ``import verifiers``
    adds the classic 0.3.x methods, :class:`verifiers.classic.env_mixin.ClassicEnvironmentMixin`).
    """


apply_environment_extensions(Environment)

# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
__getattr__ = forwarder(__name__)
