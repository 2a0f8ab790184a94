"""A program harness in the bwrap runtime reaches its interception channel on the sandbox's
own loopback (a socket the sandbox's init opened and handed over): no relay process runs in
the sandbox, the program still gets its model answers, and the channel's secret still
guards it."""

from __future__ import annotations

import json
from typing import Any

import pytest

import verifiers.v1 as vf
from verifiers.agents.interception import FORWARDER
from verifiers.sandbox.bwrap import bwrap_available
from verifiers.testing import OpenAITestServer
from verifiers.v1.harnesses import ProgramHarness, ProgramHarnessConfig
from verifiers.v1.runtimes import BwrapConfig

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")

#: lists every process of its sandbox (its own pid namespace) by argv, tries the channel with
#: a wrong secret, then asks the model twice: the second call carries the first answer
PROGRAM = r"""
import json, os, urllib.error, urllib.request
procs = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")[:-1]
        except OSError:
            continue
        procs.append({"pid": int(pid), "argv": [a.decode("utf-8", "replace") for a in argv]})
base = os.environ["OPENAI_BASE_URL"]
key = os.environ["OPENAI_API_KEY"]
def ask(url, content):
    body = json.dumps({"model": os.environ["OPENAI_MODEL"],
                       "messages": [{"role": "user", "content": content}]}).encode()
    req = urllib.request.Request(url + "/chat/completions", body,
                                 {"Content-Type": "application/json",
                                  "Authorization": "Bearer " + key})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)["choices"][0]["message"]["content"]
wrong = base.replace(key, "not-the-secret")
try:
    ask(wrong, "sneak")
    refused = 0
except urllib.error.HTTPError as e:
    refused = e.code
first = ask(base, json.dumps({"self": os.getpid(), "procs": procs, "refused": refused}))
ask(base, "heard " + first)
"""


class Lister(ProgramHarness):
    def command(self, task: Any, trace: Any, agent: Any) -> tuple[list[str], dict[str, str]]:
        return ["python3", "-c", PROGRAM], {}


class Data(vf.TaskData):
    pass


class PlainTask(vf.Task[Data]):
    pass


async def test_bwrap_program_reaches_its_model_with_no_relay_process() -> None:
    seen: list[str] = []

    def respond(request: dict[str, Any]) -> Any:
        seen.append(request["messages"][-1]["content"])
        return f"answer-{len(seen)}"

    task = PlainTask(Data(idx=0, prompt="go"))
    harness = Lister(ProgramHarnessConfig(runtime=BwrapConfig()))
    async with OpenAITestServer(responder=respond) as server:
        trace = await vf.Agent(server.base_url, "policy", harness=harness).run(task)
    assert trace.ok, trace.errors
    assert trace.num_turns == 2 and len(seen) == 2  # the wrong secret never reached the model
    report = json.loads(seen[0])
    assert report["refused"] >= 400
    argvs = {p["pid"]: p["argv"] for p in report["procs"]}
    # the listing sees the program itself: the sandbox's processes are readable
    assert argvs[report["self"]][:2] == ["python3", "-c"]
    relays = [a for a in argvs.values() if FORWARDER in a]
    assert relays == [], argvs
    assert seen[1] == "heard answer-1"
