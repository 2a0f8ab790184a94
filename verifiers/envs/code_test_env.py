"""``CodeTestEnv``: the base of code-testing environments.

The model answers with a program; the environment runs it against the example's test cases
in the rollout's sandbox, each test with its own timeout, and the reward is the fraction of
tests passed (``pass_rate``). A test failing (wrong output, an assertion, a crash, a timeout,
running out of memory) is the model's failure and counts as not passed; the sandbox failing
raises :class:`verifiers.SandboxError`: the rollout is marked errored and its reward is left
out, never scored 0.

Test cases come from ``info["tests"]`` (or ``info["test_cases"]``), each one of

- ``{"input": STDIN, "output": EXPECTED_STDOUT}``: run the program with that stdin and compare
  its stdout (trailing whitespace and blank lines ignored);
- ``{"assert": CODE}`` (or a plain string): ``CODE`` runs *in the grader*, as if after
  ``from solution import *``; the solution's names are proxies to the program in the sandbox,
  whose answers come back as plain data (:mod:`verifiers.grading`). The test passes when
  ``CODE`` runs to its end. The program never sees the test code or its expected values, and
  nothing it prints, returns or exits with can make the grader skip an assertion.

Subclasses change :meth:`extract_code`, :meth:`get_test_cases` or :meth:`run_test`.
Per-rollout results land in ``state["test_results"]`` and metrics ``tests_passed``,
``tests_total``, ``tests_timeout``, ``tests_oom``, ``tests_error``, ``tests_time``.
"""

from __future__ import annotations

import asyncio
import re
import traceback
from dataclasses import asdict, dataclass
from typing import Any, Literal

from verifiers.envs.sandbox_env import SandboxEnv
from verifiers.errors import SandboxError
from verifiers.sandbox import ExecResult, Sandbox
from verifiers.types import Messages, State

__all__ = ["CodeTestEnv", "TestCase", "TestResult"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
TestStatus = Literal["passed", "failed", "error", "timeout", "oom"]


@dataclass(frozen=True, slots=True)
class TestCase:
    """One test: ``kind="stdio"`` compares output for ``input``; ``kind="assert"`` runs
    ``code`` against the solution module."""

    __test__ = False  # not a pytest class

    kind: Literal["stdio", "assert"]
    input: str = ""
    output: str = ""
    code: str = ""

    @classmethod
    def parse(cls, raw: Any) -> TestCase:
        if isinstance(raw, TestCase):
            return raw
        if isinstance(raw, str):
            return cls("assert", code=raw)
        if isinstance(raw, dict):
            # rows from a dataset carry every key of every test (absent ones as None)
            code = raw.get("assert") or raw.get("code")
            if code is not None:
                return cls("assert", code=str(code))
            expected = raw.get("output", raw.get("expected_output"))
            if expected is not None:
                return cls("stdio", input=str(raw.get("input") or ""), output=str(expected))
        raise ValueError(
            f"bad test case {raw!r}: use {{'input': ..., 'output': ...}} or {{'assert': CODE}}"
        )


@dataclass(frozen=True, slots=True)
class TestResult:
    __test__ = False

    status: TestStatus
    duration_s: float = 0.0
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def _normalize_output(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


class CodeTestEnv(SandboxEnv):
    """Runs the model's program against test cases; reward = fraction passed.

    Args:
        test_timeout: seconds each test may run.
        allow_bash: also give the model the ``bash`` tool (multi-turn); by default the model
            answers once with its program.
        solution_file: where the program is written in the sandbox.
        run_command: how a stdio test runs the program (default ``python3 solution.py``).
        Everything else as for :class:`SandboxEnv`.
    """

    def __init__(
        self,
        *,
        test_timeout: float = 10.0,
        allow_bash: bool = False,
        solution_file: str = "solution.py",
        run_command: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("max_turns", 10 if allow_bash else 1)
        super().__init__(**kwargs)
        if not allow_bash:
            self.remove_tool(self.bash)
        self.test_timeout = test_timeout
        self.allow_bash = allow_bash
        self.solution_file = solution_file
        self.run_command_argv = run_command or ["python3", solution_file]
        self.rubric.add_reward_func(self.pass_rate)

    # model output -> program -----------------------------------------------------------

    def extract_code(self, completion: Messages | str, state: State) -> str | None:
        """The program in the model's last answer: its last fenced code block, or the whole
        answer when it has none. ``None`` when there is no answer."""
        if isinstance(completion, str):
            text = completion
        else:
            answers = [m for m in completion if m.get("role") == "assistant" and m.get("content")]
            if not answers:
                return None
            content = answers[-1]["content"]
            text = content if isinstance(content, str) else str(content)
        blocks = _FENCE.findall(text)
        if blocks:
            return str(blocks[-1][1])
        return text.strip() or None

    def get_test_cases(self, state: State) -> list[TestCase]:
        info = state.get("info") or {}
        raw = info.get("tests", info.get("test_cases"))
        if raw is None:
            raise ValueError("the example has no test cases: put them in info['tests']")
        if isinstance(raw, str):
            import json

            raw = json.loads(raw)
        return [TestCase.parse(t) for t in raw]

    # running tests ---------------------------------------------------------------------------

    async def run_test(self, state: State, test: TestCase, index: int) -> TestResult:
        """Run one test in the rollout's sandbox."""
        if test.kind == "stdio":
            # the program's output is its answer; the expected output never enters the sandbox
            sandbox = await self.grading_sandbox(state)
            r = await sandbox.exec(
                self.run_command_argv, stdin=test.input, timeout=self.test_timeout
            )
            status = self._status(r)
            if status == "passed" and r.truncated:
                return TestResult("failed", r.duration_s, "the output was over the size limit")
            if status == "passed" and _normalize_output(r.stdout) != _normalize_output(test.output):
                return TestResult(
                    "failed", r.duration_s, f"expected {test.output!r}, got {r.stdout[:500]!r}"
                )
            return TestResult(status, r.duration_s, r.stderr[-500:])
        return await self.run_assert_test(state, test)

    async def run_assert_test(self, state: State, test: TestCase) -> TestResult:
        """Run an ``assert`` test in the grader against the program in the sandbox: the test
        code never enters the sandbox, the program's answers come back as plain data and are
        compared here (see :mod:`verifiers.grading`)."""
        from verifiers.grading import run_test_code

        sandbox = await self.grading_sandbox(state)
        module = self.solution_file.removesuffix(".py")
        outcome = await run_test_code(sandbox, test.code, module=module, timeout=self.test_timeout)
        return TestResult(outcome.status, outcome.duration_s, outcome.detail)

    @staticmethod
    def _status(r: ExecResult) -> TestStatus:
        if r.timed_out:
            return "timeout"
        if r.oom:
            return "oom"
        return "passed" if r.exit_code == 0 else "error"

    async def run_tests(self, completion: Messages | str, state: State) -> list[TestResult]:
        """Write the program into the sandbox and run every test (cached on the state)."""
        cached = state.get("test_results")
        if cached is not None:
            return [TestResult(**r) for r in cached]
        tests = self.get_test_cases(state)
        code = self.extract_code(completion, state)
        if code is None:
            results = [TestResult("failed", 0.0, "no program in the answer") for _ in tests]
        else:
            try:
                results = await self._run_in_grading_sandbox(state, code, tests)
            except SandboxError as e:
                # an infrastructure failure: the rollout is errored, not a failed test
                state["error"] = {
                    "type": type(e).__name__,
                    "message": str(e),
                    "traceback": "".join(traceback.format_exception(e)),
                }
                raise
        state["test_results"] = [asdict(r) for r in results]
        metrics = state["metrics"]
        metrics["tests_total"] = float(len(results))
        metrics["tests_passed"] = float(sum(r.passed for r in results))
        metrics["tests_timeout"] = float(sum(r.status == "timeout" for r in results))
        metrics["tests_oom"] = float(sum(r.status == "oom" for r in results))
        metrics["tests_error"] = float(sum(r.status == "error" for r in results))
        metrics["tests_time"] = float(sum(r.duration_s for r in results))
        return results

    async def grading_sandbox(self, state: State) -> Sandbox:
        """Where tests run: the rollout's sandbox when the model ran nothing in it (one answer,
        no tools), otherwise a fresh sandbox holding only the program, so that nothing the
        model left running or wrote there can touch grading."""
        sandbox = state.get("_grading_sandbox")
        if isinstance(sandbox, Sandbox):
            return sandbox
        return await self.get_sandbox(state)

    async def _run_in_grading_sandbox(
        self, state: State, code: str, tests: list[TestCase]
    ) -> list[TestResult]:
        fresh: Sandbox | None = None
        if self.allow_bash:
            fresh = await self.sandbox_pool().acquire()
            state["_grading_sandbox"] = fresh
        try:
            sandbox = await self.grading_sandbox(state)
            await sandbox.write_file(self.solution_file, code)
            return list(
                await asyncio.gather(*(self.run_test(state, t, i) for i, t in enumerate(tests)))
            )
        finally:
            if fresh is not None:
                state.pop("_grading_sandbox", None)
                await asyncio.shield(self.sandbox_pool().release(fresh))

    async def pass_rate(self, completion: Messages | str, state: State) -> float:
        """Reward: the fraction of test cases the program passes."""
        results = await self.run_tests(completion, state)
        return sum(r.passed for r in results) / len(results) if results else 0.0
