"""Reading a classic ``vf.Response`` (what a classic client returns) into the pieces a
rollout keeps: the assistant message, and the token ids of the turn for training."""

from __future__ import annotations

from typing import Any

from verifiers.classic.types import TrajectoryStepTokens
from verifiers.messages import AssistantMessage

__all__ = [
    "ROUTED_EXPERTS_DATA_PREFIX",
    "parse_response_message",
    "parse_response_tokens",
    "strip_routed_experts_data",
]

# where a vLLM response body carries the routed-experts sidecar (base64 text)
ROUTED_EXPERTS_DATA_PREFIX = b'"routed_experts":{"data":"'


def strip_routed_experts_data(raw: bytes) -> tuple[bytes, memoryview | None]:
    """``raw`` with the routed-experts data string emptied, and a view of that data (``None``
    when the body has none), so the large sidecar is not parsed as JSON."""
    start = raw.find(ROUTED_EXPERTS_DATA_PREFIX)
    if start < 0:
        return raw, None
    start += len(ROUTED_EXPERTS_DATA_PREFIX)
    end = raw.index(b'"', start)
    return raw[:start] + raw[end:], memoryview(raw)[start:end]


async def parse_response_message(response: Any) -> list[AssistantMessage]:
    """The one assistant message of ``response`` (content, reasoning, tool calls, and any
    extra fields the server sent), as a message list."""
    msg = response.message
    fields: dict[str, Any] = dict(getattr(msg, "model_extra", None) or {})
    fields.update(content=msg.content, tool_calls=msg.tool_calls)
    for key in ("reasoning_content", "thinking_blocks"):
        value = getattr(msg, key, None)
        if value is not None:
            fields[key] = value
    return [AssistantMessage(**fields)]


async def parse_response_tokens(
    response: Any, max_seq_len: int | None = None
) -> TrajectoryStepTokens | None:
    """The token ids, masks and logprobs of ``response``'s turn (``None`` when the server
    returned no tokens). With ``max_seq_len``, a prompt longer than it is cut to it and the
    completion dropped (``overlong_prompt``); a prompt and completion longer together lose the
    completion's tail (``is_truncated``)."""
    tokens = getattr(getattr(response, "message", None), "tokens", None)
    if tokens is None:
        return None
    prompt_ids, prompt_mask = list(tokens.prompt_ids), list(tokens.prompt_mask)
    completion_ids, completion_mask = list(tokens.completion_ids), list(tokens.completion_mask)
    logprobs = list(tokens.completion_logprobs)
    overlong = truncated = False
    if max_seq_len is not None:
        if len(prompt_ids) > max_seq_len:
            overlong = truncated = True
            prompt_ids, prompt_mask = prompt_ids[:max_seq_len], prompt_mask[:max_seq_len]
            completion_ids, completion_mask, logprobs = [], [], []
        elif len(prompt_ids) + len(completion_ids) > max_seq_len:
            truncated = True
            keep = max_seq_len - len(prompt_ids)
            completion_ids, completion_mask = completion_ids[:keep], completion_mask[:keep]
            logprobs = logprobs[:keep]
    return TrajectoryStepTokens(
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        completion_logprobs=logprobs,
        overlong_prompt=overlong,
        is_truncated=truncated,
        routed_experts=getattr(tokens, "routed_experts", None),
    )


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
