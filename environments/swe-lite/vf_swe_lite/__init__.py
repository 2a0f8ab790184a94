"""swe-lite: fix procedurally injected bugs in a small repository, inside a sandbox.

Each task copies the bundled ``minilib`` repository (a small stdlib-only library with a
``unittest`` suite) into the rollout's sandbox with one injected bug, or ``num_bugs`` bugs in
different modules (see :mod:`vf_swe_lite.inject`). The model works over many turns with
``bash``, ``read_file``, ``write_file`` and ``replace_in_file``, and stops by replying without
a tool call. Reward: the pristine test suite passes. It is graded after the model's last turn in
a fresh sandbox holding only the library's files; the tests themselves run in the grader and
call into the library there (:mod:`verifiers.grading`), so editing the tests, the test runner
or its configuration, or leaving processes behind, does not help.
"""

from __future__ import annotations

import asyncio
import json
import random
from importlib import resources
from typing import Any

import verifiers as vf
from vf_swe_lite.inject import Bug, apply_bug, repo_files

__all__ = ["SweLiteEnv", "load_bugs", "load_environment"]

SYSTEM_PROMPT = (
    "You are a software engineer working in a sandbox. The repository is in your working "
    "directory. Use the tools to run the tests (`python3 -m unittest`), read the code, and fix "
    "the bug(s) in the library with the smallest change; do not edit the tests. When the whole "
    "suite passes, reply with a one-line summary of the fix and no tool call."
)

# Unpacks {path: text} from stdin into the working directory: one command for the whole repo.
_UNPACK = (
    "import json, os, sys\n"
    "for path, text in json.load(sys.stdin).items():\n"
    "    d = os.path.dirname(path)\n"
    "    if d: os.makedirs(d, exist_ok=True)\n"
    "    open(path, 'w').write(text)\n"
)


def load_bugs() -> list[Bug]:
    """The bundled bugs (``data/bugs.jsonl``), each verified to break the test suite."""
    text = resources.files("vf_swe_lite").joinpath("data/bugs.jsonl").read_text("utf-8")
    bugs = []
    for line in text.splitlines():
        if line.strip():
            row = json.loads(line)
            row["failing_tests"] = tuple(row["failing_tests"])
            bugs.append(Bug(**row))
    return bugs


class SweLiteEnv(vf.SandboxEnv):
    """:class:`verifiers.SandboxEnv` with file tools, a buggy repository per rollout and a
    test-suite reward."""

    def __init__(self, test_timeout: float = 60.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.test_timeout = test_timeout
        self.pristine = repo_files()
        self.test_files = {p: t for p, t in self.pristine.items() if p.startswith("tests/")}
        self.library_files = sorted(p for p in self.pristine if p.startswith("minilib/"))
        # the grader's copy of the suite: it never enters a sandbox
        self.test_modules = {
            p.removesuffix(".py").replace("/", "."): t
            for p, t in self.test_files.items()
            if p.rsplit("/", 1)[-1].startswith("test")
        }
        for tool in (self.read_file, self.write_file, self.replace_in_file):
            self.add_tool(tool, args_to_skip=["sandbox_id", "sandbox_state"])

    # repository ------------------------------------------------------------------------------

    async def on_sandbox_ready(self, sandbox: vf.Sandbox, state: vf.State) -> None:
        await super().on_sandbox_ready(sandbox, state)
        files = self.pristine
        for bug in state["info"]["bugs"]:
            files = apply_bug(files, Bug(**{**bug, "failing_tests": ()}))
        result = await sandbox.exec(["python3", "-c", _UNPACK], stdin=json.dumps(files))
        if result.exit_code != 0:
            raise vf.SandboxError(f"could not write the repository: {result.stderr[-500:]}")

    async def run_test_suite(self, state: vf.State) -> dict[str, Any]:
        """Restore the pristine tests and run the suite, once per rollout (concurrent callers
        share the run); the outcome is kept in ``state["test_run"]``."""
        task = state.get("_test_suite_task")
        if task is None:
            task = state["_test_suite_task"] = asyncio.ensure_future(self._run_suite(state))
        return dict(await asyncio.shield(task))

    async def _run_suite(self, state: vf.State) -> dict[str, Any]:
        """Grade in a fresh sandbox holding only the library's files as the model left them:
        nothing the model started, wrote elsewhere or changed in the tests reaches grading.
        The pristine tests run in the grader (:mod:`verifiers.grading`); the library answers
        their calls from the sandbox with plain data, compared here."""
        from verifiers.grading import run_unittest_modules

        sandbox = await self.get_sandbox(state)
        library: dict[str, str] = {}
        for path in self.library_files:
            try:
                data = await sandbox.read_file(path, max_bytes=1 << 20)
            except (OSError, ValueError):
                continue  # deleted (or replaced by something else): the import will fail
            library[path] = data.decode("utf-8", "replace")
        pool = self.sandbox_pool()
        fresh = await pool.acquire()
        try:
            result = await fresh.exec(["python3", "-c", _UNPACK], stdin=json.dumps(library))
            if result.exit_code != 0:
                raise vf.SandboxError(f"could not write the repository: {result.stderr[-500:]}")
            suite = await run_unittest_modules(
                fresh, self.test_modules, remote_packages={"minilib"}, timeout=self.test_timeout
            )
        finally:
            await asyncio.shield(pool.release(fresh))
        run = {
            "passed": suite.passed,
            "tests_run": suite.tests_run,
            "tests_failed": suite.failures + suite.errors,
            "timed_out": suite.timed_out,
            "tail": suite.detail,
        }
        state["test_run"] = run
        return run

    # tools -----------------------------------------------------------------------------------

    async def read_file(
        self,
        path: str,
        sandbox_id: str,
        sandbox_state: dict[str, Any],
        start_line: int = 1,
        end_line: int | None = None,
    ) -> str:
        """Show a file with line numbers.

        Args:
            path: file path, relative to the repository root.
            start_line: first line to show (1-based).
            end_line: last line to show (default: the end of the file).
        """
        state = self._state_for(sandbox_id, sandbox_state)
        sandbox = await self.get_sandbox(state)
        text = (await sandbox.read_file(path, max_bytes=1 << 20)).decode("utf-8", "replace")
        lines = text.splitlines()
        last = len(lines) if end_line is None else min(end_line, len(lines))
        first = max(1, start_line)
        return "\n".join(f"{i:4d}  {lines[i - 1]}" for i in range(first, last + 1)) or "(empty)"

    async def write_file(
        self, path: str, content: str, sandbox_id: str, sandbox_state: dict[str, Any]
    ) -> str:
        """Create or overwrite a file.

        Args:
            path: file path, relative to the repository root.
            content: the whole new content of the file.
        """
        state = self._state_for(sandbox_id, sandbox_state)
        sandbox = await self.get_sandbox(state)
        await sandbox.write_file(path, content)
        return f"wrote {len(content.splitlines())} lines to {path}"

    async def replace_in_file(
        self, path: str, old: str, new: str, sandbox_id: str, sandbox_state: dict[str, Any]
    ) -> str:
        """Replace one exact occurrence of a piece of text in a file.

        Args:
            path: file path, relative to the repository root.
            old: the exact text to replace (it must occur exactly once; include enough context).
            new: the replacement text.
        """
        state = self._state_for(sandbox_id, sandbox_state)
        sandbox = await self.get_sandbox(state)
        text = (await sandbox.read_file(path, max_bytes=1 << 20)).decode("utf-8", "replace")
        count = text.count(old) if old else 0
        if count != 1:
            raise ValueError(
                f"`old` occurs {count} times in {path}; it must occur exactly once "
                "(copy the text exactly, with enough surrounding context)"
            )
        await sandbox.write_file(path, text.replace(old, new, 1))
        return f"replaced 1 occurrence in {path}"

    def update_tool_args(
        self,
        tool_name: str,
        tool_args: dict[str, Any],
        messages: vf.Messages,
        state: vf.State,
        **kwargs: Any,
    ) -> dict[str, Any]:
        updated = super().update_tool_args(tool_name, tool_args, messages, state, **kwargs)
        if tool_name in ("read_file", "write_file", "replace_in_file"):
            updated["sandbox_id"] = state["sandbox_id"]
            updated["sandbox_state"] = state["sandbox_state"]
        return updated

    # oracle ----------------------------------------------------------------------------------

    async def oracle_response(self, state: vf.State) -> vf.Message:
        """Run the tests, read each buggy file and revert its injected line, rerun, report."""
        bugs = state["info"]["bugs"]
        plan: list[tuple[str, dict[str, Any]]] = [
            ("bash", {"command": "python3 -m unittest -q 2>&1 | tail -n 15"})
        ]
        for bug in bugs:
            plan.append(("read_file", {"path": bug["file"]}))
            plan.append(
                (
                    "replace_in_file",
                    {"path": bug["file"], "old": bug["buggy"], "new": bug["original"]},
                )
            )
        plan.append(("bash", {"command": "python3 -m unittest -q 2>&1 | tail -n 3"}))
        step = sum(1 for m in state["completion"] if m.get("role") == "assistant")
        if step >= len(plan):
            where = ", ".join(f"{b['file']}:{b['line']}" for b in bugs)
            return {"role": "assistant", "content": f"Fixed {where}."}
        name, args = plan[step]
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{step}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ],
        }


def _combinations(bugs: list[Bug], k: int, n: int, rng: random.Random) -> list[list[Bug]]:
    """``n`` distinct sets of ``k`` bugs, each in a different file (so they cannot interact
    within one function)."""
    by_file: dict[str, list[Bug]] = {}
    for bug in bugs:
        by_file.setdefault(bug.file, []).append(bug)
    files = sorted(by_file)
    if k > len(files):
        raise vf.ConfigError(
            f"swe-lite: num_bugs={k} needs {k} modules with bugs; the repository has {len(files)}"
        )
    out: list[list[Bug]] = []
    seen: set[tuple[str, ...]] = set()
    attempts = 0
    while len(out) < n and attempts < 100 * n:
        attempts += 1
        chosen = sorted(
            (rng.choice(by_file[f]) for f in rng.sample(files, k)), key=lambda b: b.file
        )
        key = tuple(b.bug_id for b in chosen)
        if key not in seen:
            seen.add(key)
            out.append(chosen)
    return out


def _bug_info(bug: Bug) -> dict[str, Any]:
    return {
        "bug_id": bug.bug_id,
        "file": bug.file,
        "line": bug.line,
        "kind": bug.kind,
        "original": bug.original,
        "buggy": bug.buggy,
    }


def load_environment(
    num_examples: int = -1,
    seed: int = 0,
    max_turns: int = 30,
    show_failing_tests: bool = True,
    num_bugs: int = 1,
    sandbox_backend: str | None = None,
    test_timeout: float = 60.0,
    system_prompt: str = SYSTEM_PROMPT,
    **kwargs: Any,
) -> vf.Environment:
    """Build the swe-lite environment.

    Args:
        num_examples: number of tasks (-1: one per bundled bug; 200 when ``num_bugs > 1``).
        seed: shuffles which bugs come first (and which are combined).
        max_turns: model calls per rollout.
        show_failing_tests: name the failing tests in the task (like a bug report); without,
            the model only learns that the suite fails.
        num_bugs: bugs per task, each in a different module (1-4): a difficulty knob, and
            many more distinct tasks (every combination of bugs is one).
        sandbox_backend: ``None`` (bwrap on Linux), ``docker``, ``remote``; ``subprocess``
            only for trusted models.
        test_timeout: seconds the test suite may run when scoring.
        system_prompt: instructions to the model.
        **kwargs: passed on to :class:`verifiers.SandboxEnv`.
    """
    if num_bugs < 1:
        raise vf.ConfigError(f"swe-lite: num_bugs must be >= 1, not {num_bugs}")
    bugs = load_bugs()
    rng = random.Random(seed)
    if num_bugs == 1:
        rng.shuffle(bugs)
        tasks = [[b] for b in (bugs[:num_examples] if num_examples > 0 else bugs)]
    else:
        tasks = _combinations(bugs, num_bugs, num_examples if num_examples > 0 else 200, rng)
    rows = []
    for task_bugs in tasks:
        failing = sorted({t for b in task_bugs for t in b.failing_tests})
        if show_failing_tests:
            listed = "\n".join(f"- {t}" for t in failing)
            report = f"These tests fail:\n{listed}"
        else:
            report = "Some tests fail."
        what = "a bug" if len(task_bugs) == 1 else f"{len(task_bugs)} bugs"
        rows.append(
            {
                "question": (
                    "The repository `minilib` (package `minilib/`, tests in `tests/`, run with "
                    f"`python3 -m unittest`) has {what}. {report}\nFind and fix "
                    f"{'the bug' if len(task_bugs) == 1 else 'all of them'}."
                ),
                "answer": "",
                "task": "swe-lite" if len(task_bugs) == 1 else f"swe-lite-{len(task_bugs)}",
                "info": {"bugs": [_bug_info(b) for b in task_bugs]},
            }
        )

    async def tests_pass(state: vf.State) -> float:
        """1.0 when the repository's (pristine) test suite passes."""
        return 1.0 if (await env.run_test_suite(state))["passed"] else 0.0

    async def tests_failed(state: vf.State) -> float:
        """Failures and errors in the final test run (metric)."""
        return float((await env.run_test_suite(state))["tests_failed"])

    env = SweLiteEnv(
        test_timeout=test_timeout,
        dataset=rows,
        eval_dataset=rows,
        system_prompt=system_prompt,
        rubric=vf.Rubric(funcs=[tests_pass, tests_failed], weights=[1.0, 0.0]),
        max_turns=max_turns,
        sandbox_backend=sandbox_backend,
        **kwargs,
    )
    return env
