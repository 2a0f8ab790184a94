"""A grading run cancelled before its test thread started (Ctrl-C during `vf-eval code` with
many rollouts queued for the grader's threads) ends quietly: the thread runs later against
the stopped worker and fails, and nobody logs "Future exception was never retrieved" for it
(it printed 8 such blocks, burying the resume hint)."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.sandbox.conftest import needs_bwrap
from verifiers.grading import run as grading_run
from verifiers.grading import run_test_code
from verifiers.sandbox import create_sandbox


@needs_bwrap
async def test_grading_cancelled_while_queued_logs_no_unretrieved_exception(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.ERROR, logger="asyncio")
    pool = ThreadPoolExecutor(max_workers=1)  # the grader's threads, all busy
    monkeypatch.setattr(grading_run, "_executor", lambda: pool)
    release = threading.Event()
    pool.submit(release.wait, 120)
    sandbox = create_sandbox("bwrap")
    await sandbox.start()
    try:
        await sandbox.write_file("solution.py", "def f():\n    return 1\n")
        task = asyncio.create_task(run_test_code(sandbox, "assert f() == 1", timeout=60))
        deadline = time.monotonic() + 60
        while pool._work_queue.qsize() == 0:  # the test is queued behind the busy thread
            assert time.monotonic() < deadline, "the grading run never queued its test"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await asyncio.to_thread(pool.shutdown, True)  # the queued test has run (and failed)
        for _ in range(20):  # let the loop deliver its result to the future
            await asyncio.sleep(0)
        del task
        gc.collect()
    finally:
        release.set()
        await sandbox.stop()
    assert "never retrieved" not in caplog.text, caplog.text
