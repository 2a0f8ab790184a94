"""research: deep-research style questions over a local corpus with search/open/finish tools.

The model searches the corpus (BM25), opens documents, and submits its answer with
``finish(answer)``, which ends the rollout. Reward: normalised exact match with the gold
answer; ``use_judge=True`` adds an LLM judge (:class:`verifiers.JudgeRubric`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import verifiers as vf
from vf_research.corpus import (
    Corpus,
    build_stdlib_corpus,
    generate_questions,
    load_corpus_file,
    normalize,
)

__all__ = ["FinishParser", "ResearchEnv", "load_environment", "make_tools"]

SYSTEM_PROMPT = (
    "You answer questions about a document collection (the Python standard library's "
    "documentation). Use `search` to find candidate documents, `open` to read them, and call "
    "`finish` with your final answer, exactly in the form the question asks for. Base the answer "
    "on what you read, not on memory."
)
PAGE_CHARS = 2000


def make_tools(corpus: Corpus) -> list[Callable[..., str]]:
    """The ``search``, ``open`` and ``finish`` tools over ``corpus``."""

    def search(query: str, k: int = 5) -> str:
        """Search the documents by keywords.

        Args:
            query: keywords, e.g. "wrap text paragraph width".
            k: how many results to return (1-10).

        Returns:
            One line per hit: the document id, then the first line of the document.
        """
        hits = corpus.search(query, k=max(1, min(int(k), 10)))
        if not hits:
            return "no results; try other keywords"
        lines = []
        for doc, _ in hits:
            first = doc.text.strip().splitlines()[0] if doc.text.strip() else ""
            lines.append(f"{doc.id}: {first[:160]}")
        return "\n".join(lines)

    def open(doc_id: str, offset: int = 0) -> str:
        """Read a document.

        Args:
            doc_id: a document id from the search results, e.g. "textwrap.fill".
            offset: character offset to continue reading a long document from.

        Returns:
            Up to 2000 characters of the document, and the next offset when there is more.
        """
        doc = corpus.get(doc_id)
        if doc is None:
            raise ValueError(f"no document {doc_id!r}; use an id from the search results")
        start = max(0, int(offset))
        chunk = doc.text[start : start + PAGE_CHARS]
        more = start + PAGE_CHARS < len(doc.text)
        tail = f"\n[... more: call open with offset={start + PAGE_CHARS}]" if more else ""
        return f"# {doc.title}\n{chunk}{tail}"

    def finish(answer: str) -> str:
        """Submit the final answer; this ends the task.

        Args:
            answer: the answer, in the form the question asks for.

        Returns:
            A confirmation.
        """
        return "answer recorded"

    return [search, open, finish]


class FinishParser(vf.Parser):
    """The answer is the ``answer`` argument of the model's last ``finish`` call (or, when it
    never called ``finish``, the last ``<answer>`` of its text)."""

    def __init__(self) -> None:
        super().__init__()
        self._fallback = vf.XMLParser(["answer"])

    def parse_answer(self, completion: vf.Messages | str) -> str | None:
        if isinstance(completion, str):
            return self._fallback.parse_answer(completion)
        for message in reversed(completion):
            for call in reversed(message.get("tool_calls") or []):
                fn = call.get("function") or {}
                if fn.get("name") != "finish":
                    continue
                args = fn.get("arguments")
                try:
                    parsed = json.loads(args) if isinstance(args, str) else args
                except ValueError:
                    continue
                if isinstance(parsed, dict) and isinstance(parsed.get("answer"), str):
                    return str(parsed["answer"])
        return self._fallback.parse_answer(completion)


class ResearchEnv(vf.ToolEnv):
    """A :class:`verifiers.ToolEnv` that stops once ``finish`` is called."""

    @vf.stop
    async def finished(self, state: vf.State) -> bool:
        completion = state["completion"]
        last = completion[-1] if completion else {}
        return any(
            (c.get("function") or {}).get("name") == "finish" for c in last.get("tool_calls") or []
        )

    async def oracle_response(self, state: vf.State) -> vf.Message:
        """Replay the question's plan (search, open the source documents), then finish."""
        plan = [*state["info"]["plan"], ["finish", {"answer": state["answer"]}]]
        step = sum(1 for m in state["completion"] if m.get("role") == "assistant")
        name, args = plan[min(step, len(plan) - 1)]
        return vf.tool_call_message(vf.tool_call(name, args, id=f"call_{step}"))


def _judge_rubric(
    parser: vf.Parser, judge_model: str, judge_base_url: str | None, judge_api_key_var: str
) -> vf.Rubric:
    import openai

    client = openai.AsyncOpenAI(
        base_url=judge_base_url, api_key=os.environ.get(judge_api_key_var) or "EMPTY"
    )

    async def judge_correct(
        judge: Any, prompt: Any, completion: Any, answer: str, state: Any
    ) -> float:
        """1.0 when the judge says the submitted answer matches the reference."""
        verdict = await judge(prompt, completion, answer, state)
        return 1.0 if verdict.strip().lower().startswith("yes") else 0.0

    return vf.JudgeRubric(
        parser=parser,
        judge_client=client,
        judge_model=judge_model,
        funcs=[judge_correct],
        weights=[0.5],
    )


def load_environment(
    num_examples: int = 100,
    seed: int = 0,
    max_turns: int = 12,
    corpus_path: str | None = None,
    questions_path: str | None = None,
    use_judge: bool = False,
    judge_model: str = "gpt-4.1-mini",
    judge_base_url: str | None = None,
    judge_api_key_var: str = "OPENAI_API_KEY",
    system_prompt: str = SYSTEM_PROMPT,
    **kwargs: Any,
) -> vf.Environment:
    """Build the research environment.

    Args:
        num_examples: number of questions (generated from the corpus).
        seed: seed of the question generator.
        max_turns: model calls per rollout.
        corpus_path: a JSONL corpus (``id``, ``title``, ``text``) instead of the standard
            library's documentation; needs ``questions_path``.
        questions_path: JSONL questions (``question``, ``answer``, ``doc_id``, optional
            ``query``) for ``corpus_path``.
        use_judge: add an LLM judge reward (``judge_correct``) next to exact match.
        judge_model, judge_base_url, judge_api_key_var: the judge's OpenAI-compatible endpoint.
        system_prompt: instructions to the model.
        **kwargs: passed on to :class:`verifiers.ToolEnv`.
    """
    from pathlib import Path

    if num_examples < 1:
        raise vf.ConfigError(f"research: num_examples must be >= 1, not {num_examples}")
    if (corpus_path is None) != (questions_path is None):
        raise vf.ConfigError("research: give corpus_path and questions_path together")
    if corpus_path is not None and questions_path is not None:
        for p in (corpus_path, questions_path):
            if not Path(p).is_file():
                raise vf.ConfigError(f"research: no such file {p!r}")
        corpus = load_corpus_file(corpus_path)
        questions = []
        for n, line in enumerate(Path(questions_path).read_text("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            q = json.loads(line)
            missing = {"question", "answer", "doc_id"} - set(q)
            if missing:
                raise vf.ConfigError(
                    f"research: {questions_path}:{n} lacks {', '.join(sorted(missing))}"
                )
            q["doc_ids"] = [q["doc_id"]]
            q["plan"] = [
                ["search", {"query": q.get("query", q["question"])}],
                ["open", {"doc_id": q["doc_id"]}],
            ]
            q.setdefault("kind", "custom")
            questions.append(q)
        questions = questions[:num_examples]
    else:
        corpus = build_stdlib_corpus()
        questions = generate_questions(corpus, num_examples, seed=seed)
    rows = [
        {
            "question": q["question"],
            "answer": str(q["answer"]),
            "task": f"research-{q['kind']}",
            # JSON text: plans mix argument types that Arrow cannot hold in one column
            "info": json.dumps({"doc_ids": q["doc_ids"], "plan": q["plan"], "kind": q["kind"]}),
        }
        for q in questions
    ]
    parser = FinishParser()

    def exact_match(completion: vf.Messages, answer: str) -> float:
        """1.0 when the submitted answer equals the gold answer after normalisation."""
        got = normalize(parser.parse_answer(completion))
        return 1.0 if got and got == normalize(answer) else 0.0

    # with a judge, the two rewards share the weight so that a correct answer still scores 1.0
    weight = 0.5 if use_judge else 1.0
    rubric: vf.Rubric = vf.Rubric(funcs=[exact_match], weights=[weight], parser=parser)
    if use_judge:
        rubric = vf.RubricGroup(
            [rubric, _judge_rubric(parser, judge_model, judge_base_url, judge_api_key_var)]
        )
    return ResearchEnv(
        tools=make_tools(corpus),
        max_turns=max_turns,
        dataset=rows,
        eval_dataset=rows,
        system_prompt=system_prompt,
        parser=parser,
        rubric=rubric,
        **kwargs,
    )
