"""The classic (0.3.x) model-call shapes of an environment: :class:`ClassicModelCalls`, a base
of :class:`~verifiers.classic.env_mixin.ClassicEnvironmentMixin`.

- ``get_model_response(state, prompt, ...)`` returns a classic ``vf.Response``; a subclass's
  override of it is what the rollout loop calls for each turn;
- a classic client (``verifiers.clients.Client``, 0.3.x's ABC) is called as 0.3.x calls it:
  ``vf.Tool`` records, the state passed along (for per-rollout headers);
- ``tool_defs`` as ``vf.Tool`` records, ``get_state_usage`` in 0.3.x's shape,
  ``provides_advantages``, ``requires_group_rollouts``, ``_get_eval_inputs``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from verifiers.classic.timing import classic_timing
from verifiers.envs._datasets import normalise_row
from verifiers.types import Messages, ModelResponse, SamplingArgs, State, Usage, state_usage
from verifiers.utils.tool_schema import as_openai_tool

if TYPE_CHECKING:
    from verifiers.classic.models import Response
    from verifiers.clients.base import Client
    from verifiers.envs.environment import EnvironmentCore

    _Core = EnvironmentCore
else:
    _Core = object

__all__ = ["ClassicModelCalls"]


class ClassicModelCalls(_Core):
    """The classic model-call shapes (see the module docstring)."""

    @property
    def tool_defs(self) -> list[Any] | None:
        """The tools offered to the model as classic ``vf.Tool`` records (``None`` when the
        environment offers none)."""
        if not self.oai_tools:
            return None
        from verifiers.classic.models import Tool

        tools = []
        for schema in self.oai_tools:
            fn = schema.get("function", schema)
            tools.append(
                Tool(
                    name=fn["name"],
                    description=fn.get("description") or "",
                    parameters=fn.get("parameters") or {},
                    strict=fn.get("strict"),
                )
            )
        return tools

    @tool_defs.setter
    def tool_defs(self, tools: Sequence[Any] | None) -> None:
        self.oai_tools = [as_openai_tool(t) for t in tools or []]

    @property
    def provides_advantages(self) -> bool:
        """Whether the rubric computes advantages itself (0.3.x; never here)."""
        return bool(getattr(self.rubric, "has_advantages", False))

    def get_state_usage(self, state: State) -> dict[str, float] | None:
        """The rollout's token usage in 0.3.x's shape, ``{"input_tokens", "output_tokens"}``,
        as counted by its model calls (``state["usage_tracker"]``; ``None`` when the state has
        no usage record)."""
        if not isinstance(state.get("usage_tracker"), Usage) and not isinstance(
            state.get("usage"), Usage
        ):
            return None
        usage = state_usage(state)
        return {
            "input_tokens": float(usage.prompt_tokens),
            "output_tokens": float(usage.completion_tokens),
        }

    @property
    def requires_group_rollouts(self) -> bool:
        """True when the rubric has group reward functions (rollouts of one example must be
        scored together)."""
        return self.has_group_rewards

    def _get_eval_inputs(
        self,
        num_examples: int = -1,
        rollouts_per_example: int = 1,
        shuffle: bool = False,
        shuffle_seed: int | None = None,
    ) -> list[dict[str, Any]]:
        """The rows 0.3.x's ``evaluate``/``vf-eval`` run: the eval dataset (else the training
        one), shuffled first when ``shuffle`` (seed 0 unless given), then its first
        ``num_examples`` rows, each repeated ``rollouts_per_example`` times in a row block."""
        ds = self.get_eval_dataset()
        if shuffle:
            ds = ds.shuffle(seed=0 if shuffle_seed is None else shuffle_seed)
        if num_examples > 0:
            ds = ds.select(range(min(num_examples, len(ds))))
        rows = [normalise_row(r) for r in ds.to_list()]
        return rows * max(rollouts_per_example, 1)

    async def get_model_response(
        self,
        state: State,
        prompt: Messages | str,
        client: Client | Any = None,
        model: str | None = None,
        tool_defs: list[Any] | None = None,
        sampling_args: SamplingArgs | None = None,
        *,
        tools: list[dict[str, Any]] | None = None,
    ) -> Response:
        """Call the model for this turn (0.3.x's call shape) and return its classic
        ``vf.Response``; the call's token usage is counted in ``state["usage_tracker"]``.

        ``client``, ``model`` and ``tool_defs`` (``vf.Tool`` records) default to the
        rollout's (``state["client"]``, ``state["model"]``, ``state["tool_defs"]`` or the
        environment's tools); ``tools`` (OpenAI function schemas) replace them for this call.
        ``sampling_args`` are merged under the rollout's (``state["sampling_args"]``: what the
        caller or trainer pinned wins). The token budget (``max_total_completion_tokens``)
        caps ``max_tokens``.

        The rollout loop calls this method only when a subclass overrides it (the override
        may return a ``vf.Response`` or a :class:`~verifiers.types.ModelResponse`).
        """
        from verifiers.clients.client import to_classic_response

        response = await self._request_model(
            state,
            prompt,
            client=client,
            model=model,
            tool_defs=tool_defs,
            sampling_args=sampling_args,
            tools=tools,
        )
        return to_classic_response(response)

    async def _model_turn(
        self,
        state: State,
        prompt: Messages | str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelResponse:
        """Through a subclass's ``get_model_response`` override when there is one, else the
        core's call (no classic ``vf.Response`` is built); each call's wall-clock span is
        recorded in ``state["timing"].model``."""
        start = time.time()
        try:
            return await self._classic_model_turn(
                state, prompt, sampling_args=sampling_args, tools=tools
            )
        finally:
            timing = classic_timing(state)
            if timing is not None:
                timing.add_model_span(start, time.time())

    async def _classic_model_turn(
        self,
        state: State,
        prompt: Messages | str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelResponse:
        if type(self).get_model_response is ClassicModelCalls.get_model_response:
            return await super()._model_turn(
                state, prompt, sampling_args=sampling_args, tools=tools
            )
        kwargs: dict[str, Any] = {}
        if sampling_args is not None:
            kwargs["sampling_args"] = sampling_args
        if tools is not None:
            kwargs["tools"] = tools
        raw: Any = await self.get_model_response(state, prompt, **kwargs)
        if isinstance(raw, ModelResponse):
            return raw
        from verifiers.clients.client import to_model_response

        return to_model_response(raw)

    async def _send(
        self,
        client: Any,
        state: State,
        prompt: Messages | str,
        model: str,
        args: SamplingArgs,
        schemas: list[dict[str, Any]] | None,
        tools: list[dict[str, Any]] | None,
    ) -> Any:
        from verifiers.clients.client import Client as ClassicClient

        if not isinstance(client, ClassicClient):
            return await super()._send(client, state, prompt, model, args, schemas, tools)
        # 0.3.x's call: vf.Tool records, the state for per-rollout headers
        classic = await client.get_response(
            prompt=cast(Messages, prompt),  # a completion prompt's text, as 0.3.x passes it
            model=model,
            sampling_args=args,
            tools=_classic_tools(state, tools, schemas),
            state=state,
        )
        state_usage(state).add(_classic_usage(classic))
        return classic


def _classic_tools(
    state: State, tools: list[dict[str, Any]] | None, schemas: list[dict[str, Any]] | None
) -> list[Any] | None:
    """The tools of a classic client's call, as ``vf.Tool`` records (``None`` for none):
    the ``vf.Tool`` records of ``state["tool_defs"]`` themselves, as 0.3.x passes them,
    unless ``tools`` replaces them for this call; else the schemas offered, converted."""
    from verifiers.classic.models import Tool
    from verifiers.clients.client import _as_tool

    defs = state.get("tool_defs")
    if tools is None and isinstance(defs, list) and defs and all(isinstance(t, Tool) for t in defs):
        return list(defs)
    return [_as_tool(t) for t in schemas] if schemas else None


def _classic_usage(response: Any) -> Usage:
    """A classic ``vf.Response``'s usage (``None``, a ``vf.Usage`` or a dict) as a
    :class:`Usage`."""
    usage = getattr(response, "usage", None)
    if isinstance(usage, Usage):
        return usage
    if isinstance(usage, Mapping):

        def field(key: str) -> int:
            value = usage.get(key)
            return value if isinstance(value, int) else 0

        return Usage(
            prompt_tokens=field("prompt_tokens"),
            completion_tokens=field("completion_tokens"),
            reasoning_tokens=field("reasoning_tokens"),
        )
    return Usage()
