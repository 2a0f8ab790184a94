"""``vf-eval``'s progress display: off a terminal a line every interval even while no rollout
finishes (slow rollouts), on a terminal a bar whose total is known before the first rollout."""

from __future__ import annotations

import importlib
import io
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from cli.eval_report import Progress


def _progress_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "rollouts, reward" in line]


def test_piped_progress_prints_every_interval_while_rollouts_are_slow(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress("slow-env", "m", interval=0.2)
    progress.start()
    progress.set_total(0, 4)  # the run is planned; no rollout finishes for a while
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < 3 and time.monotonic() < deadline:
        seen += _progress_lines(capsys.readouterr().err)
        time.sleep(0.05)  # polling for output, not synchronising
    progress.update(1, 4, {"reward": 1.0, "error": None})
    progress.stop()
    seen += _progress_lines(capsys.readouterr().err)
    assert len(seen) >= 3, seen
    assert all(
        line.startswith("slow-env · m: 0/4 rollouts, reward -, errors 0, ") for line in seen[:3]
    )
    assert seen[-1].startswith("slow-env · m: 1/4 rollouts, reward 1.000, errors 0, ")


def test_progress_stops_printing_once_stopped(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress("e", "m", interval=0.05)
    progress.set_total(0, 2)
    progress.stop()
    assert progress._ticker is not None and not progress._ticker.is_alive()
    capsys.readouterr()
    assert _progress_lines(capsys.readouterr().err) == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_knows_its_total_before_the_first_rollout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Terminal())
    progress = Progress("e", "m")
    progress.start()
    progress.set_total(2, 10)  # a resumed run: 2 already there
    task = progress.progress.tasks[0]
    assert (task.completed, task.total) == (2, 10)
    progress.stop()


def exact(completion: vf.Messages, answer: str) -> float:
    return float(completion[-1]["content"] == answer)


async def test_evaluate_reports_the_total_before_any_rollout() -> None:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]
    env = vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))
    events: list[tuple[str, int, int]] = []
    await vf.evaluate_async(
        env,
        model="oracle",
        num_examples=3,
        rollouts_per_example=2,
        on_total=lambda done, total: events.append(("total", done, total)),
        on_progress=lambda done, total, record: events.append(("rollout", done, total)),
    )
    assert events[0] == ("total", 0, 6)
    assert [e[0] for e in events[1:]] == ["rollout"] * 6


def test_the_level_c_auto_chose_is_in_the_bar_and_the_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    piped = Progress("e", "m", interval=3600)
    piped.set_total(0, 2)
    piped.set_concurrency(7)
    piped.update(2, 2, {"reward": 1.0, "error": None})
    piped.stop()
    assert "concurrency 7 (auto)" in _progress_lines(capsys.readouterr().err)[-1]
    monkeypatch.setattr(sys, "stderr", _Terminal())
    bar = Progress("e", "m")
    bar.start()
    bar.set_concurrency(12)
    assert bar.progress.tasks[0].fields["conc"] == "concurrency 12 (auto)"
    bar.stop()


async def test_evaluate_reports_each_concurrency_level_of_c_auto() -> None:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(20)]
    env = vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))
    levels: list[int] = []
    result = await vf.evaluate_async(
        env,
        model="oracle",
        num_examples=20,
        rollouts_per_example=1,
        max_concurrent="auto:8",
        on_concurrency=levels.append,
    )
    assert levels[0] == 4  # the start, before any rollout
    # it rises while the oracle keeps up (and may step back when the machine is slow)
    assert len(levels) > 1 and levels[-1] == result.metadata["concurrency"]["final"]
    assert max(levels) == result.metadata["concurrency"]["peak"] <= 8


def test_after_resume_the_last_progress_line_counts_the_earlier_rollouts(
    classic_envs_path: Path, tmp_path: Path
) -> None:
    """The first run answers wrongly and loses two rollouts to HTTP 500s; the resumed run
    re-runs those two with right answers. Its last progress line must give the reward of the
    whole run (the summary's), not the mean of the two new rollouts."""
    import contextlib
    import json

    from tests.clirun import run_cli
    from verifiers.testing import OpenAITestServer

    solve = importlib.import_module("responders").solve  # on the path: classic_envs_path
    answer_right = False

    def responder(request: dict[str, Any]) -> Any:
        return solve(request) if answer_right else "I do not know."

    out = tmp_path / "run"
    with OpenAITestServer(responder=responder, fault_sequence=["500", "500"]) as server:
        args = ["classic_single", "-m", "toy", "-b", server.base_url, "-n", "6", "-r", "1"]
        args += ["-c", "1", "--max-retries", "0", "-o", str(out), "--samples", "0"]
        with contextlib.chdir(tmp_path):
            first = run_cli(*args, prog="vf-eval")
            assert first.returncode == 0, first.stderr
            assert json.loads((out / "metadata.json").read_text())["summary"]["num_errors"] == 2
            answer_right = True
            resumed = run_cli(*args, "--resume", prog="vf-eval")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((out / "metadata.json").read_text())["summary"]
    assert summary["num_rollouts"] == 6 and summary["num_errors"] == 0
    assert summary["avg_reward"] < 0.5  # four wrong answers, two right ones (1.2 each)
    last = _progress_lines(resumed.stderr)[-1]
    assert last.startswith(
        f"classic_single · toy: 6/6 rollouts, reward {summary['avg_reward']:.3f}, errors 0, "
    ), last
