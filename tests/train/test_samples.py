from __future__ import annotations

from typing import Any

from verifiers.train.samples import build_samples
from verifiers.types import ModelResponse, State, StepTokens, TrajectoryStep


def _step(
    prompt_ids: list[int] | None,
    completion_ids: list[int],
    lps: list[float] | None = None,
    content: str = "",
    prompt_len: int = 1,
) -> TrajectoryStep:
    tokens: StepTokens | None = None
    if prompt_ids is not None:
        tokens = {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "completion_logprobs": lps,
        }
    return {
        "prompt_len": prompt_len,
        "completion": [{"role": "assistant", "content": content}],
        "response": ModelResponse(message={"role": "assistant", "content": content}),
        "tokens": tokens,
        "is_truncated": False,
        "extras": {},
    }


def _state(steps: list[TrajectoryStep], **kw: Any) -> State:
    base: dict[str, Any] = {
        "prompt": [{"role": "user", "content": "q"}],
        "completion": [],
        "trajectory": steps,
        "reward": 0.75,
        "metrics": {"correct": 1.0, "num_turns": 2.0},
        "error": None,
        "example_id": 3,
        "task": "toy",
        "is_truncated": False,
    }
    base.update(kw)
    return State(base)


def test_server_tokens_multi_turn_masks_environment_tokens() -> None:
    steps = [
        _step([1, 2, 3], [10, 11], [-0.1, -0.2]),
        # prompt = previous prompt + completion + environment tokens [4, 5]
        _step([1, 2, 3, 10, 11, 4, 5], [12], [-0.3]),
    ]
    out = build_samples(_state(steps), group_id=7, policy_version=2)
    (s,) = out.samples
    assert s.token_ids == [1, 2, 3, 10, 11, 4, 5, 12]
    assert s.mask == [False, False, False, True, True, False, False, True]
    assert s.logprobs == [0.0, 0.0, 0.0, -0.1, -0.2, 0.0, 0.0, -0.3]
    assert (s.reward, s.group_id, s.policy_version, s.task_key, s.example_id) == (
        0.75,
        7,
        2,
        "toy",
        3,
    )
    assert s.reward_components == {"correct": 1.0, "num_turns": 2.0}
    assert not out.counts


def test_prefix_mismatch_splits_or_drops_and_counts() -> None:
    steps = [_step([1, 2], [10], [-0.1]), _step([1, 9, 10, 4], [12], [-0.3])]
    split = build_samples(_state(steps))
    assert [s.token_ids for s in split.samples] == [[1, 2, 10], [1, 9, 10, 4, 12]]
    assert [s.mask for s in split.samples] == [[False, False, True], [False] * 4 + [True]]
    assert split.counts["split"] == 1
    dropped = build_samples(_state(steps), on_mismatch="drop")
    assert dropped.samples == [] and dropped.counts["dropped_mismatch"] == 1


def test_errored_rollouts_are_marked_and_bad_ones_dropped_not_raised() -> None:
    err = build_samples(_state([_step([1], [2])], error={"type": "EndpointError", "message": "x"}))
    assert [s.error for s in err.samples] == ["EndpointError: x"] and err.counts["errored"] == 1
    (ok,) = build_samples(_state([_step([1], [2])])).samples
    assert ok.error is None
    empty = build_samples(_state([]))
    assert empty.samples == [] and empty.counts["dropped_empty"] == 1
    no_tok = build_samples(
        _state([_step(None, [], content="hi")])
    )  # no server tokens, no tokenizer
    assert no_tok.samples == [] and no_tok.counts["dropped_mismatch"] == 1


def test_missing_logprobs_give_none() -> None:
    (s,) = build_samples(_state([_step([1], [2, 3], None)])).samples
    assert s.logprobs is None and s.mask == [False, True, True]


def test_retokenized_multi_turn_tool_transcript_masks_exactly_the_model_tokens(
    char_tokenizer: Any,
) -> None:
    tok = char_tokenizer
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    prompt = [{"role": "user", "content": "add 1"}]
    a1 = {"role": "assistant", "content": "", "tool_calls": [call]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": "2"}
    a2 = {"role": "assistant", "content": "it is 2"}
    steps = [_step(None, [], prompt_len=1), _step(None, [], prompt_len=3)]
    steps[0]["completion"] = [a1]
    steps[1]["completion"] = [a2]
    state = _state(steps, prompt=prompt, completion=[a1, t1, a2])
    out = build_samples(state, tokenizer=tok)
    (s,) = out.samples
    assert out.counts["retokenized"] == 2
    full = tok.apply_chat_template([*prompt, a1, t1, a2], tokenize=True)["input_ids"]
    assert s.token_ids == full
    trained = tok.decode([t for t, m in zip(s.token_ids, s.mask, strict=True) if m])
    # exactly the two assistant turns (content, tool call, end token), nothing of user or tool
    assert (
        trained
        == '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call><|end|>it is 2<|end|>'
    )
    assert s.logprobs is None


def test_template_that_is_not_prefix_stable_is_counted(char_tokenizer: Any) -> None:
    class Dropping:
        """A template that hides earlier assistant turns (as reasoning templates do)."""

        def apply_chat_template(self, conversation: Any, **kw: Any) -> list[int]:
            msgs = [m for m in conversation if m["role"] != "assistant"] + (
                [conversation[-1]] if conversation[-1]["role"] == "assistant" else []
            )
            return [ord(c) for m in msgs for c in m["role"][0] + str(m.get("content") or "")]

        def encode(self, text: str, **kw: Any) -> list[int]:
            return [ord(c) for c in text]

    steps = [_step(None, [], content="x", prompt_len=1), _step(None, [], content="y", prompt_len=3)]
    state = _state(
        steps,
        completion=[
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "y"},
        ],
    )
    out = build_samples(state, tokenizer=Dropping())
    assert out.counts["split"] == 1 and len(out.samples) == 2


def test_retokenized_multi_turn_text_transcript_keeps_each_turns_context(
    char_tokenizer: Any,
) -> None:
    """Completion-mode (text) rollouts: a turn's prompt is the transcript so far (``prompt_len``
    characters of prompt + completion), not the first prompt."""
    tok = char_tokenizer

    def text_step(content: str, prompt_len: int) -> TrajectoryStep:
        step = _step(None, [], content=content, prompt_len=prompt_len)
        step["completion"] = content  # type: ignore[typeddict-item]
        return step

    prompt, a1, env, a2 = "Q: 1+1?", " 2", "\nSure? ", "yes 2"
    steps = [text_step(a1, len(prompt)), text_step(a2, len(prompt + a1 + env))]
    state = _state(steps, prompt=prompt, completion=a1 + env + a2)
    out = build_samples(state, tokenizer=tok)
    (s,) = out.samples
    assert out.counts["split"] == 0 and out.counts["retokenized"] == 2
    assert s.token_ids == tok.encode(prompt + a1 + env + a2, add_special_tokens=False)
    trained = "".join(tok.decode([t]) for t, m in zip(s.token_ids, s.mask, strict=True) if m)
    assert trained == a1 + a2
