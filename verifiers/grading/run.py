"""Run trusted test code in the grader against an untrusted program in a sandbox.

The test code (an ``assert`` block, or ``unittest`` modules) executes here, in the grader's
process, on a worker thread; the program's names are :class:`~verifiers.grading.remote.Remote`
proxies served by a grading worker inside the sandbox. A test passes only when its code runs to
its end in the grader; the program exiting, crashing, hanging or breaking the protocol raises
:class:`~verifiers.grading.remote.ProgramAborted` in the test instead. The expected values stay
here: the sandbox only sees the calls' arguments.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import threading
import time
import types
import unittest
from collections.abc import Callable, Collection
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from verifiers.grading.remote import GradingClient, NotPlainValue, ProgramAborted, Remote
from verifiers.sandbox import Sandbox, SandboxProcess

__all__ = ["Outcome", "run_test_code", "run_unittest_modules", "worker_source"]

P = ParamSpec("P")
T = TypeVar("T")
Status = Literal["passed", "failed", "error", "timeout"]


@dataclass(frozen=True, slots=True)
class Outcome:
    status: Status
    duration_s: float
    detail: str = ""


@functools.cache
def worker_source() -> str:
    return (Path(__file__).with_name("_worker.py")).read_text("utf-8")


class _DaemonThreads(Executor):
    """Each call on a daemon thread, at most ``max_threads`` running at once (later ones wait
    for a slot). Not a ``ThreadPoolExecutor``: the interpreter joins those threads at exit, so
    a test still running (a loop the abort cannot reach) kept the process from exiting at all;
    a daemon thread does not."""

    def __init__(self, max_threads: int) -> None:
        self._slots = threading.BoundedSemaphore(max_threads)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()

        def target() -> None:
            with self._slots:
                if not future.set_running_or_notify_cancel():
                    return  # cancelled while it waited for a slot
                try:
                    result = fn(*args, **kwargs)
                except BaseException as e:  # handed to whoever waits on the future
                    future.set_exception(e)
                else:
                    future.set_result(result)

        threading.Thread(target=target, name="vf-grading", daemon=True).start()
        return future


@functools.cache
def _executor() -> Executor:
    # test code blocks on the sandbox most of the time: many threads, little CPU
    return _DaemonThreads(64)


async def _spawn_worker(sandbox: Sandbox, cwd: str | None) -> SandboxProcess:
    return await sandbox.spawn(["python3", "-I", "-c", worker_source()], cwd=cwd)


async def _run_with_worker(
    sandbox: Sandbox,
    body: Callable[[GradingClient], Any],
    *,
    cwd: str | None,
    timeout: float,  # noqa: ASYNC109
) -> tuple[Any, BaseException | None, bool, float]:
    """Run ``body(client)`` on a thread with a fresh worker; (result, exception, timed_out,
    seconds). The worker is killed afterwards, whatever happened."""
    loop = asyncio.get_running_loop()
    process = await _spawn_worker(sandbox, cwd)
    client = GradingClient(process, loop)
    started = asyncio.Event()
    t0 = 0.0

    def thread() -> Any:
        loop.call_soon_threadsafe(started.set)
        return body(client)

    future = loop.run_in_executor(_executor(), thread)
    timed_out = False
    try:
        await started.wait()
        t0 = time.perf_counter()
        try:
            result = await asyncio.wait_for(asyncio.shield(future), timeout)
            if client.dead is not None:  # the test swallowed the program's end: no credit
                return None, ProgramAborted(client.dead), False, time.perf_counter() - t0
            return result, None, False, time.perf_counter() - t0
        except TimeoutError:
            timed_out = True
            client.abort(f"the test ran past its {timeout:g} s limit")
        except BaseException as e:
            if isinstance(e, asyncio.CancelledError):
                raise
            return None, e, False, time.perf_counter() - t0
        return None, ProgramAborted("timed out"), timed_out, time.perf_counter() - t0
    finally:
        client.abort("the test is over")
        await process.kill()
        if timed_out:
            # the thread only waits on the (now failing) worker: it ends promptly
            await asyncio.wait({future}, timeout=5)
        # retrieved, now or when the thread ends (after a cancellation, such as Ctrl-C, it
        # ends later with the aborted request's ProgramAborted): the verdict already accounts
        # for it, and an unretrieved one is logged as "Future exception was never retrieved"
        future.add_done_callback(_retrieve)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _verdict(error: BaseException | None, timed_out: bool) -> tuple[Status, str]:
    if timed_out:
        return "timeout", "the test ran past its time limit"
    if error is None:
        return "passed", ""
    text = f"{type(error).__name__}: {error}"[-500:]
    if isinstance(error, AssertionError | NotPlainValue | ProgramAborted):
        return "failed", text
    return "error", text


def _names_of(client: GradingClient, module: str) -> dict[str, Any]:
    mod = client.request({"op": "import", "module": module})
    if not isinstance(mod, Remote):
        raise ProgramAborted(f"importing {module} gave no module")
    names = client.request({"op": "names", "h": mod._vf_handle})
    if not isinstance(names, dict):
        raise ProgramAborted("the grading worker sent a malformed name list")
    return {
        k: v
        for k, v in names.items()
        if isinstance(k, str) and k.isidentifier() and not k.startswith("_")
    }


def _importer(client: GradingClient, remote: Collection[str]) -> Callable[..., Any]:
    """``__import__`` for test code: the program's modules come from the sandbox."""

    def _import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        top = name.split(".")[0]
        if level == 0 and top in remote:
            leaf = client.request({"op": "import", "module": name})
            if fromlist:
                return leaf
            return client.request({"op": "import", "module": top})
        return builtins.__import__(name, globals, locals, fromlist, level)

    return _import


def _namespace(client: GradingClient, remote: Collection[str]) -> dict[str, Any]:
    safe_builtins = dict(vars(builtins))
    safe_builtins["__import__"] = _importer(client, remote)
    return {"__name__": "__vf_test__", "__builtins__": safe_builtins}


async def run_test_code(
    sandbox: Sandbox,
    code: str,
    *,
    module: str = "solution",
    cwd: str | None = None,
    timeout: float = 10.0,  # noqa: ASYNC109
) -> Outcome:
    """Run an ``assert`` block as if after ``from <module> import *``; the module is the
    program, imported in the sandbox (``module.py`` in ``cwd``)."""
    compiled = compile(code, "<test>", "exec")

    def body(client: GradingClient) -> None:
        ns = _namespace(client, {module})
        ns.update(_names_of(client, module))
        exec(compiled, ns)  # trusted test code, in the grader

    _, error, timed_out, seconds = await _run_with_worker(sandbox, body, cwd=cwd, timeout=timeout)
    status, detail = _verdict(error, timed_out)
    return Outcome(status, seconds, detail)


@dataclass(frozen=True, slots=True)
class SuiteRun:
    tests_run: int
    failures: int
    errors: int
    timed_out: bool
    passed: bool
    detail: str


async def run_unittest_modules(
    sandbox: Sandbox,
    modules: dict[str, str],
    *,
    remote_packages: Collection[str],
    cwd: str | None = None,
    timeout: float = 60.0,  # noqa: ASYNC109
) -> SuiteRun:
    """Run ``unittest`` modules (``{name: source}``) in the grader; imports of
    ``remote_packages`` resolve to the program's modules in the sandbox."""
    compiled = {name: compile(src, f"<{name}>", "exec") for name, src in sorted(modules.items())}

    def body(client: GradingClient) -> unittest.TestResult:
        suite = unittest.TestSuite()
        for name, code in compiled.items():
            module = types.ModuleType(name)
            module.__dict__.update(_namespace(client, remote_packages))
            module.__dict__["__name__"] = name
            exec(code, module.__dict__)  # trusted test code, in the grader
            suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(module))
        result = _AbortingResult()
        suite.run(result)
        if result.aborted is not None:
            raise result.aborted
        return result

    result, error, timed_out, _ = await _run_with_worker(sandbox, body, cwd=cwd, timeout=timeout)
    if result is None:
        detail = "the suite ran past its time limit" if timed_out else repr(error)[-1000:]
        return SuiteRun(0, 0, 0, timed_out, False, detail)
    failures, errors = len(result.failures), len(result.errors)
    lines = [
        f"{t.id()}: {tb.strip().splitlines()[-1]}" for t, tb in result.failures + result.errors
    ]
    ok = result.testsRun > 0 and failures == errors == 0 and not result.unexpectedSuccesses
    return SuiteRun(result.testsRun, failures, errors, False, ok, "\n".join(lines)[-2000:])


class _AbortingResult(unittest.TestResult):
    """A result that stops the run at the first :class:`ProgramAborted` (the program is gone;
    the tests left would fail the same way)."""

    aborted: BaseException | None = None

    def addError(self, test: Any, err: Any) -> None:
        if isinstance(err[1], ProgramAborted):
            self.aborted = err[1]
            self.stop()
        super().addError(test, err)
