"""Parsers: classic call shapes, and the classic bugs fixed (each with the test that shows it)."""

from __future__ import annotations

import functools

import pytest

import verifiers as vf
from verifiers.errors import ConfigError
from verifiers.parsers import strip_think


def chat(*contents: str) -> list[dict[str, object]]:
    return [{"role": "assistant", "content": c} for c in contents]


# -- extractors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", "42"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{\\left\\{1, 2\\right\\}}", "\\left\\{1, 2\\right\\}"),
        ("first \\boxed{1} then \\boxed{ 2 }", "2"),
        ("\\boxed{a{b{c}}d}", "a{b{c}}d"),
        ("\\fbox{7}", "7"),
        ("\\boxed 5$", "5"),
        ("closed \\boxed{3} then unclosed \\boxed{4", "3"),
    ],
)
def test_extract_boxed_answer(text: str, expected: str) -> None:
    assert vf.extract_boxed_answer(text) == expected


def test_extract_boxed_answer_without_box() -> None:
    assert vf.extract_boxed_answer("no box here") == "no box here"
    assert vf.extract_boxed_answer("no box here", strict=True) == ""
    assert vf.extract_boxed_answer("\\boxed{unclosed", strict=True) == ""
    assert vf.extract_boxed_answer("\\boxedfoo", strict=True) == ""


def test_extract_hash_answer() -> None:
    assert vf.extract_hash_answer("Natalia sold 48/2 = 24 clips.\n#### 72") == "72"
    assert vf.extract_hash_answer("no marker") == "no marker"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>x</think>answer", "answer"),
        ("reasoning</think>answer", "answer"),
        ("a<think>x</think>b<think>y</think>c", "abc"),
        ("answer<think>unfinished \\boxed{9}", "answer"),
        ("plain", "plain"),
    ],
)
def test_strip_think(text: str, expected: str) -> None:
    assert strip_think(text) == expected


# -- Parser -------------------------------------------------------------------------------------


def test_parser_parse_answer_uses_last_assistant_message() -> None:
    p = vf.Parser()
    completion = [
        {"role": "assistant", "content": "first"},
        {"role": "user", "content": "more"},
        {"role": "assistant", "content": "second"},
        {"role": "tool", "content": "tool output", "tool_call_id": "1"},
    ]
    assert p.parse_answer(completion) == "second"
    assert p.parse_answer("raw text") == "raw text"
    assert p.parse_answer([{"role": "user", "content": "hi"}]) is None


def test_parser_extract_fn_and_content_parts() -> None:
    p = vf.Parser(extract_fn=vf.extract_boxed_answer)
    completion = [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "it is"}, {"type": "text", "text": "\\boxed{3}"}],
        }
    ]
    assert p.parse_answer(completion) == "3"
    assert p.get_format_reward_func()(completion=completion) == 1.0


def test_parser_role_helpers() -> None:
    p = vf.Parser()
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
        {"role": "tool", "content": "t"},
    ]
    assert [m["content"] for m in p.get_assistant_messages(msgs)] == ["a"]
    assert [m["content"] for m in p.get_user_messages(msgs)] == ["u"]
    assert [m["content"] for m in p.get_system_messages(msgs)] == ["s"]
    assert [m["content"] for m in p.get_tool_messages(msgs)] == ["t"]


def test_parser_rejects_non_callable_extract_fn() -> None:
    with pytest.raises(ConfigError, match="extract_fn"):
        vf.Parser(extract_fn="boxed")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("extract_fn", "expected"),
    [
        (None, "12"),
        (vf.extract_boxed_answer, "\\boxed{12}"),
        (functools.partial(vf.extract_boxed_answer, strict=True), "\\boxed{12}"),
        (vf.extract_hash_answer, "#### 12"),
    ],
)
def test_parser_format_answer_round_trips(extract_fn: object, expected: str) -> None:
    p = vf.Parser() if extract_fn is None else vf.Parser(extract_fn=extract_fn)  # type: ignore[arg-type]
    assert p.format_answer("12") == expected
    assert p.parse_answer(chat(p.format_answer("12"))) == "12"


# -- XMLParser ----------------------------------------------------------------------------------


def test_xml_parse_classic_shape() -> None:
    p = vf.XMLParser(fields=["think", ("answer", "final")])
    parsed = p.parse("<think>\nhmm\n</think>\n<answer>\n 4 \n</answer>")
    assert parsed.think == "hmm"
    assert parsed.answer == "4"
    assert parsed.final is None
    assert p.parse("<answer> 4 </answer>", strip=False).answer == " 4 "
    assert p.get_fields() == ["think", "answer"]


def test_xml_repeated_tags_are_all_returned() -> None:
    """Classic bug: only the first occurrence was visible."""
    p = vf.XMLParser(fields=["tool", "answer"])
    text = "<tool>a</tool> <tool>b</tool> <answer>1</answer> <answer>2</answer>"
    assert p.parse_all(text) == {"tool": ["a", "b"], "answer": ["1", "2"]}
    assert p.parse(text).answer == "1"
    assert p.parse(text, last=True).answer == "2"


def test_xml_parse_answer_takes_last_answer() -> None:
    """Classic bug: parse_answer on messages took the first answer of the message."""
    p = vf.XMLParser(fields=["think", "answer"])
    completion = chat("<answer>draft</answer> wait, no. <answer>final</answer>")
    assert p.parse_answer(completion) == "final"
    assert p.parse_answer("<answer>1</answer><answer>2</answer>") == "2"


def test_xml_parse_answer_looks_back_to_last_message_with_answer() -> None:
    p = vf.XMLParser(fields=["answer"])
    completion = [
        {"role": "assistant", "content": "<answer>7</answer>"},
        {"role": "user", "content": "sure?"},
        {"role": "assistant", "content": "yes"},
    ]
    assert p.parse_answer(completion) == "7"
    assert p.parse_answer(chat("no tags")) is None


def test_xml_alternative_tag_counts_as_answer() -> None:
    p = vf.XMLParser(fields=["think", ("answer", "final")])
    assert p.parse_answer(chat("<final>9</final>")) == "9"


def test_xml_thinking_is_stripped_before_parsing() -> None:
    """Classic bug: an answer written inside <think> was taken as the answer."""
    p = vf.XMLParser(fields=["answer"])
    text = "<think>maybe <answer>wrong</answer></think><answer>right</answer>"
    assert p.parse(text).answer == "right"
    assert p.parse_all(text) == {"answer": ["right"]}
    # thinking never closed: nothing inside it counts
    assert p.parse_answer(chat("<think>I guess <answer>3</answer>")) is None
    # template put <think> in the prompt: only the closing tag is in the completion
    assert p.parse_answer(chat("maybe <answer>1</answer></think><answer>2</answer>")) == "2"


def test_xml_think_as_field_is_parsed_but_answer_inside_it_does_not_count() -> None:
    p = vf.XMLParser(fields=["think", "answer"])
    text = "<think>maybe <answer>wrong</answer></think>"
    assert p.parse(text).think == "maybe <answer>wrong</answer>"
    assert p.parse_answer(text) is None


def test_xml_extract_fn_applies_to_answer() -> None:
    p = vf.XMLParser(fields=["answer"], extract_fn=vf.extract_boxed_answer)
    assert p.parse_answer("<answer>so \\boxed{5}</answer>") == "5"


def test_xml_format_reward_full_credit_for_well_formed() -> None:
    p = vf.XMLParser(fields=["think", "answer"])
    reward = p.get_format_reward_func()
    assert reward(completion=chat("<think>\nok\n</think>\n<answer>\n4\n</answer>")) == 1.0
    # missing think field: partial credit, still well formed (0.3.x's weights: 0.2 + 0.4 x 1/2
    # for the fields, + 0.2 for ending with the last field's tag)
    assert reward(completion=chat("<answer>4</answer>")) == pytest.approx(0.6)


@pytest.mark.parametrize(
    "text",
    [
        "<think>ok</think><answer>4",  # unclosed answer
        "<think>ok</think>4</answer>",  # closing tag without opening tag
        "<think>ok<answer>4</think></answer>",  # wrong nesting
        "<think>ok</think><answer>4<answer>5</answer>",  # answer opened twice
        "<answer><think>ok</think>4</answer>",  # schema tags nested
    ],
)
def test_xml_malformed_tags_get_no_format_credit(text: str) -> None:
    """Classic bug: an unclosed or misnested tag still earned format credit."""
    p = vf.XMLParser(fields=["think", "answer"])
    assert p.get_format_reward_func()(completion=chat(text)) == 0.0


def test_xml_format_reward_averages_messages_and_skips_tool_call_turns() -> None:
    p = vf.XMLParser(fields=["answer"])
    completion = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "42", "tool_call_id": "1"},
        {"role": "assistant", "content": "<answer>42</answer>"},
        {"role": "assistant", "content": "<answer>42"},
    ]
    assert p.get_format_reward_func()(completion=completion) == pytest.approx(0.5)
    assert p.get_format_reward_func()(completion=[]) == 0.0
    assert p.get_format_reward_func()(completion=chat("no tags")) == 0.0


def test_xml_format_and_format_answer() -> None:
    p = vf.XMLParser(fields=["think", ("answer", "final")])
    assert p.format(think="a", final="b") == "<think>\na\n</think>\n<answer>\nb\n</answer>"
    with pytest.raises(ConfigError, match="unknown field"):
        p.format(reasoning="x")
    oracle = p.format_answer("17")
    assert p.parse_answer(chat(oracle)) == "17"
    assert p.get_format_reward_func()(completion=chat(oracle)) == 1.0
    boxed = vf.XMLParser(fields=["answer"], extract_fn=vf.extract_boxed_answer)
    assert boxed.format_answer("x") == "<answer>\n\\boxed{x}\n</answer>"


@pytest.mark.parametrize(
    "fields",
    [[], ["a", "a"], [("a", "b"), "b"], [()], ["bad tag"], [3]],
)
def test_xml_bad_schema_is_a_config_error(fields: list[object]) -> None:
    with pytest.raises(ConfigError):
        vf.XMLParser(fields=fields)  # type: ignore[arg-type]


# -- ThinkParser / MaybeThinkParser -------------------------------------------------------------


def test_think_parser() -> None:
    p = vf.ThinkParser(extract_fn=vf.extract_boxed_answer)
    assert p.parse("<think>\n\\boxed{1}\n</think>\nso \\boxed{2}") == "2"
    assert p.parse("<think>never closed \\boxed{1}") == ""
    reward = p.get_format_reward_func()
    assert reward(completion=chat("<think>a</think>b")) == 1.0
    assert reward(completion=chat("<think>a</think>   ")) == 0.0  # nothing after thinking
    assert reward(completion=chat("b<think>a</think>c")) == 0.0
    assert reward(completion=chat("<think>a</think><think>b</think>c")) == 0.0
    oracle = p.format_answer("5")
    assert oracle == "<think>\n...\n</think>\n\\boxed{5}"
    assert p.parse_answer(chat(oracle)) == "5"
    assert reward(completion=chat(oracle)) == 1.0


def test_maybe_think_parser() -> None:
    p = vf.MaybeThinkParser(extract_fn=vf.extract_boxed_answer)
    assert p.parse("<think>\\boxed{1}</think>\\boxed{2}") == "2"
    assert p.parse("\\boxed{3}") == "3"
    assert p.parse("thinking...</think>\\boxed{4}") == "4"
    # classic bug: an answer inside unfinished thinking counted
    assert (
        vf.MaybeThinkParser(
            extract_fn=functools.partial(vf.extract_boxed_answer, strict=True)
        ).parse("<think>maybe \\boxed{1}")
        == ""
    )
    reward = p.get_format_reward_func()
    assert reward(completion=chat("plain answer")) == 1.0
    assert reward(completion=chat("<think>a</think>b")) == 1.0
    assert reward(completion=chat("a</think>b")) == 1.0
    assert reward(completion=chat("<think>a")) == 0.0
    assert reward(completion=chat("x<think>a</think>b")) == 0.0
    assert p.format_answer("6") == "\\boxed{6}"
