"""wordle: the multi-turn word game.

The model guesses a hidden five-letter word inside ``<guess>...</guess>``. After every guess
the environment replies with one mark per letter: ``G`` (right letter, right place), ``Y``
(in the word, elsewhere), ``X`` (not in the word, or no more copies of it). Repeated letters
are marked as in the original game: greens first, then yellows while unmatched copies remain.

Reward (weights sum to 1): ``solved`` (0.7) and ``speed`` (0.3: 1.0 for a first-guess solve,
falling linearly to 0.0 for a solve on the last guess). ``guesses_used`` and ``best_letters``
(best ``(greens + yellows / 2) / 5`` over the guesses) are reported as metrics.
"""

from __future__ import annotations

import random
import re
from importlib import resources
from typing import Any

import verifiers as vf

__all__ = ["WordleEnv", "feedback", "load_environment", "load_words"]

WORD_LEN = 5
_WORD = re.compile(r"^[a-z]{5}$")

SYSTEM_PROMPT = """You are playing Wordle. Find the hidden five-letter English word in at most \
{max_guesses} guesses.

Each turn, think briefly, then write exactly one guess as <guess>word</guess>.
After each guess you get one mark per letter:
  G = right letter in the right place
  Y = the letter is in the word but in another place
  X = the letter is not in the word (or not again)
Use the feedback to narrow down the word."""


def load_words() -> list[str]:
    """The bundled list of common five-letter English words (lower case, sorted)."""
    text = resources.files("vf_wordle").joinpath("data/words.txt").read_text("utf-8")
    return [w for w in text.split() if w]


def feedback(guess: str, answer: str) -> str:
    """Marks for ``guess`` against ``answer``: a string of ``G``/``Y``/``X``, one per letter."""
    marks = ["X"] * len(guess)
    unmatched: dict[str, int] = {}
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            marks[i] = "G"
        else:
            unmatched[a] = unmatched.get(a, 0) + 1
    for i, g in enumerate(guess):
        if marks[i] != "G" and unmatched.get(g, 0) > 0:
            marks[i] = "Y"
            unmatched[g] -= 1
    return "".join(marks)


def _guesses(n: int) -> str:
    return f"{n} guess" if n == 1 else f"{n} guesses"


class WordleEnv(vf.MultiTurnEnv):
    """Wordle as a :class:`verifiers.MultiTurnEnv`: one guess per assistant turn."""

    def __init__(self, max_guesses: int = 6, **kwargs: Any) -> None:
        self.max_guesses = max_guesses
        super().__init__(max_turns=max_guesses, **kwargs)

    async def setup_state(self, state: vf.State, **kwargs: Any) -> vf.State:
        state["guesses"] = []  # list of (word or raw text, marks or None when invalid)
        state["solved"] = False
        return state

    def _judge_latest(self, state: vf.State) -> None:
        """Score the newest assistant guess once (idempotent)."""
        assistant = [m for m in state["completion"] if m.get("role") == "assistant"]
        while len(state["guesses"]) < len(assistant):
            message = assistant[len(state["guesses"])]
            raw = self.parser.parse_answer([message]) or ""
            word = raw.strip().lower()
            if _WORD.match(word):
                marks = feedback(word, state["answer"])
                state["guesses"].append((word, marks))
                if marks == "G" * WORD_LEN:
                    state["solved"] = True
            else:
                state["guesses"].append((raw.strip()[:40], None))

    @vf.stop(priority=85)
    async def game_over(self, state: vf.State) -> bool:
        """Solved, or out of guesses.

        Runs before the built-in ``max_turns_reached`` (priority 80), so the last allowed guess
        is judged: a solve on the final guess is a solve.
        """
        self._judge_latest(state)
        return bool(state["solved"]) or len(state["guesses"]) >= self.max_guesses

    async def env_response(
        self, messages: vf.Messages, state: vf.State, **kwargs: Any
    ) -> vf.Messages:
        self._judge_latest(state)
        word, marks = state["guesses"][-1]
        left = self.max_guesses - len(state["guesses"])
        if marks is None:
            text = (
                f"Invalid guess {word!r}: write one five-letter word as <guess>word</guess>. "
                f"That used a guess; {_guesses(left)} left."
            )
        else:
            text = f"{' '.join(word.upper())}\n{' '.join(marks)}\n{_guesses(left)} left."
        return [{"role": "user", "content": text}]

    async def oracle_response(self, state: vf.State) -> vf.Message:
        """The gold play: guess the hidden word."""
        return {"role": "assistant", "content": f"<guess>{state['answer']}</guess>"}


def load_environment(
    num_examples: int = -1,
    seed: int = 0,
    max_guesses: int = 6,
    words: list[str] | None = None,
    **kwargs: Any,
) -> vf.Environment:
    """Build the Wordle environment.

    Args:
        num_examples: number of games (-1: one per word of the list).
        seed: shuffles which words come first.
        max_guesses: guesses per game (the classic game has 6).
        words: answer words to use instead of the bundled list (five letters each).
        **kwargs: passed on to :class:`WordleEnv` / :class:`verifiers.MultiTurnEnv`.
    """
    from datasets import Dataset

    if max_guesses < 1:
        raise vf.ConfigError(f"wordle: max_guesses must be >= 1, not {max_guesses}")
    pool = [w.strip().lower() for w in (words if words is not None else load_words())]
    bad = [w for w in pool if not _WORD.match(w)]
    if bad or not pool:
        raise vf.ConfigError(
            f"wordle: every word must be five letters a-z; got {bad[:5] or 'an empty list'}"
        )
    random.Random(seed).shuffle(pool)
    if num_examples > 0:
        pool = pool[:num_examples]
    rows = [
        {
            "question": f"Game {i + 1}: find the hidden word in {max_guesses} guesses.",
            "answer": word,
            "task": "wordle",
            "info": {"max_guesses": max_guesses},
        }
        for i, word in enumerate(pool)
    ]
    dataset = Dataset.from_list(rows)
    parser = vf.XMLParser(["think", "guess"], answer_field="guess")

    def solved(state: vf.State) -> float:
        """1.0 when the word was found."""
        return 1.0 if state.get("solved") else 0.0

    def speed(state: vf.State) -> float:
        """1.0 for a first-guess solve, down to 0.0 for a solve on the last guess."""
        if not state.get("solved"):
            return 0.0
        if max_guesses == 1:
            return 1.0
        return (max_guesses - len(state["guesses"])) / (max_guesses - 1)

    def guesses_used(state: vf.State) -> float:
        return float(len(state.get("guesses", [])))

    def best_letters(state: vf.State) -> float:
        """Best (greens + yellows / 2) / 5 over all valid guesses."""
        best = 0.0
        for _, marks in state.get("guesses", []):
            if marks:
                best = max(best, (marks.count("G") + marks.count("Y") / 2) / WORD_LEN)
        return best

    rubric = vf.Rubric(
        funcs=[solved, speed, guesses_used, best_letters],
        weights=[0.7, 0.3, 0.0, 0.0],
        parser=parser,
    )
    return WordleEnv(
        max_guesses=max_guesses,
        dataset=dataset,
        eval_dataset=dataset,
        system_prompt=SYSTEM_PROMPT.format(max_guesses=max_guesses),
        parser=parser,
        rubric=rubric,
        **kwargs,
    )
