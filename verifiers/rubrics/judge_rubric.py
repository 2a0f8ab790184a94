"""LLM judges: :class:`JudgeRubric` (one rollout against the gold answer) and
:class:`PairwiseJudgeRubric` (the N rollouts of an example against each other).

The judge is any OpenAI-compatible model: pass an ``openai.AsyncOpenAI`` (classic call shape)
or a :class:`verifiers.Client`. A judge that fails (endpoint error, empty or unreadable verdict)
raises: the rollout's reward is ``None`` with the error recorded, never a silent 0.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from verifiers.clients.base import Client, as_client
from verifiers.errors import ConfigError, EmptyModelResponseError, InvalidModelResponseError
from verifiers.parsers.parser import Parser, content_text
from verifiers.rubrics.rubric import Rubric
from verifiers.types import Messages, SamplingArgs, State

__all__ = [
    "DEFAULT_JUDGE_PROMPT",
    "DEFAULT_PAIRWISE_PROMPT",
    "JudgeRubric",
    "PairwiseJudgeRubric",
]

DEFAULT_JUDGE_PROMPT = """You are checking a response against a reference answer.

Question:
<<<
{question}
>>>

Reference answer:
<<<
{answer}
>>>

Response:
<<<
{response}
>>>

Does the response reach the same final answer as the reference? Reply "yes" or "no" and nothing else."""

DEFAULT_PAIRWISE_PROMPT = """Two assistants answered the same question. Decide which answer is better: \
correct first, then complete, clear and concise.

Question:
<<<
{question}
>>>

Reference answer (may be empty):
<<<
{answer}
>>>

Answer A:
<<<
{response_a}
>>>

Answer B:
<<<
{response_b}
>>>

Explain briefly, then end with exactly one verdict: [[A]], [[B]] or [[TIE]]."""

_VERDICT = re.compile(r"\[\[\s*(A|B|TIE)\s*\]\]", re.IGNORECASE)


def _check_template(template: str, placeholders: tuple[str, ...], what: str) -> None:
    try:
        template.format(**dict.fromkeys(placeholders, ""))
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"{what} cannot be filled ({type(exc).__name__}: {exc}); it may use the placeholders "
            f"{', '.join('{' + p + '}' for p in placeholders)}, and literal braces must be "
            "doubled ({{ }})"
        ) from None


def question_text(prompt: Messages | str) -> str:
    """The question of a prompt: the last user message's text (the last message when there is
    no user message), or the prompt itself when it is a string."""
    if isinstance(prompt, str):
        return prompt
    for message in reversed(prompt):
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return content_text(prompt[-1].get("content")) if prompt else ""


class _JudgeModel:
    """The judge client (created on first use), model and sampling arguments."""

    def __init__(self, client: Any, model: str, sampling_args: SamplingArgs | None) -> None:
        self.raw_client = client
        self.model = model
        self.sampling_args: SamplingArgs = dict(sampling_args or {})
        self._client: Client | None = None if client is None else as_client(client)

    def client(self) -> Client:
        if self._client is None:
            import openai

            try:
                self.raw_client = openai.AsyncOpenAI()
            except openai.OpenAIError as exc:
                raise ConfigError(
                    f"no judge client: {exc}. Pass judge_client=openai.AsyncOpenAI(base_url=..., "
                    "api_key=...) or a verifiers Client, or set OPENAI_API_KEY"
                ) from None
            self._client = as_client(self.raw_client)
        return self._client

    async def ask(self, text: str) -> str:
        response = await self.client().get_response(
            [{"role": "user", "content": text}],
            self.model,
            sampling_args=self.sampling_args or None,
        )
        answer = response.content.strip()
        if not answer:
            raise EmptyModelResponseError(f"judge model {self.model!r} returned an empty answer")
        return answer


class JudgeRubric(Rubric):
    """A rubric whose reward functions ask an LLM judge.

    Reward functions name the class object ``judge`` and call
    ``await judge(prompt, completion, answer, state)``, which returns the judge's text::

        rubric = vf.JudgeRubric(judge_client=AsyncOpenAI(...), judge_model="gpt-4.1-mini")

        async def correct(judge, prompt, completion, answer, state) -> float:
            return 1.0 if "yes" in (await judge(prompt, completion, answer, state)).lower() else 0.0

        rubric.add_reward_func(correct)

    ``judge_prompt`` may use ``{question}`` (the last user message), ``{answer}`` (the gold
    answer) and ``{response}`` (``parser.parse_answer(completion)``). Answers are cached per
    rollout in ``state["judge_response"]`` (judge prompt -> answer), and concurrent identical
    calls within a rollout share one request. ``parallelize_scoring`` is accepted for
    compatibility: async reward functions always run concurrently.
    """

    def __init__(
        self,
        parser: Parser | None = None,
        parallelize_scoring: bool = False,
        judge_client: Any = None,
        judge_model: str = "gpt-4.1-nano",
        judge_sampling_args: SamplingArgs | None = None,
        judge_prompt: str = DEFAULT_JUDGE_PROMPT,
        *,
        funcs: list[Any] | None = None,
        weights: list[float] | None = None,
        score_on_error: bool = False,
    ) -> None:
        # not checked here: as in 0.3.x, a template may hold placeholders of its own that the
        # environment fills before judging (a missing one is reported when judging)
        super().__init__(funcs=funcs, weights=weights, parser=parser, score_on_error=score_on_error)
        self._judge = _JudgeModel(judge_client, judge_model, judge_sampling_args)
        self.judge_prompt = judge_prompt
        self._inflight: dict[tuple[int, str], asyncio.Future[str]] = {}
        self.add_class_object("judge", self.judge)
        self.add_class_object("judge_client", judge_client)
        self.add_class_object("judge_model", judge_model)
        self.add_class_object("judge_prompt", judge_prompt)
        self.add_class_object("judge_sampling_args", self._judge.sampling_args)

    @property
    def judge_client(self) -> Any:
        return self._judge.raw_client

    @property
    def judge_model(self) -> str:
        return self._judge.model

    @property
    def judge_sampling_args(self) -> SamplingArgs:
        return self._judge.sampling_args

    async def judge(
        self,
        prompt: Messages | str,
        completion: Messages | str,
        answer: Any,
        state: State | None = None,
    ) -> str:
        """The judge's answer for this rollout (cached in ``state`` when given)."""
        response = self.parser.parse_answer(completion)
        try:
            text = self.judge_prompt.format(
                question=question_text(prompt), answer=answer, response=response or ""
            )
        except (KeyError, IndexError, ValueError):
            _check_template(self.judge_prompt, ("question", "answer", "response"), "judge_prompt")
            raise
        if state is None:
            return await self._judge.ask(text)
        cache = state.get("judge_response")
        if not isinstance(cache, dict):
            cache = state["judge_response"] = {}
        if text in cache:
            return str(cache[text])
        key = (id(state), text)
        future = self._inflight.get(key)
        if future is None:
            future = asyncio.ensure_future(self._judge.ask(text))
            self._inflight[key] = future
            future.add_done_callback(lambda _: self._inflight.pop(key, None))
        result = await future
        cache[text] = result
        return result


class PairwiseJudgeRubric(Rubric):
    """Relative rewards: an LLM judge compares the N rollouts of one example in pairs.

    Every pair is judged (in both orders when ``both_orders``, to cancel position bias); a win
    scores 1, a tie 0.5 for each side. The group reward function ``pairwise_win_rate`` gives each
    rollout its share of points over the comparisons it took part in (0.5 for a group of one).
    Identical responses tie without a judge call. ``judge_prompt`` may use ``{question}``,
    ``{answer}``, ``{response_a}`` and ``{response_b}`` and must make the judge end with
    ``[[A]]``, ``[[B]]`` or ``[[TIE]]``; a verdict that cannot be read raises.
    ``max_concurrency`` bounds the judge calls in flight per group.
    """

    def __init__(
        self,
        parser: Parser | None = None,
        judge_client: Any = None,
        judge_model: str = "gpt-4.1-nano",
        judge_sampling_args: SamplingArgs | None = None,
        judge_prompt: str = DEFAULT_PAIRWISE_PROMPT,
        *,
        both_orders: bool = True,
        max_concurrency: int = 16,
        weight: float = 1.0,
        score_on_error: bool = False,
    ) -> None:
        _check_template(
            judge_prompt, ("question", "answer", "response_a", "response_b"), "judge_prompt"
        )
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency}")
        super().__init__(parser=parser, score_on_error=score_on_error)
        self._judge = _JudgeModel(judge_client, judge_model, judge_sampling_args)
        self.judge_prompt = judge_prompt
        self.both_orders = both_orders
        self.max_concurrency = max_concurrency
        self.add_group_reward_func(self.pairwise_win_rate, weight)

    @property
    def judge_client(self) -> Any:
        return self._judge.raw_client

    @property
    def judge_model(self) -> str:
        return self._judge.model

    async def compare(self, question: str, answer: str, response_a: str, response_b: str) -> str:
        """``"A"``, ``"B"`` or ``"TIE"``: the judge's verdict on one ordered pair."""
        if response_a == response_b:
            return "TIE"
        text = self.judge_prompt.format(
            question=question, answer=answer, response_a=response_a, response_b=response_b
        )
        reply = await self._judge.ask(text)
        verdicts = _VERDICT.findall(reply)
        if not verdicts:
            raise InvalidModelResponseError(
                f"judge model {self.judge_model!r} gave no [[A]]/[[B]]/[[TIE]] verdict: "
                f"{reply[-200:]!r}"
            )
        return str(verdicts[-1]).upper()

    async def pairwise_win_rate(
        self, prompts: list[Messages | str], completions: list[Messages | str], answers: list[Any]
    ) -> list[float]:
        n = len(completions)
        if n < 2:
            return [0.5] * n
        question = question_text(prompts[0])
        answer = "" if answers[0] is None else str(answers[0])
        responses = [self.parser.parse_answer(c) or "" for c in completions]
        games = [
            (i, j) for i in range(n) for j in range(n) if i < j or (self.both_orders and i > j)
        ]
        gate = asyncio.Semaphore(self.max_concurrency)

        async def play(i: int, j: int) -> str:
            async with gate:
                return await self.compare(question, answer, responses[i], responses[j])

        try:  # the first failure cancels the comparisons still running
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(play(i, j)) for i, j in games]
        except ExceptionGroup as group:
            raise group.exceptions[0] from None
        verdicts = [t.result() for t in tasks]
        points = [0.0] * n
        played = [0] * n
        for (i, j), verdict in zip(games, verdicts, strict=True):
            played[i] += 1
            played[j] += 1
            if verdict == "A":
                points[i] += 1.0
            elif verdict == "B":
                points[j] += 1.0
            else:
                points[i] += 0.5
                points[j] += 0.5
        return [p / g for p, g in zip(points, played, strict=True)]


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
