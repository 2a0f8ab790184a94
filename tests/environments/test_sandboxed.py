"""code, python-repl and swe-lite run the model's code in the bwrap sandbox by default."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from vf_code import load_tasks
from vf_python_repl import load_problems, parse_integer
from vf_python_repl.problems import generate as generate_problems
from vf_swe_lite import load_bugs
from vf_swe_lite.inject import apply_bug, candidate_bugs, repo_files

import verifiers as vf
from verifiers.sandbox.bwrap import bwrap_available
from verifiers.testing import ScriptedClient

pytestmark = pytest.mark.skipif(
    not bwrap_available(), reason="needs bubblewrap (apt-get install bubblewrap)"
)


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args}]}


@pytest.mark.parametrize("name", ["code", "python-repl", "swe-lite"])
def test_default_backend_is_bwrap(name: str) -> None:
    env = vf.load_environment(name, num_examples=1)
    assert env.sandbox_backend is None  # None = the platform default ...
    from verifiers.sandbox import default_backend

    assert default_backend() == "bwrap"  # ... which is bubblewrap here


# ------------------------------------------------------------------------------------ code


def test_bundled_code_tasks_are_well_formed() -> None:
    tasks = load_tasks()
    assert len(tasks) == 30
    assert len({t["task_id"] for t in tasks}) == 30
    for t in tasks:
        assert t["entry_point"] in t["solution"] and t["entry_point"] in t["prompt"]
        assert len(t["tests"]) >= 2


async def test_code_partial_credit_and_isolation(tmp_path: Path) -> None:
    env = vf.load_environment("code", num_examples=1)  # run_length_encode, 5 tests
    marker = tmp_path / "escaped"
    attempt = (
        "```python\n"
        "import os, socket\n"
        f"try:\n    open({str(marker)!r}, 'w').write('x')\nexcept OSError:\n    pass\n"
        "def run_length_encode(s):\n"
        "    return ''.join(f'{c}1' for c in s)  # right only when no character repeats\n"
        "```"
    )
    result = await vf.evaluate_async(
        env,
        client=ScriptedClient([attempt]),
        model="m",
        keep_states=True,
        num_examples=-1,
        rollouts_per_example=1,
    )
    (state,) = result.states
    assert state["error"] is None
    statuses = [r["status"] for r in state["test_results"]]
    assert statuses.count("passed") == 3 and len(statuses) == 5
    assert state["reward"] == pytest.approx(3 / 5)
    assert not marker.exists()  # the host file system is out of reach


async def test_code_hanging_program_times_out_and_scores_zero() -> None:
    env = vf.load_environment("code", num_examples=1, test_timeout=1.0)
    hang = "```python\ndef run_length_encode(s):\n    while True:\n        pass\n```"
    result = await vf.evaluate_async(
        env,
        client=ScriptedClient([hang]),
        model="m",
        keep_states=True,
        num_examples=-1,
        rollouts_per_example=1,
    )
    (state,) = result.states
    assert state["reward"] == 0.0
    assert state["metrics"]["tests_timeout"] == 5.0


@pytest.mark.parametrize(
    "program", ["import sys\nsys.exit(0)", "import os\nos._exit(0)", "raise SystemExit"]
)
async def test_code_program_exiting_at_import_passes_no_test(program: str) -> None:
    env = vf.load_environment("code", num_examples=1)
    reply = f"```python\n{program}\n```"
    result = await vf.evaluate_async(
        env,
        client=ScriptedClient([reply]),
        model="m",
        keep_states=True,
        num_examples=-1,
        rollouts_per_example=1,
    )
    (state,) = result.states
    assert state["reward"] == 0.0
    assert {r["status"] for r in state["test_results"]} == {"failed"}
    assert "exited before the test ran" in state["test_results"][0]["detail"]


# ------------------------------------------------------------------------------ python-repl


def test_bundled_problems_match_the_generator() -> None:
    assert load_problems() == generate_problems(100, seed=2026)


def test_parse_integer() -> None:
    assert parse_integer("1,234,567") == 1234567
    assert parse_integer(" 42 ") == 42
    assert parse_integer("12 or 13") is None
    assert parse_integer(None) is None


async def test_repl_state_persists_between_calls_in_the_sandbox() -> None:
    env = vf.load_environment("python-repl", num_examples=1)
    answer = env.get_rows("eval")[0]["answer"]
    client = ScriptedClient(
        [
            _call("python", code="import os\nx = 20"),
            _call("python", code="x + 1"),
            _call("python", code="print(os.getuid())"),
            f"<answer>{answer}</answer>",
        ]
    )
    result = await vf.evaluate_async(
        env, client=client, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    (state,) = result.states
    outputs = [m["content"] for m in state["completion"] if m["role"] == "tool"]
    assert "21" in outputs[1]
    assert outputs[2].split()[0] != "0"  # not root inside the sandbox
    assert state["reward"] == 1.0
    assert state["metrics"]["python_cells"] == 3.0


# --------------------------------------------------------------------------------- swe-lite


def test_pristine_repository_passes_and_every_bug_breaks_it(tmp_path: Path) -> None:
    files = repo_files()
    bugs = load_bugs()
    assert len(bugs) >= 60
    assert len({b.bug_id for b in bugs}) == len(bugs)
    assert {b.kind for b in bugs} >= {"compare", "arith", "const", "boolop"}
    assert all(b.file.startswith("minilib/") for b in bugs)

    def run(tree: dict[str, str], where: Path) -> subprocess.CompletedProcess[str]:
        for path, text in tree.items():
            (where / path).parent.mkdir(parents=True, exist_ok=True)
            (where / path).write_text(text)
        return subprocess.run(
            [sys.executable, "-m", "unittest", "-q"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert run(files, tmp_path / "clean").returncode == 0
    for i, bug in enumerate(
        bugs[::9]
    ):  # a sample: the full check is `python -m vf_swe_lite.inject`
        assert run(apply_bug(files, bug), tmp_path / f"bug{i}").returncode != 0, bug.bug_id


def test_candidate_mutations_are_one_line_edits() -> None:
    files = repo_files()
    for bug in candidate_bugs(files)[:50]:
        mutated = apply_bug(files, bug)
        changed = [p for p in files if files[p] != mutated[p]]
        assert changed == [bug.file]
        before, after = files[bug.file].splitlines(), mutated[bug.file].splitlines()
        assert sum(a != b for a, b in zip(before, after, strict=True)) == 1


async def test_swe_lite_editing_tests_does_not_help_but_fixing_does() -> None:
    env = vf.load_environment("swe-lite", num_examples=1)
    (bug,) = env.get_rows("eval")[0]["info"]["bugs"]
    cheat = ScriptedClient(
        [
            _call("bash", command="rm -rf tests && mkdir tests && touch tests/__init__.py"),
            _call("bash", command="python3 -m unittest -q 2>&1 | tail -n 1"),
            "All tests pass now.",
        ]
    )
    fix = ScriptedClient(
        [
            _call("read_file", path=bug["file"], start_line=bug["line"], end_line=bug["line"]),
            _call("replace_in_file", path=bug["file"], old="no such text", new="x"),
            _call("write_file", path="notes.txt", content="looked at it\n"),
            _call("replace_in_file", path=bug["file"], old=bug["buggy"], new=bug["original"]),
            "Fixed.",
        ]
    )
    cheated = await vf.evaluate_async(
        env, client=cheat, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    fixed = await vf.evaluate_async(
        env, client=fix, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    (c,) = cheated.states
    (f,) = fixed.states
    assert [m["content"] for m in c["completion"] if m["role"] == "tool"][1] == "OK"
    assert c["reward"] == 0.0 and c["metrics"]["tests_failed"] > 0
    tool_out = [m["content"] for m in f["completion"] if m["role"] == "tool"]
    assert tool_out[0] == f"{bug['line']:4d}  {bug['buggy']}"
    assert "occurs 0 times" in tool_out[1]
    assert f["reward"] == 1.0 and f["metrics"]["tests_failed"] == 0.0
    assert json.loads(json.dumps(f["test_run"]))["tests_run"] == 55


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("minilib/__init__.py", "import os\nos._exit(0)\n"),  # the suite dies importing it
        ("tests/test_zz.py", "import sys\nsys.exit(0)\n"),  # a new test module exits early
    ],
)
async def test_swe_lite_a_suite_that_exits_early_does_not_pass(path: str, content: str) -> None:
    env = vf.load_environment("swe-lite", num_examples=1)
    cheat = ScriptedClient([_call("write_file", path=path, content=content), "Done."])
    result = await vf.evaluate_async(
        env, client=cheat, model="m", keep_states=True, num_examples=-1, rollouts_per_example=1
    )
    (state,) = result.states
    assert state["error"] is None
    assert state["reward"] == 0.0
    assert state["test_run"]["passed"] is False


async def test_swe_lite_several_bugs_per_task() -> None:
    from verifiers.testing.check import check_environment_async

    env = vf.load_environment("swe-lite", num_bugs=3, num_examples=5, seed=2)
    rows = env.get_rows("eval")
    assert len(rows) == 5 and len({r["prompt"][-1]["content"] for r in rows}) == 5
    for row in rows:
        files = [b["file"] for b in row["info"]["bugs"]]
        assert len(files) == 3 == len(set(files))
        assert "has 3 bugs" in row["prompt"][-1]["content"]
    # the oracle reverts all three; fixing only one is not enough
    (await check_environment_async(env, num_examples=2)).raise_for_failures()
    first = rows[0]["info"]["bugs"][0]
    client = ScriptedClient(
        [
            _call("replace_in_file", path=first["file"], old=first["buggy"], new=first["original"]),
            "Done.",
        ]
    )
    result = await vf.evaluate_async(
        env, client=client, model="m", num_examples=1, rollouts_per_example=1
    )
    assert result.records[0]["reward"] == 0.0
    with pytest.raises(vf.ConfigError, match="num_bugs=5 needs 5 modules"):
        vf.load_environment("swe-lite", num_bugs=5)
