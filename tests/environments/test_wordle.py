from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vf_wordle import feedback, load_words

import verifiers as vf
from verifiers.testing import ScriptedClient


@pytest.mark.parametrize(
    ("guess", "answer", "marks"),
    [
        ("crane", "crane", "GGGGG"),
        ("eerie", "there", "YXYXG"),  # one spare 'e' to mark yellow, the rest grey
        ("llama", "hello", "YYXXX"),
        ("speed", "abide", "XXYXY"),
        ("zzzzz", "hello", "XXXXX"),
    ],
)
def test_feedback_marks_repeated_letters_like_the_game(guess: str, answer: str, marks: str) -> None:
    assert feedback(guess, answer) == marks


def test_bundled_words_are_distinct_five_letter_words() -> None:
    words = load_words()
    assert len(words) > 500
    assert len(set(words)) == len(words)
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in words)


async def test_game_gives_feedback_and_partial_credit_by_turns() -> None:
    env = vf.load_environment("wordle", words=["there"])
    client = ScriptedClient(["<guess>eerie</guess>", "I think it is THERE", "<guess>There</guess>"])
    result = await vf.evaluate_async(
        env, client=client, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    (state,) = result.states
    replies = [m["content"] for m in state["completion"] if m["role"] == "user"]
    assert replies[0] == "E E R I E\nY X Y X G\n5 guesses left."
    assert replies[1].startswith("Invalid guess")
    assert state["solved"] is True
    assert state["stop_condition"] == "game_over"
    # solved on guess 3 of 6: 0.7 + 0.3 * (6 - 3) / 5
    assert state["reward"] == pytest.approx(0.88)
    assert state["metrics"]["guesses_used"] == 3.0


async def test_unsolved_game_scores_zero_after_max_guesses() -> None:
    env = vf.load_environment("wordle", words=["there"], max_guesses=3)
    client = ScriptedClient(["<guess>three</guess>"] * 3)
    result = await vf.evaluate_async(
        env, client=client, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    (state,) = result.states
    assert state["turn"] == 3 and state["solved"] is False
    assert state["reward"] == 0.0
    assert state["metrics"]["best_letters"] == pytest.approx(
        (3 + 2 / 2) / 5
    )  # t,h,e green; r,e yellow


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(vf.ConfigError, match="five letters"):
        vf.load_environment("wordle", words=["toolong"])
    with pytest.raises(vf.ConfigError, match="max_guesses"):
        vf.load_environment("wordle", max_guesses=0)


@given(
    guess=st.text(alphabet="abcde", min_size=5, max_size=5),
    answer=st.text(alphabet="abcde", min_size=5, max_size=5),
)
def test_feedback_properties(guess: str, answer: str) -> None:
    from collections import Counter

    marks = feedback(guess, answer)
    assert [m == "G" for m in marks] == [g == a for g, a in zip(guess, answer, strict=True)]
    # each letter is marked (green or yellow) as often as it can be matched, no more
    common = Counter(guess) & Counter(answer)
    for letter in set(guess):
        marked = sum(1 for g, m in zip(guess, marks, strict=True) if g == letter and m != "X")
        assert marked == common[letter]
    # yellows go to the earliest unmatched copies
    for letter in set(guess):
        spare = [i for i, g in enumerate(guess) if g == letter and marks[i] != "G"]
        yellow = [i for i in spare if marks[i] == "Y"]
        assert yellow == spare[: len(yellow)]


async def test_solve_on_the_last_allowed_guess_counts() -> None:
    env = vf.load_environment("wordle", words=["there"], max_guesses=3)
    client = ScriptedClient(
        ["<guess>three</guess>", "<guess>other</guess>", "<guess>there</guess>"]
    )
    result = await vf.evaluate_async(
        env, client=client, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    (state,) = result.states
    assert state["solved"] is True
    assert state["stop_condition"] == "game_over"
    assert state["metrics"]["guesses_used"] == 3.0
    # solved, on the last guess: 0.7 + 0.3 * 0
    assert state["reward"] == pytest.approx(0.7)


async def test_one_guess_left_is_singular() -> None:
    env = vf.load_environment("wordle", words=["there"], max_guesses=3)
    client = ScriptedClient(
        ["<guess>three</guess>", "<guess>other</guess>", "<guess>their</guess>"]
    )
    result = await vf.evaluate_async(
        env, client=client, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    (state,) = result.states
    replies = [m["content"] for m in state["completion"] if m["role"] == "user"]
    assert replies[1].endswith("\n1 guess left.")
