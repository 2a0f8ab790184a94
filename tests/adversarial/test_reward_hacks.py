"""The adversarial suite: every entry of :mod:`tests.adversarial.hacks` scores exactly 0 on its
environment, and the gold solution (``-m oracle``) still scores 1.0, through the Python API and
through ``vf-eval`` against the project's OpenAI-compatible test server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from tests.adversarial.hacks import ALL_HACKS, Hack
from verifiers.sandbox.bwrap import bwrap_available
from verifiers.testing import ScriptedClient
from verifiers.testing.server import OpenAITestServer

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")

ENVS = ("code", "python-repl", "swe-lite")
# short limits: the timeout families must not make the suite slow
ENV_ARGS: dict[str, dict[str, Any]] = {
    "code": {"test_timeout": 3.0},
    "python-repl": {"timeout_per_command_seconds": 5.0, "max_turns": 4},
    "swe-lite": {"test_timeout": 20.0, "max_turns": 6},
}


def load(env_id: str) -> vf.Environment:
    return vf.load_environment(env_id, num_examples=1, **ENV_ARGS[env_id])


@pytest.mark.parametrize("hack", ALL_HACKS, ids=[h.id for h in ALL_HACKS])
async def test_hack_scores_zero_through_the_api(hack: Hack) -> None:
    env = load(hack.env)
    client = ScriptedClient(responder=lambda prompt: hack.reply(list(prompt)))
    result = await vf.evaluate_async(
        env, client=client, model="m", num_examples=1, rollouts_per_example=1, keep_states=True
    )
    (state,) = result.states
    assert state["error"] is None, state["error"]
    assert state["reward"] == 0.0, (hack.id, state.get("test_results") or state.get("test_run"))


@pytest.mark.parametrize("env_id", ENVS)
async def test_gold_solution_scores_one_through_the_api(env_id: str) -> None:
    env = load(env_id)
    result = await vf.evaluate_async(
        env, client=None, model="oracle", num_examples=1, rollouts_per_example=1, keep_states=True
    )
    (state,) = result.states
    assert state["error"] is None and state["reward"] == 1.0


def _vf_eval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "vf-eval"
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def _results(cwd: Path) -> list[dict[str, Any]]:
    (path,) = cwd.glob("outputs/evals/*/*/results.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


class _HackServer:
    """A responder for the test server that plays each hack once: a conversation's first
    request takes the next unplayed hack, whose name rides on the first reply's content."""

    def __init__(self, hacks: list[Hack]) -> None:
        self.hacks = {h.name: h for h in hacks}
        self.unplayed = list(hacks)
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        messages = request["messages"]
        first = next((m for m in messages if m.get("role") == "assistant"), None)
        if first is None:
            with self.lock:
                hack = self.unplayed.pop()
            reply = hack.reply(messages)
            if isinstance(reply, str):
                return f"hack:{hack.name}\n{reply}"
            return {**reply, "content": f"hack:{hack.name}"}
        name = str(first.get("content") or "").split("\n", 1)[0].removeprefix("hack:")
        return self.hacks[name].reply(messages)


@pytest.mark.parametrize("env_id", ENVS)
def test_hacks_score_zero_and_gold_one_through_vf_eval(env_id: str, tmp_path: Path) -> None:
    hacks = [h for h in ALL_HACKS if h.env == env_id]
    env_args = json.dumps({"num_examples": 1, **ENV_ARGS[env_id]})
    with OpenAITestServer(responder=_HackServer(hacks)) as server:
        proc = _vf_eval(
            env_id, "-m", "hacker", "-b", server.base_url, "-n", "1", "-r", str(len(hacks)),
            "-a", env_args, "-s", cwd=tmp_path / "hacks",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = _results(tmp_path / "hacks")
    assert len(records) == len(hacks)
    played = {}
    for r in records:
        first = next(m for m in r["completion"] if m["role"] == "assistant")
        played[str(first["content"]).split("\n", 1)[0]] = (r["reward"], r["error"])
    assert played == {f"hack:{h.name}": (0.0, None) for h in hacks}

    gold = _vf_eval(
        env_id, "-m", "oracle", "-n", "1", "-r", "1", "-a", env_args, "-s", cwd=tmp_path / "gold"
    )
    assert gold.returncode == 0, gold.stderr[-3000:]
    (record,) = _results(tmp_path / "gold")
    assert record["reward"] == 1.0 and record["error"] is None
