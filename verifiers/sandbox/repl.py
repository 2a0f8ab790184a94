"""A persistent Python interpreter inside a sandbox (what ``PythonEnv``'s ``python`` tool uses).

The worker keeps one namespace across cells. Each cell's ``print`` output, stderr, the
traceback of an exception, and the ``repr`` of a trailing expression come back in a
:class:`CellResult`. A cell that runs past its timeout, or kills the interpreter, is an
observation (``timed_out`` / ``status == "error"``): the interpreter is restarted on the next
cell with a fresh namespace. A sandbox that fails raises :class:`SandboxError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from typing import Literal

from verifiers.sandbox.base import Sandbox, SandboxProcess

__all__ = ["CellResult", "PythonWorker"]

# Runs inside the sandbox. Requests and responses are one JSON object per line on a private
# copy of the original stdout; the cell's own writes to fds 1 and 2 go to a scratch file that
# is read back after each cell.
WORKER_SOURCE = r"""
import ast, contextlib, io, json, os, sys, traceback
chan = os.fdopen(os.dup(1), "w")
requests = os.fdopen(os.dup(0), "r")
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
try:
    scratch = os.fdopen(os.open(os.environ.get("TMPDIR", "/tmp"), os.O_TMPFILE | os.O_RDWR), "w+b")
except OSError:
    import tempfile
    scratch = tempfile.TemporaryFile()
os.dup2(scratch.fileno(), 1)
os.dup2(scratch.fileno(), 2)
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
cap = int(sys.argv[1])
count = 0

def clip(text):
    return text if len(text) <= cap else text[:cap] + "\n[output truncated]"

chan.write('{"ready": true}\n'); chan.flush()
for line in requests:
    code = json.loads(line)["code"]
    count += 1
    out, err = io.StringIO(), io.StringIO()
    status, result = "ok", None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            tree = ast.parse(code, mode="exec")
            last = tree.body[-1] if tree.body else None
            if isinstance(last, ast.Expr):
                tree.body.pop()
                exec(compile(tree, "<cell>", "exec"), namespace)
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
                if value is not None:
                    result = repr(value)
            else:
                exec(compile(tree, "<cell>", "exec"), namespace)
        except BaseException as e:
            status = "error"
            tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
            result = "".join(traceback.format_exception(type(e), e, tb))
    sys.stdout.flush(); sys.stderr.flush()
    scratch.seek(0)
    raw = scratch.read().decode("utf-8", "replace")
    scratch.seek(0); scratch.truncate()
    response = {
        "status": status,
        "stdout": clip(out.getvalue() + raw),
        "stderr": clip(err.getvalue()),
        "result": clip(result) if result is not None else None,
        "execution_count": count,
    }
    chan.write(json.dumps(response) + "\n"); chan.flush()
"""


@dataclass(frozen=True, slots=True)
class CellResult:
    """What one cell did."""

    status: Literal["ok", "error"]
    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    execution_count: int = 0
    timed_out: bool = False
    restarted: bool = False
    oom: bool = False
    duration_s: float = 0.0

    def format(self) -> str:
        """The text a model sees (the classic ``PythonEnv`` layout): stdout, ``stderr:`` and its
        text, the traceback, ``Out[n]: value``, or ``(no output)``."""
        parts: list[str] = []
        if self.stdout.rstrip():
            parts.append(self.stdout.rstrip())
        if self.stderr.rstrip():
            parts.append(f"stderr:\n{self.stderr.rstrip()}")
        if self.status == "error" and self.result:
            parts.append(self.result.rstrip())
        elif self.status == "ok" and self.result is not None:
            parts.append(f"Out[{self.execution_count}]: {self.result}")
        return "\n".join(parts) if parts else "(no output)"


class PythonWorker:
    """A persistent interpreter in ``sandbox``. ``await worker.run(code)`` -> :class:`CellResult`."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        python: str = "python3",
        timeout: float = 30.0,
        max_output_chars: int = 16_000,
        env: dict[str, str] | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.python = python
        self.timeout = timeout
        self.max_output_chars = max_output_chars
        self.env = env
        self._proc: SandboxProcess | None = None
        self._lock = asyncio.Lock()
        self._restart_note = False
        self.restarts = 0

    async def start(self) -> None:
        """Start the interpreter (``run`` does this when needed)."""
        if self._proc is not None:
            return
        argv = [self.python, "-u", "-c", WORKER_SOURCE, str(self.max_output_chars)]
        proc = await self.sandbox.spawn(argv, env=self.env)
        line = await proc.readline()
        if not line.startswith(b'{"ready"'):
            await proc.kill()
            tail = proc.stderr_tail().decode("utf-8", "replace").strip()
            raise RuntimeError(f"the python worker did not start: {tail or line!r}")
        self._proc = proc

    async def run(self, code: str, timeout: float | None = None) -> CellResult:  # noqa: ASYNC109
        """Run one cell. Cells of one worker run one at a time."""
        async with self._lock:
            restarted = self._restart_note
            self._restart_note = False
            await self.start()
            proc = self._proc
            assert proc is not None
            limit = self.timeout if timeout is None else timeout
            oom_before = self.sandbox.oom_kills()
            started = time.perf_counter()
            await proc.write(json.dumps({"code": code}).encode() + b"\n")
            try:
                line = await asyncio.wait_for(proc.readline(), limit)
            except TimeoutError:
                await self._discard()
                return CellResult(
                    status="error",
                    result=f"TimeoutError: the cell ran longer than {limit:g}s; "
                    "the interpreter was restarted (its variables are gone)",
                    timed_out=True,
                    restarted=restarted,
                    duration_s=time.perf_counter() - started,
                )
            duration = time.perf_counter() - started
            if not line:
                status = await proc.wait()
                tail = proc.stderr_tail().decode("utf-8", "replace").strip()
                await self._discard()
                oom = self._oom_since(oom_before)
                cause = "ran out of memory" if oom else f"died (exit status {status})"
                return CellResult(
                    status="error",
                    result=f"the interpreter {cause} and was restarted; its variables are gone. "
                    f"{tail}".strip(),
                    restarted=restarted,
                    oom=oom,
                    duration_s=duration,
                )
            data = json.loads(line)
            result = data["result"]
            memory_error = data["status"] != "ok" and "MemoryError" in (result or "")
            return CellResult(
                status="ok" if data["status"] == "ok" else "error",
                stdout=data["stdout"],
                stderr=data["stderr"],
                result=result,
                execution_count=int(data["execution_count"]),
                restarted=restarted,
                oom=memory_error or self._oom_since(oom_before),
                duration_s=duration,
            )

    def _oom_since(self, before: int | None) -> bool:
        after = self.sandbox.oom_kills()
        return before is not None and after is not None and after > before

    async def _discard(self) -> None:
        proc, self._proc = self._proc, None
        self._restart_note = True
        self.restarts += 1
        if proc is not None:
            with contextlib.suppress(Exception):
                await proc.kill()

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(Exception):
                await proc.kill()
