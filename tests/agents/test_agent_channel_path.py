"""How an agent in a bwrap sandbox reaches its rollout's channel: through a socket the sandbox's
agent opened on the sandbox's own loopback and handed to the host. No relay process per
rollout, no other rollout's channel within reach, and per call each request byte is read once
and the answer does not grow with the conversation."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import AsyncIterator
from typing import Any

import pytest

import verifiers as vf
from tests.sandbox.conftest import needs_bwrap
from verifiers.clients.native import NativeClient
from verifiers.testing import OpenAITestServer

pytestmark = needs_bwrap

# Lists the processes of its sandbox (its own pid namespace), then makes CALLS calls, each with
# the history grown by the last answer and a tool result; prints one JSON line at the end.
GROWING_AGENT = r"""
import json, os, urllib.request as u
me, parent = os.getpid(), os.getppid()
procs = {}
for p in os.listdir("/proc"):
    if p.isdigit() and int(p) not in (1, me, parent):
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                procs[p] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            pass
base = os.environ["OPENAI_BASE_URL"]
messages = [{"role": "user", "content": os.environ["VF_TASK"]}]
sent, got = [], []
for i in range(int(os.environ["CALLS"])):
    body = json.dumps({"model": "m", "messages": messages}).encode()
    sent.append(len(body))
    r = u.urlopen(u.Request(base + "/chat/completions", body, {"Content-Type": "application/json"}))
    answer = r.read()
    got.append(len(answer))
    messages.append(json.loads(answer)["choices"][0]["message"])
    messages.append({"role": "user", "content": "tool output %d " % i + "x" * 2000})
print(json.dumps({"procs": procs, "base": base, "sent": sent, "got": got}))
"""

# Tries the other rollout's base URL (with its secret) from inside this rollout's sandbox, and
# its own port with the other rollout's secret; prints what happened.
PROBE_AGENT = r"""
import json, os, urllib.request as u, urllib.error as e
def attempt(url, key):
    req = u.Request(url + "/chat/completions",
                    json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(),
                    {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    try:
        return "status %d" % u.urlopen(req, timeout=10).status
    except e.HTTPError as x:
        return "status %d" % x.code
    except (e.URLError, OSError) as x:
        return "unreachable: %s" % getattr(x, "reason", x)
other, other_key = os.environ["OTHER_URL"], os.environ["OTHER_KEY"]
own = os.environ["OPENAI_BASE_URL"]
own_with_other_secret = own.rsplit("/vf/", 1)[0] + "/v1"
print(json.dumps({"other": attempt(other, other_key),
                  "own_port_other_secret": attempt(own_with_other_secret, other_key)}))
"""


@pytest.fixture
async def client() -> AsyncIterator[NativeClient]:
    async with OpenAITestServer(responder=lambda request: "the same answer") as srv:
        yield NativeClient(srv.base_url)


def _env(agent: str, **kwargs: Any) -> vf.CliAgentEnv:
    return vf.CliAgentEnv(
        run_command="python3 -c " + shlex.quote(agent),
        dataset=[{"question": f"task {i}", "answer": ""} for i in range(2)],
        timeout_seconds=120,
        **kwargs,
    )


def _report(state: vf.State) -> dict[str, Any]:
    assert state["error"] is None, (state["error"], state.get("agent_stderr"))
    line = state["agent_stdout"].strip().splitlines()[-1]
    report: dict[str, Any] = json.loads(line)
    return report


@pytest.mark.parametrize("agent", ["native", "python"])
async def test_no_relay_process_runs_in_the_sandbox(
    client: NativeClient, agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's sandbox holds the sandbox's own init and the agent program: nothing relays
    its model calls (the host accepts on a socket in the sandbox's network namespace)."""
    monkeypatch.setenv("VF_SANDBOX_AGENT", agent)
    env = _env(GROWING_AGENT, environment_vars={"CALLS": "2"})
    spawned: list[list[str]] = []
    real_start = env._start_sandbox

    async def start(socket_path: str | None) -> Any:
        sandbox = await real_start(socket_path)
        real_spawn = sandbox.spawn

        async def spawn(argv: list[str], **kw: Any) -> Any:
            spawned.append(argv)
            return await real_spawn(argv, **kw)

        sandbox.spawn = spawn  # type: ignore[method-assign]
        return sandbox

    env._start_sandbox = start  # type: ignore[method-assign]
    try:
        state = await env.run_rollout(env.get_rows()[0], client, "policy")
    finally:
        await env.close()
    report = _report(state)
    assert report["procs"] == {}, report["procs"]  # nothing beside init, sh and the agent
    assert spawned == [["/bin/sh", "-c", env.run_command]]  # one process: the agent
    assert report["base"].startswith("http://127.0.0.1:")
    assert len(state["trajectory"]) == 2


async def test_a_rollout_cannot_reach_another_rollouts_channel(client: NativeClient) -> None:
    """Rollout A knows rollout B's base URL and secret: from A's sandbox B's port is another
    network namespace's (nothing listens there), and A's own port refuses B's secret."""
    urls: dict[int, asyncio.Future[tuple[str, str]]] = {}
    loop = asyncio.get_running_loop()
    urls[0], urls[1] = loop.create_future(), loop.create_future()
    channels: dict[int, Any] = {}

    class Probe(vf.CliAgentEnv):
        async def build_env_vars(self, state: vf.State) -> dict[str, str]:
            env = await super().build_env_vars(state)
            me = state["example_id"]
            channel = state["_agent_channel"]
            channels[me] = channel
            urls[me].set_result((state["interception_base_url"], channel.secret))
            if me == 0:  # A waits for B's channel; B just waits for its call
                other_url, other_key = await urls[1]
                env.update(OTHER_URL=other_url, OTHER_KEY=other_key)
            else:
                env.update(OTHER_URL="http://127.0.0.1:1/v1", OTHER_KEY="-", CALLS="1")
            return env

    env = Probe(
        run_command='if [ -n "$CALLS" ]; then python3 -c '
        + shlex.quote(GROWING_AGENT)
        + "; else python3 -c "
        + shlex.quote(PROBE_AGENT)
        + "; fi",
        dataset=[{"question": "a", "answer": ""}, {"question": "b", "answer": ""}],
        timeout_seconds=120,
    )
    rows = env.get_rows()
    try:
        a, b = await asyncio.gather(
            env.run_rollout(rows[0], client, "policy"), env.run_rollout(rows[1], client, "policy")
        )
    finally:
        await env.close()
    probe = _report(a)
    assert probe["other"].startswith("unreachable"), probe
    assert probe["own_port_other_secret"] == "status 401", probe
    assert a["trajectory"] == []
    assert len(b["trajectory"]) == 1
    assert channels[1].stats["calls"] == 1 and channels[1].stats["refused"] == 0
    assert channels[0].stats["refused"] == 1


async def test_per_call_work_does_not_grow_with_the_conversation(client: NativeClient) -> None:
    """Each request byte the agent sends is read once by the host (no relay copies it) and the
    answers stay the same size however long the history the agent sends grows."""
    calls = 12
    env = _env(GROWING_AGENT, environment_vars={"CALLS": str(calls)})
    channel_stats: dict[str, int] = {}
    real_stop = env._stop_agent

    async def stop(state: vf.State) -> None:
        channel = state.get("_agent_channel")
        if channel is not None:
            channel_stats.update(channel.stats)
        await real_stop(state)

    env._stop_agent = stop  # type: ignore[method-assign]
    try:
        state = await env.run_rollout(env.get_rows()[0], client, "policy")
    finally:
        await env.close()
    report = _report(state)
    sent, got = report["sent"], report["got"]
    assert len(sent) == calls and sent[-1] > sent[0] + 2000 * (calls - 1)  # the history grows
    assert channel_stats["body_bytes_in"] == sum(sent)  # every byte read once, nothing more
    assert channel_stats["answer_bytes_out"] == sum(got)
    # the answer does not grow with the history (only the usage's digit counts may differ)
    assert max(got) - min(got) <= 8, got
    assert channel_stats["connections"] == calls
    assert len(state["trajectory"]) == calls
