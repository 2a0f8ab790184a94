"""Every backend passes the conformance suite (docker and remote in their own modules)."""

from __future__ import annotations

import warnings

from tests.sandbox.conftest import needs_bwrap
from verifiers.sandbox import RawExecResult, Sandbox, SandboxLimits, create_sandbox
from verifiers.testing.sandbox_conformance import SandboxConformance, run_sandbox_conformance


@needs_bwrap
class TestBwrapConformance(SandboxConformance):
    """The default agent: the native build where a C compiler is available (as here)."""

    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        return create_sandbox("bwrap", limits=limits)


@needs_bwrap
class TestBwrapPythonAgentConformance(SandboxConformance):
    """The Python agent, used where the native one cannot be built."""

    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        return create_sandbox("bwrap", limits=limits, agent="python")


class TestSubprocessConformance(SandboxConformance):
    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return create_sandbox("subprocess", limits=limits)


class TestSubprocessPythonAgentConformance(SandboxConformance):
    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return create_sandbox("subprocess", limits=limits, agent="python")


async def test_run_sandbox_conformance_reports_without_pytest_collection() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        report = await run_sandbox_conformance(
            lambda limits: create_sandbox("subprocess", limits=limits),
            only=["test_exec_stdout_stderr_exit_code", "test_no_network", "test_read_missing_file"],
        )
    assert report.ok, report.failed
    assert report.passed == ["test_exec_stdout_stderr_exit_code", "test_read_missing_file"]
    assert list(report.skipped) == ["test_no_network"]  # subprocess does not isolate


async def test_run_sandbox_conformance_reports_failures() -> None:
    class Broken(Sandbox):  # exec always says "exit 0, no output"
        backend = "broken"

        async def _start(self) -> None: ...
        async def _stop(self) -> None: ...
        async def _run(self, argv, stdin, env, cwd, timeout, max_output_bytes):  # type: ignore[no-untyped-def]
            return RawExecResult(0, b"", b"")

        async def _spawn(self, argv, env, cwd):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    report = await run_sandbox_conformance(
        lambda limits: Broken(limits), only=["test_exec_stdout_stderr_exit_code"]
    )
    assert not report.ok and "AssertionError" in report.failed["test_exec_stdout_stderr_exit_code"]
