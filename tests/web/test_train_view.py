"""Training runs in the viewer, over its HTTP routes (no browser): the incremental metrics
endpoint returns only what was appended, starts over when the file was rewritten, never
returns a torn line, bounds what one request reads, and escapes what it returns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verifiers.web import trainrun
from verifiers.web.trainrun import TrainRun, read_lines
from verifiers.web.viewer import Viewer


def _row(step: int, **extra: Any) -> str:
    return json.dumps(
        {"step": step, "reward": step / 10, "counts": {"errored_rollouts": 1}, **extra}
    )


def _write(path: Path, steps: range, mode: str = "a") -> None:
    with path.open(mode) as f:
        f.write("".join(_row(s) + "\n" for s in steps))


def _get(viewer: Viewer, target: str) -> dict[str, Any]:
    resp = viewer.handle(target)
    assert resp.status == 200, resp.body
    assert resp.content_type == "application/json"
    out = json.loads(resp.body)
    assert isinstance(out, dict)
    return out


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "runs" / "r1"
    d.mkdir(parents=True)
    _write(d / "metrics.jsonl", range(5), "w")
    return d


def test_metrics_since_an_offset_are_only_the_new_rows(run_dir: Path) -> None:
    v = Viewer(run_dir.parent)
    first = _get(v, "/run/r1/-/metrics?since=0")
    assert first["cols"]["step"] == [0, 1, 2, 3, 4]
    assert first["cols"]["counts/errored_rollouts"] == [1] * 5
    assert first["offset"] == first["size"] and not first["reset"]
    again = _get(v, f"/run/r1/-/metrics?since={first['offset']}&last=4")
    assert again["cols"] == {"step": []}
    # a line being written is not returned until it is complete
    with (run_dir / "metrics.jsonl").open("a") as f:
        f.write(_row(5) + "\n" + _row(6)[:10])
    more = _get(v, f"/run/r1/-/metrics?since={first['offset']}&last=4")
    assert more["cols"]["step"] == [5] and more["offset"] < more["size"]
    with (run_dir / "metrics.jsonl").open("a") as f:
        f.write(_row(6)[10:] + "\n")
    rest = _get(v, f"/run/r1/-/metrics?since={more['offset']}&last=5")
    assert rest["cols"]["step"] == [6]


def test_a_rewritten_file_is_read_again_from_the_start(run_dir: Path) -> None:
    v = Viewer(run_dir.parent)
    first = _get(v, "/run/r1/-/metrics?since=0")
    assert _get(v, f"/run/r1/-/metrics?since={first['offset']}&last=4&crc={first['crc']}")[
        "cols"
    ] == {"step": []}
    # a resume from step 3 keeps steps 0-2 and trains 3, 4, ... again: the line that ends at
    # the offset the page has is step 4 again, of the same length, but another line
    _write(run_dir / "metrics.jsonl", range(3), "w")
    with (run_dir / "metrics.jsonl").open("a") as f:
        f.write("".join(_row(s).replace("0.", "9.") + "\n" for s in range(3, 6)))
    after = _get(v, f"/run/r1/-/metrics?since={first['offset']}&last=4&crc={first['crc']}")
    assert after["reset"] and after["cols"]["step"] == [0, 1, 2, 3, 4, 5]
    assert after["cols"]["reward"][3:] == [9.3, 9.4, 9.5]
    # an offset past the end (the run started over) also starts over
    _write(run_dir / "metrics.jsonl", range(1), "w")
    short = _get(v, f"/run/r1/-/metrics?since={after['offset']}&last=5")
    assert short["reset"] and short["cols"]["step"] == [0]


def test_one_request_reads_a_bounded_chunk(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = run_dir / "metrics.jsonl"
    _write(path, range(5, 2000))
    chunk = read_lines(path, 0, None, limit=4096)
    assert 0 < len(chunk.lines) < 100 and chunk.end <= 4096 < chunk.size
    # a line longer than a whole chunk is skipped, not parsed, and reading goes on after it
    with path.open("a") as f:
        f.write('{"step": 2000, "x": "' + "y" * 10_000 + '"}\n' + _row(2001) + "\n")
    seen: list[int] = []
    since, last, skipped = 0, None, 0
    monkeypatch.setattr(trainrun, "MAX_CHUNK", 8192)
    monkeypatch.setattr(trainrun, "MAX_LINE", 8000)
    run = TrainRun(run_dir)
    while True:
        got = run.metrics(since, last)
        seen += got["cols"]["step"]
        skipped += got["skipped"]
        if got["offset"] == since:
            break
        since, last = got["offset"], (seen[-1] if seen else None)
    assert seen == [*range(2000), 2001] and skipped == 1


def test_answers_escape_html_and_stay_in_the_root(run_dir: Path) -> None:
    evil = "</script><img src=x>"
    _write(run_dir / "metrics.jsonl", range(5, 6))
    with (run_dir / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 6, evil: 1.0}) + "\n")
    (run_dir / "run.json").write_text(json.dumps({"kind": "train", "env": evil, "status": evil}))
    v = Viewer(run_dir.parent)
    raw = v.handle("/run/r1/-/metrics?since=0").body
    assert b"<" not in raw and b">" not in raw
    assert evil in json.loads(raw)["cols"]
    page = v.handle("/run/r1/").body.decode()
    assert evil not in page and "&lt;/script&gt;&lt;img src=x&gt;" in page
    assert v.handle("/run/..%2F..%2Fetc/-/metrics").status == 404
    assert v.handle("/run/r1/-/nothing").status == 404
    assert v.handle("/run/r1/-/step/3").status == 404  # no rollouts.jsonl


def test_step_rollouts_and_reward_quantiles(run_dir: Path) -> None:
    log = run_dir / "rollouts.jsonl"
    rows = [
        {"step": s, "rewards": [0.0, 0.5, 1.0, float(s)], "rollouts": [{"reward": 1.0}]}
        for s in range(3)
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    v = Viewer(run_dir.parent)
    got = _get(v, "/run/r1/-/rewards?since=0")
    assert got["steps"] == [0, 1, 2] and got["n"] == [4, 4, 4]
    assert got["q"][2] == [0.0, 0.0, 0.5, 1.0, 2.0]
    assert _get(v, "/run/r1/-/step/1")["rewards"] == [0.0, 0.5, 1.0, 1.0]
    with log.open("a") as f:  # appended later: the step index extends
        f.write(
            json.dumps({"step": 3, "rewards": [], "rollouts": [], "rollouts_dropped": 4}) + "\n"
        )
    assert _get(v, "/run/r1/-/step/3")["rollouts_dropped"] == 4


def test_runs_list_and_overlay_page(run_dir: Path) -> None:
    other = run_dir.parent / "r2"
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"kind": "train", "status": "running"}))
    v = Viewer(run_dir.parent)
    listing = v.handle("/").body.decode()
    assert 'value="r1"' in listing and 'value="r2"' in listing  # overlay checkboxes
    page = v.handle("/train?run=r1&run=r2").body.decode()
    assert page.count('class="train-run"') == 2 and 'data-single="no"' in page
    assert v.handle("/train?run=r1&run=nope").status == 404
    assert Viewer(run_dir).start_path() == "/run/@root/"


def test_a_running_run_whose_process_is_gone_reads_as_died(tmp_path: Path) -> None:
    """``vf train`` killed with SIGKILL never writes its last status: a run marked running
    whose process (on this machine) is gone shows as ``died``, not running forever."""
    import os
    import socket
    import subprocess
    import sys

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    cases = {
        "dead": ({"pid": gone.pid, "host": host}, "died"),
        "alive": ({"pid": os.getpid(), "host": host}, "running"),
        "elsewhere": ({"pid": gone.pid, "host": host + "-other"}, "running"),
        "unsaid": ({}, "running"),
    }
    for name, (extra, _) in cases.items():
        d = tmp_path / name
        d.mkdir()
        (d / "run.json").write_text(json.dumps({"kind": "train", "status": "running", **extra}))
        (d / "metrics.jsonl").write_text(_row(1) + "\n")
    v = Viewer(tmp_path)
    for name, (_, expected) in cases.items():
        assert _get(v, f"/run/{name}/-/metrics?since=0")["status"] == expected, name
        assert TrainRun(tmp_path / name).status() == expected
