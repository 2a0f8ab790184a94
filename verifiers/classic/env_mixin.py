"""The classic ``verifiers`` (0.3.x) call shapes of :class:`~verifiers.Environment`.

Everything an environment written against the classic API calls or overrides, and which the
rollout loop itself does not need, lives here, in :class:`ClassicEnvironmentMixin`. ``import
verifiers`` registers it (:mod:`verifiers.classic.install`) as a base of
:class:`verifiers.envs.environment.Environment`, between it and ``EnvironmentCore``; it
overrides the core's hooks (``_init_extra``, ``init_state``, ``_should_stop``,
``_env_messages``, ``_model_turn``, ``_send``, ``_rollout_tools``, ``run_rollout``,
``run_group``) and reaches the core through ``super()``:

- the evaluation wrappers ``evaluate`` / ``generate`` (async) and ``evaluate_sync`` /
  ``generate_sync`` (blocking), which hand over to :func:`verifiers.evaluate_async`;
- constructor keywords the class does not take, kept as attributes (as 0.3.x does);
- a subclass's ``is_completed`` override (``(messages, state)`` or ``(state)``), honoured
  after the ``@vf.stop`` conditions;
- ``run_group(group_inputs, client, model, sampling_args)``: one input per rollout, returning
  the rollouts' JSON records;
- the shapes an ``env_response`` may return (new messages, ``(messages, state)``, one message,
  text, ``None``);
- per-rollout tools: ``state["tool_defs"]`` set by the environment (say in ``setup_state``), or
  the row's ``info["tool_defs"]``, replaces the environment's tools for that rollout;
- ``get_model_response`` (a ``vf.Response``; an override is what the loop calls), classic
  clients (``verifiers.clients.Client``: ``vf.Tool`` records, the state passed along),
  ``tool_defs`` as ``vf.Tool`` records, ``get_state_usage``, ``provides_advantages``,
  ``requires_group_rollouts``, ``_get_eval_inputs``.

The evaluation driver is imported only when one of the wrappers is called.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from verifiers.classic.model_calls import ClassicModelCalls
from verifiers.classic.timing import classic_timing
from verifiers.classic.types import RolloutOutput
from verifiers.errors import ConfigError
from verifiers.messages import as_message
from verifiers.types import Messages, SamplingArgs, State
from verifiers.utils.async_utils import call_maybe_async
from verifiers.utils.tool_schema import as_openai_tool

if TYPE_CHECKING:
    from verifiers.clients.base import Client
    from verifiers.envs.environment import Environment
    from verifiers.evaluation import EvalResult

__all__ = ["ClassicEnvironment", "ClassicEnvironmentMixin", "unpack_env_response"]


ClassicIsCompleted = tuple[Callable[..., Any], bool]
T = TypeVar("T")


def _client_config(client: Any) -> Any:
    """The :class:`~verifiers.ClientConfig` an env server needs (it makes its own client)."""
    from verifiers.classic.models import ClientConfig
    from verifiers.utils.client_utils import resolve_client_config

    if isinstance(client, ClientConfig | dict):
        return resolve_client_config(client)
    # the first clause is 0.3.1's message word for word (code matches on it)
    raise ConfigError(
        f"client must be have type ClientConfig: an env server needs a verifiers.ClientConfig "
        f"as client (it creates its own model client from it), not {type(client).__name__}"
    )


class ClassicEnvironmentMixin(ClassicModelCalls):
    """The classic call shapes, a base of :class:`~verifiers.Environment`."""

    _classic_is_completed: ClassicIsCompleted | None = None

    # ------------------------------------------------------------------ constructor keywords

    def _init_extra(self, kwargs: dict[str, Any]) -> None:
        if "oai_tools" in kwargs:
            raise ConfigError(
                "`oai_tools` is no longer supported (as in verifiers 0.3.1): pass the tools as "
                "tool_defs=[{'name': ..., 'description': ..., 'parameters': {...}}] (vf.Tool "
                "records or OpenAI function schemas)"
            )
        self._classic_is_completed = self._find_classic_is_completed()
        self._store_extra_kwargs(kwargs)

    def _store_extra_kwargs(self, kwargs: Mapping[str, Any]) -> None:
        """Keep constructor keywords the class does not take as attributes, as the classic API
        does (environments pass their own options through ``**kwargs`` and read them back as
        ``self.<name>``). Their names are logged at debug level, so that a misspelt keyword can
        be found."""
        if not kwargs:
            return
        log = getattr(self, "logger", None) or logging.getLogger("verifiers.envs")
        log.debug(
            "%s keeps keyword argument(s) it does not take as attributes: %s",
            type(self).__name__,
            ", ".join(sorted(kwargs)),
        )
        for name, value in kwargs.items():
            try:
                setattr(self, name, value)
            except AttributeError:  # a read-only property of the class
                log.warning(
                    "%s: keyword argument %r names a read-only attribute; ignored",
                    type(self).__name__,
                    name,
                )

    # ------------------------------------------------------------------ is_completed

    def _find_classic_is_completed(self) -> ClassicIsCompleted | None:
        """A subclass's ``is_completed`` override and whether it takes ``messages`` first."""
        from verifiers.envs.environment import EnvironmentCore

        if type(self).is_completed is EnvironmentCore.is_completed:
            return None
        method: Callable[..., Any] = self.is_completed
        return method, "messages" in inspect.signature(method).parameters

    async def _should_stop(self, state: State, messages: Messages | str) -> bool:
        """The ``@vf.stop`` conditions, then a subclass's ``is_completed`` override."""
        if await super()._should_stop(state, messages):
            return True
        found = self._classic_is_completed
        return found is not None and await self._classic_is_completed_hit(found, state, messages)

    def _checks_stop_after_env(self, state: State) -> bool:
        # an is_completed override (the older API) is also asked right after the environment
        return super()._checks_stop_after_env(state) or self._classic_is_completed is not None

    def _env_messages(self, reply: Any, state: State) -> Messages | str:
        timing = classic_timing(state)
        if timing is not None:
            timing.add_env_span()
        return cast("Messages | str", unpack_env_response(reply, state))

    async def _classic_is_completed_hit(
        self, found: ClassicIsCompleted, state: State, messages: Messages | str
    ) -> bool:
        """Ask the override; when it says done, record ``is_completed`` as the stop condition
        (unless a condition was already recorded)."""
        override, wants_messages = found
        if wants_messages:
            done = await call_maybe_async(override, messages, state)
        else:
            done = await call_maybe_async(override, state)
        if done:
            state["stop_condition"] = state.get("stop_condition") or "is_completed"
            return True
        return False

    async def _render_stop(
        self, state: State, condition: Callable[..., Any], **kwargs: Any
    ) -> bool:
        """Evaluate one stop condition as the classic loop does: when it holds, mark the state
        completed (``is_completed``, ``is_truncated`` when any step was truncated) and record
        the condition's name in ``state["stop_condition"]``; a rollout stopped by ``has_error``
        logs the error's causal chain at error level."""
        from verifiers.utils.async_utils import maybe_call_with_named_args
        from verifiers.utils.error_utils import ErrorChain

        if not await maybe_call_with_named_args(condition, state=state, env=self, **kwargs):
            return False
        state["is_completed"] = True
        steps = state.get("trajectory") or []
        state["is_truncated"] = bool(state.get("is_truncated")) or any(
            isinstance(step, Mapping) and bool(step.get("is_truncated")) for step in steps
        )
        name = getattr(condition, "__name__", type(condition).__name__)
        state["stop_condition"] = name
        error = state.get("error")
        if name == "has_error" and isinstance(error, BaseException):
            log = getattr(self, "logger", None) or logging.getLogger("verifiers.envs")
            log.error(f"Aborted rollout due to {ErrorChain(error)!r}")
        return True

    # ------------------------------------------------------------------ init_state

    async def init_state(
        self,
        input: Mapping[str, Any],
        client: Client,
        model: str,
        sampling_args: SamplingArgs | None = None,
        *,
        rollout_index: int = 0,
    ) -> State:
        row, payload = self._classic_rollout_input(input)
        state = await super().init_state(
            row, client, model, sampling_args, rollout_index=rollout_index
        )
        self._classic_init_state(state, row, payload)
        classic_timing(state)
        return state

    def _classic_rollout_input(
        self, row: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any], dict[str, Any] | None]:
        """The row a rollout starts from, read as 0.3.x reads it: a ``task`` holding a
        serialised JSON object (a worker's task payload) is decoded and its fields replace
        the row's; ``info['oai_tools']`` is refused (0.3.1 no longer takes it). Returns the
        row and the decoded payload (``None`` when the task is a plain name)."""
        payload: dict[str, Any] | None = None
        task = row.get("task")
        if isinstance(task, str) and task.lstrip().startswith("{"):
            import json

            try:
                decoded = json.loads(task)
            except json.JSONDecodeError as e:
                raise ConfigError(
                    f"the row's task {task!r:.80} starts like a JSON task payload but is not "
                    f"valid JSON ({e}); use a plain task name or a JSON object"
                ) from e
            if isinstance(decoded, dict):
                payload = decoded
                row = {**row, **decoded, "task": decoded}
        info = row.get("info")
        if isinstance(info, Mapping) and "oai_tools" in info:
            raise ConfigError(
                "info['oai_tools'] is no longer supported (as in verifiers 0.3.1): put the "
                "row's tools in info['tool_defs'] as [{'name': ..., 'description': ..., "
                "'parameters': {...}}]"
            )
        return row, payload

    def _classic_init_state(
        self, state: State, row: Mapping[str, Any], payload: dict[str, Any] | None
    ) -> None:
        """The classic keys of a fresh state: the decoded task payload's row in
        ``state["input"]``, and the row's ``info['tool_defs']`` as ``vf.Tool`` records in
        ``state["tool_defs"]`` (the tools this rollout offers)."""
        if payload is not None:
            state["input"] = {k: v for k, v in row.items() if k != "task"}
        info = row.get("info")
        defs = info.get("tool_defs") if isinstance(info, Mapping) else None
        if defs is None:
            return
        if not isinstance(defs, Sequence) or isinstance(defs, str | bytes):
            raise ConfigError(
                f"info['tool_defs'] must be a list of tool definitions, not {type(defs).__name__}"
            )
        from verifiers.classic.models import Tool

        tools = []
        for definition in defs:
            fn = as_openai_tool(definition)["function"]
            tools.append(
                Tool(
                    name=fn["name"],
                    description=fn.get("description") or "",
                    parameters=fn.get("parameters") or {},
                    strict=fn.get("strict"),
                )
            )
        state["tool_defs"] = tools

    # ------------------------------------------------------------------ run_rollout / run_group

    async def run_rollout(  # type: ignore[override]
        self,
        input: Mapping[str, Any],
        client: Client | Any,
        model: str,
        sampling_args: SamplingArgs | None = None,
        max_retries: int | None = None,
        state_columns: list[str] | None = None,
        env_client: Any = None,
        *,
        rollout_index: int = 0,
        score: bool = True,
    ) -> Any:
        """One complete rollout (see ``EnvironmentCore.run_rollout``); returns its State.

        The classic (0.3.x) call shape, as trainers such as prime-rl use it, returns the
        JSON-safe :class:`RolloutOutput` instead: ``run_rollout(input,
        client=ClientConfig(...), model=..., sampling_args=..., max_retries=...,
        state_columns=[...], env_client=...)``. It is recognised by any of ``max_retries``,
        ``state_columns`` or ``env_client`` being given, a :class:`~verifiers.ClientConfig`
        as ``client``, or an env client attached to the environment (``env.env_client``).
        ``env_client`` (a :class:`verifiers.serve.ZMQEnvClient`) runs the rollout in its env
        server; ``max_retries`` retries a rollout that failed on infrastructure
        (:class:`~verifiers.InfraError`, :class:`~verifiers.InvalidModelResponseError`)."""
        if self._is_classic_call(client, max_retries, state_columns, env_client):
            return await self._classic_run_rollout(
                input, client, model, sampling_args, max_retries or 0, state_columns, env_client
            )
        return await super().run_rollout(
            input, client, model, sampling_args, rollout_index=rollout_index, score=score
        )

    async def run_group(  # type: ignore[override]
        self,
        input: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        client: Client | Any = None,
        model: str | None = None,
        *args: Any,
        group_inputs: Sequence[Mapping[str, Any]] | None = None,
        n: Any = None,
        sampling_args: SamplingArgs | None = None,
        max_retries: int | None = None,
        state_columns: list[str] | None = None,
        env_client: Any = None,
        **kwargs: Any,
    ) -> Any:
        """``run_group(input, client, model, n, sampling_args)``: ``n`` rollouts of one
        example, returning their states (``EnvironmentCore.run_group``).

        The classic call shape ``run_group(group_inputs, client, model, sampling_args,
        max_retries=0, state_columns=None, env_client=None)`` (a list, one input per rollout;
        ``client`` may be a :class:`~verifiers.ClientConfig`) returns the rollouts'
        :class:`RolloutOutput` records, as prime-rl reads them; with ``env_client`` the group
        runs in that env server."""
        if group_inputs is not None:
            input = group_inputs
        if client is None or model is None or input is None:
            raise ConfigError(
                "run_group needs the inputs, a client and a model: run_group(input, client, "
                "model, n, ...) or run_group(group_inputs, client, model, sampling_args, ...)"
            )
        if isinstance(input, list):
            names = ("sampling_args", "max_retries", "state_columns", "env_client")
            if len(args) > len(names):
                raise ConfigError(
                    f"run_group(group_inputs, client, model, ...) takes at most {len(names)} "
                    f"more positional arguments ({', '.join(names)}), got {len(args)}"
                )
            given = dict(zip(names, args, strict=False))
            if n is not None and not isinstance(n, int):
                given.setdefault("sampling_args", n)
            return await self._classic_run_group(
                input,
                client,
                model,
                given.get("sampling_args", sampling_args),
                int(given.get("max_retries", max_retries) or 0),
                given.get("state_columns", state_columns),
                given.get("env_client", env_client),
            )
        if len(args) > 2:
            raise ConfigError(
                "run_group(input, client, model, n, sampling_args) takes at most 2 more "
                f"positional arguments, got {len(args)}"
            )
        if args:
            n = args[0]
        if len(args) > 1:
            sampling_args = args[1]
        return await super().run_group(
            cast("Mapping[str, Any]", input), client, model, n, sampling_args, **kwargs
        )

    #: an env server's client (:class:`verifiers.serve.ZMQEnvClient`); when set, classic
    #: ``run_rollout``/``run_group`` calls run in that server
    env_client: Any = None
    #: first wait (seconds) before retrying a rollout under ``max_retries`` (doubles, up to 60)
    retry_initial_wait: float = 1.0

    def _is_classic_call(
        self, client: Any, max_retries: Any, state_columns: Any, env_client: Any
    ) -> bool:
        from verifiers.classic.models import ClientConfig

        return (
            max_retries is not None
            or state_columns is not None
            or env_client is not None
            or self.env_client is not None
            or isinstance(client, ClientConfig)
        )

    def _resolve_client(self, client: Any) -> Client:
        """A :class:`~verifiers.ClientConfig` as a client (one per resolved config, reused
        for every later rollout); anything else as :func:`~verifiers.clients.base.as_client`
        takes it."""
        from verifiers.classic.models import ClientConfig
        from verifiers.clients.base import as_client

        if isinstance(client, ClientConfig):
            cache = self.__dict__.get("_client_cache")
            if cache is None:
                from verifiers.utils.client_utils import ClientCache

                cache = self.__dict__["_client_cache"] = ClientCache()
            return cache.get(client)
        return as_client(client)

    @staticmethod
    def _classic_input(row: Mapping[str, Any]) -> dict[str, Any]:
        from verifiers.envs._datasets import normalise_row

        return normalise_row(dict(row))

    async def _classic_run_rollout(
        self,
        input: Mapping[str, Any],
        client: Any,
        model: str,
        sampling_args: SamplingArgs | None,
        max_retries: int,
        state_columns: list[str] | None,
        env_client: Any,
    ) -> RolloutOutput:
        """``run_rollout`` in the classic shape: in the env server when there is one, else
        here, retried on infrastructure errors; returns the rollout's output record."""
        env_client = env_client if env_client is not None else self.env_client
        if env_client is not None:
            return cast(
                "RolloutOutput",
                await env_client.run_rollout(
                    dict(input),
                    _client_config(client),
                    model,
                    dict(sampling_args or {}),
                    max_retries,
                    state_columns,
                ),
            )
        from verifiers.utils.save_utils import state_to_output

        resolved = self._resolve_client(client)
        row = self._classic_input(input)

        async def attempt() -> State:
            state = await self.init_state(row, resolved, model, sampling_args)
            await self._run_states([state], score=True, semaphore=None, group=False)
            return state

        state = await self._with_retries(attempt, max_retries)
        return state_to_output(state, state_columns)

    async def _classic_run_group(
        self,
        group_inputs: Sequence[Mapping[str, Any]],
        client: Any,
        model: str,
        sampling_args: SamplingArgs | None,
        max_retries: int,
        state_columns: list[str] | None,
        env_client: Any,
    ) -> list[RolloutOutput]:
        """``run_group(group_inputs, ...)``: one input per rollout, scored together; returns
        the rollouts' output records (run in the env server when there is one)."""
        env_client = env_client if env_client is not None else self.env_client
        if env_client is not None:
            return cast(
                "list[RolloutOutput]",
                await env_client.run_group(
                    [dict(r) for r in group_inputs],
                    _client_config(client),
                    model,
                    dict(sampling_args or {}),
                    max_retries,
                    state_columns,
                ),
            )
        from verifiers.utils.save_utils import state_to_output

        resolved = self._resolve_client(client)
        rows = [self._classic_input(r) for r in group_inputs]

        async def attempt() -> list[State]:
            states = [
                await self.init_state(row, resolved, model, sampling_args, rollout_index=i)
                for i, row in enumerate(rows)
            ]
            await self._run_states(states, score=True, semaphore=None)
            return states

        states = await self._with_retries(attempt, max_retries)
        return [state_to_output(s, state_columns) for s in states]

    async def _with_retries(self, attempt: Callable[[], Awaitable[T]], max_retries: int) -> T:
        from verifiers.errors import InfraError, InvalidModelResponseError
        from verifiers.utils.async_utils import maybe_retry

        run = maybe_retry(
            attempt,
            max_retries=max(int(max_retries), 0),
            initial=self.retry_initial_wait,
            error_types=(InfraError, InvalidModelResponseError),
        )
        return await run()

    # ------------------------------------------------------------------ evaluation wrappers

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
        """Evaluate on the eval dataset (classic call shape and defaults: every row, once).
        See :func:`verifiers.evaluate_async`. A call only 0.3.x's runner serves (a
        ``vf.ClientConfig`` as the client, ``results_path=``, ...) runs :meth:`generate` on
        0.3.x's eval inputs, as 0.3.x does, and returns its ``GenerateOutputs`` dict."""
        from verifiers.classic.generate import wants_classic_generate

        if wants_classic_generate(self, client, kwargs):
            shuffle = bool(kwargs.pop("shuffle", False))
            seed = kwargs.pop("shuffle_seed", None)
            seed = 0 if shuffle and seed is None else seed
            inputs = self._get_eval_inputs(  # type: ignore[attr-defined]  # the model-call mixin's
                num_examples, rollouts_per_example, shuffle=shuffle, shuffle_seed=seed
            )
            return await self.generate(
                inputs,
                client,
                model,
                sampling_args=sampling_args,
                max_concurrent=max_concurrent,
                shuffle=shuffle,
                shuffle_seed=seed,
                **kwargs,
            )
        from verifiers.evaluation import evaluate_async

        return await evaluate_async(
            cast("Environment", self),
            client=client,
            model=model,
            sampling_args=sampling_args,
            num_examples=num_examples,
            rollouts_per_example=rollouts_per_example,
            max_concurrent=max_concurrent,
            **kwargs,
        )

    def evaluate_sync(self, client: Any, model: str, **kwargs: Any) -> EvalResult:
        """Blocking :meth:`evaluate` (refuses to run inside a running event loop)."""
        from verifiers.classic.generate import wants_classic_generate
        from verifiers.evaluation import evaluate

        kwargs.setdefault("num_examples", -1)  # the classic defaults of evaluate()
        kwargs.setdefault("rollouts_per_example", 1)
        if wants_classic_generate(self, client, kwargs):
            from verifiers.utils.async_utils import run_sync

            return run_sync(
                self.evaluate(client, model, **kwargs), "evaluate_sync", "await env.evaluate(...)"
            )
        return evaluate(cast("Environment", self), client=client, model=model, **kwargs)

    async def generate(
        self,
        inputs: Any,
        client: Any,
        model: str,
        sampling_args: SamplingArgs | None = None,
        max_concurrent: int = -1,
        **kwargs: Any,
    ) -> EvalResult:
        """Roll out and score the given rows (a ``datasets.Dataset``, a list of dicts or a dict
        of columns with ``prompt`` or ``question``, ``answer``, ``info``, ``task``).

        A call only 0.3.x's runner serves (a ``vf.ClientConfig`` as the client, an env server
        in ``self.env_client``, ``results_path=``, ``independent_scoring=``, ``on_start=`` /
        ``on_log=``, ``push_to_hf_hub=``) runs as 0.3.x runs it and returns its
        ``GenerateOutputs`` dict (:mod:`verifiers.classic.generate`); others run through
        :func:`verifiers.evaluate_async`."""
        from verifiers.classic.generate import classic_generate, wants_classic_generate

        if wants_classic_generate(self, client, kwargs):
            return await classic_generate(  # type: ignore[return-value]
                cast("ClassicEnvironment", self),
                inputs,
                client,
                model,
                sampling_args=sampling_args,
                max_concurrent=max_concurrent,
                **kwargs,
            )
        from verifiers.evaluation import evaluate_async

        return await evaluate_async(
            cast("Environment", self),
            client=client,
            model=model,
            inputs=inputs,
            sampling_args=sampling_args,
            max_concurrent=max_concurrent,
            **kwargs,
        )

    def generate_sync(self, inputs: Any, client: Any, model: str, **kwargs: Any) -> EvalResult:
        """Blocking :meth:`generate`."""
        from verifiers.classic.generate import wants_classic_generate
        from verifiers.evaluation import evaluate

        if wants_classic_generate(self, client, kwargs):
            from verifiers.utils.async_utils import run_sync

            return run_sync(
                self.generate(inputs, client, model, **kwargs),
                "generate_sync",
                "await env.generate(...)",
            )

        return evaluate(
            cast("Environment", self), client=client, model=model, inputs=inputs, **kwargs
        )

    # ------------------------------------------------------------------ per-rollout tools

    def _rollout_tools(self, state: State) -> list[dict[str, Any]] | None:
        """The tool schemas offered to the model in this rollout: ``state["tool_defs"]`` when
        the environment set it (classic environments choose tools per rollout in
        ``setup_state``), else the row's ``info["tool_defs"]``, else the environment's own.
        An empty list offers no tools. The chosen schemas are kept in ``state["oai_tools"]``
        (what a trainer re-renders the chat template with)."""
        defs = state.get("tool_defs")
        if defs is None:
            info = state.get("info")
            defs = info.get("tool_defs") if isinstance(info, Mapping) else None
        if defs is None:
            return self.oai_tools or None
        if not isinstance(defs, Sequence) or isinstance(defs, str | bytes):
            raise ConfigError(
                f"state['tool_defs'] must be a list of tool definitions, not {type(defs).__name__}"
            )
        tools = [as_openai_tool(d) for d in defs]
        state["oai_tools"] = tools
        return tools or None


def unpack_env_response(reply: Any, state: State) -> Any:
    """The new messages of an ``env_response`` in any classic shape: new messages,
    ``(messages, state)`` (the state is merged), one message, text, or ``None``."""
    if isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[1], dict):
        new_state = reply[1]
        if new_state is not state:
            state.update(new_state)
        reply = reply[0]
    if reply is None:
        return []
    if isinstance(reply, dict):
        return [as_message(reply)]
    if isinstance(reply, list):
        return [as_message(m) for m in reply]
    return reply


if TYPE_CHECKING:  # for annotations: an environment with the classic methods

    class ClassicEnvironment(ClassicEnvironmentMixin, Environment): ...

else:
    from verifiers.envs.environment import Environment as ClassicEnvironment
