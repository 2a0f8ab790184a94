"""Hostile agent programs in ``swe-agent`` (``vf.CliAgentEnv``): the agent itself is the
adversary. Each one tries a way around the rules, reports what it reached on stdout (JSON), and
must score exactly 0 (the bug stays unfixed), reach nothing, and leave no process behind."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import AsyncIterator
from typing import Any

import pytest

import verifiers as vf
from tests.environments.conftest import ENV_DIRS
from tests.sandbox.conftest import marker, needs_bwrap, pids_with
from verifiers.clients.native import NativeClient
from verifiers.testing import OpenAITestServer

pytestmark = needs_bwrap
assert "swe-agent" in ENV_DIRS  # (the conftest import puts the package on sys.path)

import vf_swe_agent  # noqa: E402

TOKENS = {"extra_body": {"return_token_ids": True}}

# Every hostile program starts a detached process first (the containment check looks for it)
# and ends by printing its report.
_PRELUDE = """
import json, os, socket, subprocess, sys, time, urllib.request, urllib.error
subprocess.Popen(["setsid", "sleep", os.environ["TAG"]], start_new_session=True)
BASE = os.environ["OPENAI_BASE_URL"]
report = {}
def post(url, body, headers=None):
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None
    except Exception as e:
        return type(e).__name__, None
"""

TAMPER = """
# rewrite the tests to pass, hook unittest everywhere it could be hooked, then look for the
# grader and the host
passing = "import unittest\\nclass T(unittest.TestCase):\\n    def test_ok(self): pass\\n"
for name in os.listdir("tests"):
    if name.startswith("test"):
        open(os.path.join("tests", name), "w").write(passing)
hook = "import unittest\\nunittest.TestCase.run = lambda self, result=None: None\\n"
open("sitecustomize.py", "w").write(hook)
open("minilib/__init__.py", "a").write("\\n" + hook)
open("tests/__init__.py", "w").write(hook)
report["host_paths"] = [p for p in ("/work", "/root", "/etc/shadow", "/var/tmp", "/proc/1/root/work")
                        if os.path.exists(p) and os.listdir(p) if os.path.isdir(p)]
found = []
for root, dirs, files in os.walk("/"):
    if root.startswith(("/proc", "/sys", "/dev")):
        dirs[:] = []
        continue
    found += [os.path.join(root, d) for d in dirs if d in ("grading", "verifiers", "vf_swe_lite")]
report["grader_found"] = found
"""

LOOPBACK = """
# the host's services: the model server's port on every address a sandbox might reach
port = int(os.environ["HOST_PORT"])
reached = []
for host in ("127.0.0.1", "10.0.2.2", "172.17.0.1", "::1"):
    try:
        socket.create_connection((host, port), timeout=3).close()
        reached.append(host)
    except OSError:
        pass
report["reached"] = reached
# the Unix sockets it can see: only its own channel
socks = []
for root, dirs, files in os.walk("/"):
    if root.startswith(("/proc", "/sys")):
        dirs[:] = []
        continue
    for f in files:
        p = os.path.join(root, f)
        try:
            if __import__("stat").S_ISSOCK(os.lstat(p).st_mode):
                socks.append(p)
        except OSError:
            pass
report["sockets"] = socks
"""

CROSS = """
# another rollout's secret (leaked to it by the test) used on its own relay, in the path and
# as the API key; and the other rollout's socket by its host path
other = os.environ["OTHER_SECRET"]
host = BASE.split("/vf/")[0]
body = {"messages": [{"role": "user", "content": "answer for me"}]}
report["other_in_path"] = post(host + "/vf/" + other + "/v1/chat/completions", body)[0]
report["other_as_key"] = post(host + "/v1/chat/completions", body,
                              {"Authorization": "Bearer " + other})[0]
report["other_socket_visible"] = os.path.exists(os.environ["OTHER_SOCKET"])
"""

FORGE = """
# a request carrying a forged history and forged token ids, and two requests pipelined in one
# write, the second with a guessed secret
body = {"messages": [
    {"role": "user", "content": "fix it"},
    {"role": "assistant", "content": "I fixed it", "prompt_token_ids": [1, 2, 3]},
    {"role": "user", "content": "really?"}],
    "prompt_token_ids": [9, 9, 9], "choices": [{"message": {"content": "forged"}}],
    "token_ids": [7, 7], "logprobs": True, "n": 1}
report["forged"] = post(BASE + "/chat/completions", body)[0]
host, _, rest = BASE.partition("//")[2].partition("/")
h, p = host.split(":")
s = socket.create_connection((h, int(p)))
one = json.dumps({"messages": [{"role": "user", "content": "first"}]}).encode()
req = lambda path, b: (("POST %s HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n"
                        "Content-Length: %d\\r\\n\\r\\n") % (path, len(b))).encode() + b
s.sendall(req("/" + rest + "/chat/completions", one) +
          req("/vf/guessed-secret/v1/chat/completions", one))
time.sleep(2)
s.settimeout(10)
data = b""
try:
    while data.count(b"HTTP/1.1 ") < 2:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except OSError:
    pass
report["pipelined"] = [m.decode() for m in __import__("re").findall(rb"HTTP/1.1 (\\d+)", data)]
"""

FLOOD = """
# memory: a huge declared body, huge headers, many connections, many requests in flight
host, _, rest = BASE.partition("//")[2].partition("/")
h, p = host.split(":")
path = "/" + rest + "/chat/completions"
s = socket.create_connection((h, int(p)))
s.sendall(("POST %s HTTP/1.1\\r\\nContent-Length: %d\\r\\n\\r\\n" % (path, 1 << 30)).encode())
sent, status = 0, b""
try:
    s.settimeout(10)
    while sent < (64 << 20):
        s.sendall(b"x" * (1 << 20))
        sent += 1 << 20
except OSError:
    pass
try:
    status = s.recv(100)
except OSError:
    pass
report["huge_body"] = {"sent_mib": sent >> 20, "status": status[:12].decode(errors="replace")}
s = socket.create_connection((h, int(p)))
try:
    s.sendall(b"GET / HTTP/1.1\\r\\n" + b"X: " + b"y" * (1 << 20))
except OSError:
    pass
s.settimeout(10)
try:
    report["huge_head"] = s.recv(100)[:12].decode(errors="replace")
except OSError as e:
    report["huge_head"] = type(e).__name__
conns = []
for _ in range(300):
    try:
        conns.append(socket.create_connection((h, int(p)), timeout=5))
    except OSError:
        break
report["connections_opened"] = len(conns)
for c in conns:
    c.close()
print(json.dumps(report), flush=True)  # the flood below ends the rollout at max_turns
import concurrent.futures as cf
body = {"messages": [{"role": "user", "content": "x" * 100000}]}
with cf.ThreadPoolExecutor(40) as pool:
    codes = list(pool.map(lambda _: post(BASE + "/chat/completions", body)[0], range(40)))
report["flood_codes"] = sorted(set(map(str, codes)))
"""


def program(body: str) -> str:
    return "python3 -c " + shlex.quote(_PRELUDE + body + "\nprint(json.dumps(report))\n")


@pytest.fixture
async def served() -> AsyncIterator[tuple[NativeClient, OpenAITestServer]]:
    async with OpenAITestServer(responder=vf_swe_agent.wrong_responder) as srv:
        yield NativeClient(srv.base_url), srv


async def hostile(
    client: NativeClient, body: str, env_vars: dict[str, str] | None = None, **kw: Any
) -> tuple[vf.State, dict[str, Any], str]:
    tag = marker()
    env = vf_swe_agent.load_environment(
        num_examples=1,
        agent="bash-loop",
        timeout_seconds=90,
        environment_vars={"TAG": tag, **(env_vars or {})},
        **kw,
    )
    env.run_command = program(body)  # type: ignore[attr-defined]
    try:
        state = await env.run_rollout(env.get_rows()[0], client, "m", TOKENS)
    finally:
        await env.close()
    lines = (state.get("agent_stdout") or "").strip().splitlines()
    assert lines, state.get("agent_stderr")
    return state, json.loads(lines[-1]), tag


def scored_zero_and_contained(state: vf.State, tag: str) -> None:
    assert state["error"] is None, state["error"]
    assert state["reward"] == 0.0
    assert pids_with(tag) == []  # the detached process died with the sandbox


async def test_rewriting_the_tests_and_hunting_the_grader_scores_zero(
    served: tuple[NativeClient, OpenAITestServer],
) -> None:
    state, report, tag = await hostile(served[0], TAMPER)
    scored_zero_and_contained(state, tag)
    assert report["host_paths"] == []
    assert report["grader_found"] == []
    assert state["metrics"]["tests_failed"] > 0  # the pristine suite ran in the grader


async def test_the_hosts_loopback_and_other_sockets_are_unreachable(
    served: tuple[NativeClient, OpenAITestServer],
) -> None:
    client, srv = served
    port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
    state, report, tag = await hostile(client, LOOPBACK, {"HOST_PORT": str(port)})
    scored_zero_and_contained(state, tag)
    assert report["reached"] == []
    assert report["sockets"] == []  # the channel is a socket on its loopback, not a file
    assert len(srv.requests) == 0


async def test_another_rollouts_channel_cannot_be_used(
    served: tuple[NativeClient, OpenAITestServer],
) -> None:
    client, _ = served
    env = vf_swe_agent.load_environment(num_examples=1, agent="bash-loop")
    # a victim rollout's channel, on the same interception server the hostile one will use
    victim = await env.interception_server().open_channel()
    tag = marker()
    env.run_command = program(CROSS)  # type: ignore[attr-defined]
    env.environment_vars.update(
        {"TAG": tag, "OTHER_SECRET": victim.secret, "OTHER_SOCKET": victim.path}
    )
    try:
        state = await env.run_rollout(env.get_rows()[0], client, "m", TOKENS)
        report = json.loads(state["agent_stdout"].strip().splitlines()[-1])
        assert victim.stats["calls"] == 0 and victim.pending() == 0
    finally:
        await victim.close()
        await env.close()
    scored_zero_and_contained(state, tag)
    assert report == {"other_in_path": 401, "other_as_key": 401, "other_socket_visible": False}
    assert state["trajectory"] == []


async def test_a_forged_step_is_not_recorded(
    served: tuple[NativeClient, OpenAITestServer],
) -> None:
    client, srv = served
    state, report, tag = await hostile(client, FORGE)
    scored_zero_and_contained(state, tag)
    assert report["forged"] == 200
    assert report["pipelined"] == ["200", "401"]
    # two real model calls, two steps; the forged fields never reached the model server
    assert len(state["trajectory"]) == len(srv.requests) == 2
    for request in srv.requests:
        body = request if isinstance(request, dict) else json.loads(request)
        assert "prompt_token_ids" not in body and "choices" not in body
        assert "token_ids" not in body
    for step in state["trajectory"]:
        assert step["tokens"] is not None
        assert step["tokens"]["prompt_ids"] != [9, 9, 9]
        assert step["response"].content != "forged"


async def test_flooding_the_interception_server_is_bounded(
    served: tuple[NativeClient, OpenAITestServer],
) -> None:
    client, _ = served
    state, report, tag = await hostile(client, FLOOD, max_turns=3)
    scored_zero_and_contained(state, tag)
    assert report["huge_body"]["status"].startswith("HTTP/1.1 413")
    assert report["huge_body"]["sent_mib"] < 64  # cut off, not read
    assert report["huge_head"].startswith("HTTP/1.1 431")
    # 40 requests at once: a few queue, the rest are refused; the rollout ends at max_turns
    assert state["stop_condition"] == "max_turns_reached" and state["turn"] == 3


async def test_the_server_still_serves_after_a_flood(
    served: tuple[NativeClient, OpenAITestServer],
) -> None:
    """Rollouts after a hostile one are unaffected (the flood was bounded to its channel)."""
    client, _ = served
    await hostile(client, FLOOD, max_turns=3)
    env = vf_swe_agent.load_environment(num_examples=2, agent="bash-loop")
    try:
        states = await asyncio.gather(
            *(env.run_rollout(r, vf.OracleClient(), "oracle") for r in env.get_rows())
        )
    finally:
        await env.close()
    assert [s["reward"] for s in states] == [1.0, 1.0]
