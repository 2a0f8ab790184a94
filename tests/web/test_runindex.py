"""The byte-offset index behind the viewer: built once, reused while the file is unchanged,
extended when the file grows, rebuilt when it is rewritten; filters and paging over it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from verifiers.testing.runs import write_run
from verifiers.web.runindex import RunIndex, load_index
from verifiers.web.runs import Filters, Run, compare_runs


def test_index_matches_the_file_and_is_cached(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r", 30, rollouts_per_example=3, error_every=10)
    results = run / "results.jsonl"
    idx = load_index(results)
    lines = results.read_bytes().splitlines()
    assert len(idx) == 30
    for i in (0, 7, 29):
        assert idx.read(results, i) == json.loads(lines[i])
    assert list(idx.errored).count(1) == 3
    assert idx.error_types[0] == "ModelError" and idx.error_types[1] == ""
    assert idx.excerpts[4] == "What is 4 + 4? (question 4)"
    cache = run / ".results.index"
    assert cache.is_file()
    again = RunIndex.from_bytes(cache.read_bytes())
    assert list(again.offsets) == list(idx.offsets) and again.example_ids == idx.example_ids


def test_growing_file_is_extended_and_torn_line_waits(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r", 5)
    results = run / "results.jsonl"
    first = load_index(results)
    assert len(first) == 5
    extra = json.dumps({"example_id": "late", "reward": 0.25, "prompt": "hi"})
    with results.open("a") as f:  # one complete record and a torn one (still being written)
        f.write(extra + "\n" + extra[:10])
    grown = load_index(results)
    assert len(grown) == 6 and grown.example_ids[-1] == "late"
    assert grown.offsets[:5] == first.offsets
    with results.open("a") as f:
        f.write(extra[10:] + "\n")
    assert len(load_index(results)) == 7


def test_rewritten_file_is_reindexed(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r", 8)
    results = run / "results.jsonl"
    load_index(results)
    keep = results.read_bytes().splitlines()[5:]
    tmp = results.with_suffix(".tmp")
    tmp.write_bytes(b"\n".join(keep) + b"\n" + b"\n".join(keep) + b"\n")  # longer, different
    os.replace(tmp, results)  # what --resume does: a new file
    idx = load_index(results)
    assert len(idx) == 6 and idx.example_ids == [str(json.loads(k)["example_id"]) for k in keep] * 2


def test_unreadable_cache_beside_falls_back_to_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_run(tmp_path / "r", 4)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (run / ".results.index").mkdir()  # cannot be written as a file
    assert len(load_index(run / "results.jsonl")) == 4
    assert list((tmp_path / "cache" / "verifiers" / "view").glob("*.index"))


def test_filters_paging_and_summary(tmp_path: Path) -> None:
    run = Run.open(write_run(tmp_path / "r", 120, rollouts_per_example=4, error_every=10))
    page = run.page(Filters(), page=3, per_page=50)
    assert page.total == 120 and page.pages == 3 and page.rows[0]["i"] == 100
    errored = run.page(Filters.parse({"errored": "yes"}))
    assert errored.total == 12 and all(r["error_type"] == "ModelError" for r in errored.rows)
    ranged = run.page(Filters.parse({"reward_min": "0.5", "reward_max": "0.6"}))
    assert ranged.rows and all(0.5 <= r["reward"] <= 0.6 for r in ranged.rows)
    found = run.page(Filters.parse({"q": "QUESTION 77)"}))
    assert [r["i"] for r in found.rows] == [77]
    best = run.page(Filters.parse({"sort": "-reward"}), per_page=2)
    assert [r["i"] for r in best.rows] == [119, 118]
    s = run.summary()
    assert s["num_rollouts"] == 120 and s["num_errors"] == 12
    assert s["error_types"] == {"ModelError": 12}
    assert s["metrics"]["format"] == 1.0
    assert set(s["pass_at_k"]) == {"1", "2", "3", "4"}
    assert s["usage"]["prompt_tokens"] == 120 * 20


def test_bad_filter_values_are_ignored_not_errors() -> None:
    f = Filters.parse({"reward_min": "abc", "errored": "maybe", "sort": "evil", "q": " x "})
    assert f == Filters(q="x")


def test_compare_on_shared_examples(tmp_path: Path) -> None:
    a = Run.open(write_run(tmp_path / "a", 10))
    b = Run.open(write_run(tmp_path / "b", 6))
    c = compare_runs(a, b)
    assert c["shared"] == 6 and c["only_a"] == 4 and c["only_b"] == 0
    assert c["better"] + c["worse"] + c["same"] == 6
