"""Rollout outputs in the classic (0.3.x) shape that trainers read.

:func:`state_to_output` turns a finished rollout's :class:`~verifiers.State` into a JSON-safe
:class:`~verifiers.RolloutOutput`: ``example_id``, ``prompt``, ``completion``, ``answer`` and
``info`` (when not empty), ``reward``, metrics (as ``metrics`` and flattened), ``error``
(``{"error", "message", "error_chain_repr", "error_chain_str"}``), ``timing`` (seconds:
``start_time``, ``setup``/``generation``/``scoring`` spans, ``model``/``env`` totals, ``total``,
``overhead``), ``is_completed``, ``is_truncated``, ``stop_condition``, ``tool_defs``,
``token_usage`` (``input_tokens``, ``output_tokens``, ``final_input_tokens``,
``final_output_tokens``) and the requested ``state_columns``. ``trajectory``, when requested,
has one step per model call: ``prompt`` and ``completion`` messages, ``response``, and
``tokens`` (``prompt_ids``, ``prompt_mask``, ``completion_ids``, ``completion_mask``,
``completion_logprobs``, ...) when the inference server returned token ids.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.classic.results_io import (  # 0.3.x's results files
    get_hf_hub_dataset_name,
    load_outputs,
    make_dataset,
    push_results_to_hf_hub,
    save_metadata,
    save_new_outputs,
    save_outputs,
    validate_resume_metadata,
)
from verifiers.classic.types import RolloutOutput
from verifiers.messages import to_plain
from verifiers.types import ModelResponse, State, Usage
from verifiers.utils.json_utils import is_json_serializable, make_serializable

logger = logging.getLogger(__name__)

__all__ = [
    "get_hf_hub_dataset_name",
    "is_json_serializable",
    "load_outputs",
    "make_dataset",
    "make_serializable",
    "push_results_to_hf_hub",
    "save_metadata",
    "save_new_outputs",
    "save_outputs",
    "serialize_trajectory",
    "state_to_output",
    "states_to_outputs",
    "validate_resume_metadata",
]


def _messages(messages: Any) -> Any:
    """Messages as plain dicts (tool-call arguments as the JSON text the API uses)."""
    return to_plain(messages)


def _error_data(error: Any) -> dict[str, str] | None:
    if error is None:
        return None
    if isinstance(error, BaseException):
        name, message, tb = type(error).__name__, str(error), ""
    elif isinstance(error, Mapping):
        if {"error", "error_chain_repr"} <= set(error):
            return {
                "error": str(error["error"]),
                "message": str(error.get("message", error["error"])),
                "error_chain_repr": str(error["error_chain_repr"]),
                "error_chain_str": str(error.get("error_chain_str", "")),
            }
        name = str(error.get("type", "Error"))
        message = str(error.get("message", ""))
        tb = str(error.get("traceback", ""))
    else:
        name, message, tb = "Error", str(error), ""
    return {
        "error": name,
        "message": message or name,
        "error_chain_repr": f"{name}({message!r})",
        "error_chain_str": tb or f"{name}: {message}",
    }


def _response_out(response: Any) -> Any:
    if isinstance(response, ModelResponse):
        return {
            "id": response.id,
            "model": response.model,
            "finish_reason": response.finish_reason,
            "usage": response.usage.as_dict(),
            "message": _messages([response.message])[0],
        }
    return response


def _tokens_out(tokens: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(tokens)
    n_prompt = len(out.get("prompt_ids") or [])
    n_completion = len(out.get("completion_ids") or [])
    if out.get("completion_logprobs") is None:
        out["completion_logprobs"] = [0.0] * n_completion
    out.setdefault("prompt_mask", [0] * n_prompt)
    out.setdefault("completion_mask", [1] * n_completion)
    out.setdefault("overlong_prompt", False)
    out.setdefault("is_truncated", False)
    out.setdefault("routed_experts", None)
    return out


def serialize_trajectory(trajectory: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The steps of ``state["trajectory"]`` as plain data (messages, response, tokens)."""
    out = []
    for step in trajectory:
        tokens = step.get("tokens")
        out.append(
            {
                "prompt": _messages(step.get("prompt")),
                "completion": _messages(step.get("completion")),
                "response": _response_out(step.get("response")),
                "tokens": _tokens_out(tokens) if tokens is not None else None,
                "reward": step.get("reward"),
                "advantage": step.get("advantage"),
                "is_truncated": bool(step.get("is_truncated", False)),
                "trajectory_id": step.get("trajectory_id", ""),
                "extras": dict(step.get("extras") or {}),
            }
        )
    return out


def _tool_defs(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Tools in the classic ``Tool`` shape (``name``, ``description``, ``parameters``,
    ``strict``), whatever shape the environment holds them in (OpenAI function schemas)."""
    out = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            dumped = make_serializable(tool)
            if not isinstance(dumped, dict):
                continue
            tool = dumped
        fn = tool.get("function") if tool.get("type") == "function" else None
        spec = fn if isinstance(fn, Mapping) else tool
        d: dict[str, Any] = {
            "name": spec.get("name"),
            "description": spec.get("description", ""),
            "parameters": spec.get("parameters", {}),
        }
        if spec.get("strict") is not None:
            d["strict"] = spec.get("strict")
        out.append(d)
    return out


def _timing(state: Mapping[str, Any]) -> dict[str, Any]:
    t = state.get("timing")
    if not isinstance(t, Mapping):
        dump = getattr(t, "model_dump", None)
        return dump() if callable(dump) else {}
    if "generation_ms" not in t:
        return dict(t)
    start = float(t.get("start", 0.0))
    gen = float(t.get("generation_ms", 0.0)) / 1000.0
    scoring = float(t.get("scoring_ms", 0.0)) / 1000.0
    setup = float(t.get("setup_ms", 0.0)) / 1000.0
    model = float(t.get("model_ms", 0.0)) / 1000.0
    env = float(t.get("env_ms", 0.0)) / 1000.0
    gen_end = start + gen
    total = gen + scoring
    return {
        "start_time": start,
        "setup": {"start": start, "end": start + setup, "duration": setup},
        "generation": {"start": start, "end": gen_end, "duration": gen},
        "scoring": {"start": gen_end, "end": gen_end + scoring, "duration": scoring},
        "model": {"spans": [], "duration": model},
        "env": {"spans": [], "duration": env},
        "total": total,
        "overhead": total - setup - model - env - scoring,
    }


def _token_usage(state: Mapping[str, Any]) -> dict[str, float]:
    tracker = state.get("usage_tracker")  # what was counted, whatever state["usage"] says
    usage = tracker if isinstance(tracker, Usage) else state.get("usage")
    trajectory = state.get("trajectory") or []
    if isinstance(usage, Usage):
        inp, outp = float(usage.prompt_tokens), float(usage.completion_tokens)
    elif isinstance(usage, Mapping):
        inp = float(usage.get("input_tokens", usage.get("prompt_tokens", 0.0)) or 0.0)
        outp = float(usage.get("output_tokens", usage.get("completion_tokens", 0.0)) or 0.0)
    else:
        inp = outp = 0.0
    # context of the final call: what the model saw last, split into the tokens the model
    # generated over the rollout and the rest (prompt, environment and tool messages)
    total_completion = 0
    last_total = 0
    for step in trajectory:
        response = step.get("response") if isinstance(step, Mapping) else None
        if isinstance(response, ModelResponse):
            total_completion += response.usage.completion_tokens
            last_total = response.usage.prompt_tokens + response.usage.completion_tokens
    return {
        "input_tokens": inp,
        "output_tokens": outp,
        "final_input_tokens": float(max(0, last_total - total_completion)),
        "final_output_tokens": float(total_completion),
    }


def state_to_output(
    state: State | Mapping[str, Any], state_columns: Sequence[str] | None = None
) -> RolloutOutput:
    """The classic JSON-safe output of a finished rollout (see the module docstring).

    Raises ``ValueError`` when a requested state column holds a value that is not
    JSON-serializable.
    """
    if state.get("example_id") is None:
        raise ValueError("state['example_id'] is required to build a rollout output")
    reward = state.get("reward")
    metrics = dict(state.get("metrics") or {})
    tools = state.get("tool_defs")
    if tools is None:
        tools = state.get("oai_tools")
    output = RolloutOutput(
        example_id=state["example_id"],
        prompt=_messages(state.get("prompt")),
        completion=_messages(state.get("completion")),
        answer=state.get("answer", ""),
        info=state.get("info") or {},
        task=state.get("task", "default"),
        rollout_index=state.get("rollout_index", 0),
        reward=float(reward) if reward is not None else 0.0,
        error=None,
        timing=_timing(state),
        is_completed=bool(state.get("is_completed", False)),
        is_truncated=bool(state.get("is_truncated", False)),
        stop_condition=state.get("stop_condition"),
        metrics=metrics,
        tool_defs=_tool_defs(tools) if tools is not None else None,
        token_usage=_token_usage(state),
    )
    error = _error_data(state.get("error"))
    if error is not None:
        output["error"] = error
        output["error_chain"] = error["error_chain_repr"]
        output["long_error_chain"] = error["error_chain_str"]
    if not output["answer"]:
        output.pop("answer")
    if not output["info"]:
        output.pop("info")
    for k, v in metrics.items():
        output.setdefault(k, v)
    for col in state_columns or ():
        value = state.get(col)
        if col == "trajectory":
            output[col] = serialize_trajectory(value or [])
            continue
        if col in ("prompt", "completion"):
            continue  # already in the output, serialised
        if not is_json_serializable(value):
            raise ValueError(
                f"state_columns: the value of {col!r} is not JSON-serializable "
                f"({type(value).__name__}); request only columns holding JSON data"
            )
        output[col] = value
    return output


def states_to_outputs(
    states: Sequence[State], state_columns: Sequence[str] | None = None
) -> list[RolloutOutput]:
    """:func:`state_to_output` of each state."""
    return [state_to_output(s, state_columns) for s in states]


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
