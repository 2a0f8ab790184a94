from __future__ import annotations

import json
from pathlib import Path

import pytest
from vf_research import FinishParser, make_tools
from vf_research.corpus import Corpus, Document, build_stdlib_corpus, generate_questions, normalize

import verifiers as vf
from verifiers.testing import ScriptedClient


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return build_stdlib_corpus()


def test_stdlib_corpus_and_search(corpus: Corpus) -> None:
    assert len(corpus.documents) > 300
    top = [d.id for d, _ in corpus.search("dedent remove common leading whitespace", k=3)]
    assert "textwrap.dedent" in top
    assert corpus.search("zzzqqq") == []


def test_questions_are_answerable_from_their_documents(corpus: Corpus) -> None:
    questions = generate_questions(corpus, 80, seed=1)
    assert questions == generate_questions(corpus, 80, seed=1)
    assert {q["kind"] for q in questions} == {"which_module", "identify", "default", "compare"}
    for q in questions:
        docs = [corpus.get(i) for i in q["doc_ids"]]
        assert all(d is not None for d in docs)
        assert [a["doc_id"] for t, a in q["plan"] if t == "open"] == q["doc_ids"]
        (doc, *others) = docs
        assert doc is not None
        if q["kind"] == "default":
            assert normalize(q["answer"]) and q["answer"] in doc.text.split("\n", 1)[0]
        elif q["kind"] == "identify":
            assert q["answer"] == doc.id
        elif q["kind"] == "which_module":
            assert doc.id.startswith(q["answer"] + ".")
        else:
            (other,) = others
            assert other is not None and doc.n_params != other.n_params
            bigger = doc if (doc.n_params or 0) > (other.n_params or 0) else other
            assert q["answer"] == bigger.id
            # the parameters are countable from the signature line of each document
            sig = bigger.text.split("\n", 1)[0]
            assert sig.startswith(bigger.id + "(")


def test_open_pages_long_documents() -> None:
    corpus = Corpus([Document(id="long", title="Long", text="x" * 4500)])
    search, open_, finish = make_tools(corpus)
    first = open_("long")
    assert first.count("x") == 2000 and "offset=2000" in first
    last = open_("long", offset=4000)
    assert last.count("x") == 500 and "more" not in last
    with pytest.raises(ValueError, match="no document 'nope'"):
        open_("nope")
    assert search("nothing matches") == "no results; try other keywords"
    assert finish("x") == "answer recorded"


def test_normalize_and_finish_parser() -> None:
    assert normalize("  `textwrap.dedent()`. ") == "textwrap.dedent"
    assert normalize("'strict'") == "strict" and normalize(None) == ""
    parser = FinishParser()
    calls = [
        {
            "id": "1",
            "type": "function",
            "function": {"name": "finish", "arguments": json.dumps({"answer": "json"})},
        }
    ]
    assert (
        parser.parse_answer([{"role": "assistant", "content": None, "tool_calls": calls}]) == "json"
    )
    assert parser.parse_answer([{"role": "assistant", "content": "<answer>re</answer>"}]) == "re"
    assert parser.parse_answer([{"role": "assistant", "content": "no idea"}]) is None


async def test_finish_ends_the_rollout_and_wrong_answers_score_zero() -> None:
    env = vf.load_environment("research", num_examples=1)
    row = env.get_rows("eval")[0]

    def finish(answer: str) -> dict[str, object]:
        return {"tool_calls": [{"name": "finish", "arguments": {"answer": answer}}]}

    for answer, reward in [(row["answer"], 1.0), ("definitely wrong", 0.0)]:
        client = ScriptedClient(
            [{"tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}, finish(answer)]
        )
        result = await vf.evaluate_async(
            env, client=client, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
        )
        (state,) = result.states
        assert state["stop_condition"] == "finished"
        assert state["turn"] == 2
        assert state["reward"] == reward


def test_custom_corpus_files(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "title": "Alpha", "text": "The code is 7731."}) + "\n")
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "What is the code?", "answer": "7731", "doc_id": "a"}))
    env = vf.load_environment("research", corpus_path=str(corpus), questions_path=str(qs))
    report = vf.evaluate(env, model="oracle", num_examples=-1, rollouts_per_example=1)
    assert report.records[0]["reward"] == 1.0
    with pytest.raises(vf.ConfigError, match="together"):
        vf.load_environment("research", corpus_path=str(corpus))
    with pytest.raises(vf.ConfigError, match="no such file"):
        vf.load_environment("research", corpus_path=str(corpus), questions_path="/nope.jsonl")


async def test_judge_reward_through_a_real_endpoint() -> None:
    from verifiers.testing import OpenAITestServer

    async with OpenAITestServer(responder=lambda req: "yes") as judge:
        env = vf.load_environment(
            "research",
            num_examples=2,
            use_judge=True,
            judge_model="toy-model",
            judge_base_url=judge.base_url,
        )
        result = await vf.evaluate_async(
            env, model="oracle", num_examples=-1, rollouts_per_example=1
        )
        judged = len(judge.requests)
    assert [r["reward"] for r in result.records] == [1.0, 1.0]
    assert [r["metrics"]["judge_correct"] for r in result.records] == [1.0, 1.0]
    assert judged == 2
