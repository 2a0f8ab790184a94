"""The model calls of a rollout: :class:`ModelCalls`, the half of ``EnvironmentCore`` that
sends one turn's request (oracle, token budget, per-request headers) and records the answer as
a trajectory step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from verifiers.model_types import to_model_response
from verifiers.types import (
    Message,
    Messages,
    MessageType,
    ModelResponse,
    SamplingArgs,
    State,
    StepTokens,
    TrajectoryStep,
    state_usage,
)
from verifiers.utils.tool_schema import as_openai_tool

if TYPE_CHECKING:
    from verifiers.clients.base import Client

__all__ = ["ModelCalls"]


class ModelCalls:
    """Model calls of the rollout loop (``EnvironmentCore.__init__`` sets the attributes)."""

    oai_tools: list[dict[str, Any]]
    max_total_completion_tokens: int
    max_seq_len: int | None
    message_type: MessageType

    if TYPE_CHECKING:  # EnvironmentCore's

        async def oracle_response(self, state: State) -> Message: ...

    async def _model_turn(
        self,
        state: State,
        prompt: Messages | str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelResponse:
        """Hook for the rooms above: one model call of the rollout loop, as a
        :class:`ModelResponse`."""
        raw = await self._request_model(state, prompt, sampling_args=sampling_args, tools=tools)
        if isinstance(raw, ModelResponse):
            return raw
        return to_model_response(raw)

    async def _request_model(
        self,
        state: State,
        prompt: Messages | str,
        *,
        client: Client | Any = None,
        model: str | None = None,
        tool_defs: list[Any] | None = None,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Any:
        """One model call: the client's own answer (this SDK's clients' :class:`ModelResponse`;
        a classic client's ``vf.Response``), its usage counted on the state. ``client``,
        ``model`` and ``tool_defs`` default to the rollout's; ``tools`` (OpenAI schemas)
        replace the tools for this call; ``sampling_args`` are merged under the rollout's."""
        from verifiers.clients.oracle import OracleClient

        if client is None:
            client = state["client"]
        model = model or state["model"]
        if tools is None and tool_defs is not None:
            tools = [as_openai_tool(t) for t in tool_defs]
        if isinstance(client, OracleClient):
            message = await self.oracle_response(state)
            oracle = client.respond(
                message,
                prompt,
                tools=tools if tools is not None else (self.oai_tools or None),
                message_type=self.message_type,
            )
            state_usage(state).add(oracle.usage)
            return oracle
        args: SamplingArgs = state["sampling_args"]
        if sampling_args:
            args = {**sampling_args, **args}
        budget = self.max_total_completion_tokens
        if budget > 0:
            remaining = budget - state_usage(state).completion_tokens
            current = args.get("max_tokens")
            if current is None or current > remaining:
                args = {**args, "max_tokens": max(remaining, 1)}
        from verifiers.response_cache import current_rollout_index

        current_rollout_index.set(state.get("rollout_index"))
        schemas = tools if tools is not None else self._rollout_tools(state)
        return await self._send(client, state, prompt, model, args, schemas, tools)

    def _rollout_tools(self, state: State) -> list[dict[str, Any]] | None:
        """Hook for the rooms above: the tool schemas offered in this rollout."""
        return self.oai_tools or None

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
        """Hook for the rooms above: send one request to ``client`` (``schemas``: the tools
        offered; ``tools``: what the caller passed for this call) and count its usage."""
        from_state: dict[str, str] | None = getattr(client, "headers_from_state", None)
        if from_state or getattr(client, "return_token_ids", False):
            args = self._client_request_args(client, state, args, from_state)
        response = await client.get_response(
            prompt,
            model,
            sampling_args=args,
            tools=schemas,
            message_type=self.message_type,
        )
        if not isinstance(response, ModelResponse):  # a client of another shape
            response = to_model_response(response)
        state_usage(state).add(response.usage)
        return response

    @staticmethod
    def _client_request_args(
        client: Any, state: State, args: SamplingArgs, from_state: dict[str, str] | None
    ) -> SamplingArgs:
        """Sampling arguments plus what a ``ClientConfig`` asks of each request: headers
        read from the rollout's state (``extra_headers_from_state``) and, for the
        ``openai_chat_completions_token`` client type, token ids in the answer."""
        args = dict(args)
        if from_state:
            headers = dict(args.get("extra_headers") or {})
            for header, field_name in from_state.items():
                value = state.get(field_name)
                if value is not None:
                    headers[header] = str(value)
            args["extra_headers"] = headers
        if getattr(client, "return_token_ids", False):
            args["extra_body"] = {**(args.get("extra_body") or {}), "return_token_ids": True}
        return args

    def _record_step(
        self,
        state: State,
        response: ModelResponse,
        prompt_len: int,
        completion: Any,
        prompt: Messages | str | None = None,
    ) -> None:
        """Account for one model call: usage, turn, truncation, the trajectory step, and the
        ``max_seq_len`` check."""
        state["responses"].append(response)
        state["turn"] += 1
        truncated = response.finish_reason == "length"
        if truncated:
            state["is_truncated"] = True
        tokens: StepTokens | None = None
        prompt_ids = response.prompt_token_ids
        completion_ids = response.completion_token_ids
        if completion_ids is not None and prompt_ids is not None:
            tokens = {
                "prompt_ids": prompt_ids,
                "completion_ids": completion_ids,
                "completion_logprobs": response.completion_logprobs,
                "prompt_mask": [0] * len(prompt_ids),
                "completion_mask": [1] * len(completion_ids),
                "overlong_prompt": False,
                "is_truncated": truncated,
                "routed_experts": None,
            }
        step: TrajectoryStep = {
            "prompt_len": prompt_len,
            "prompt": prompt if prompt is not None else [],
            "completion": completion,
            "response": response,
            "tokens": tokens,
            "reward": None,
            "advantage": None,
            "is_truncated": truncated,
            "trajectory_id": state.get("trajectory_id") or "",
            "extras": {},
        }
        state["trajectory"].append(step)
        if self.max_seq_len:
            if tokens is not None:
                seq_len = len(tokens["prompt_ids"]) + len(tokens["completion_ids"])
            else:
                seq_len = response.usage.prompt_tokens + response.usage.completion_tokens
            if seq_len >= self.max_seq_len:
                state["prompt_too_long"] = True
                state["is_truncated"] = True
