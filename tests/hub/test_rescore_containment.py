"""A re-score job may start sandboxes of its own (user, mount, pid and network namespaces are
allowed inside the worker's sandbox, for environments whose rubric runs code in a sandbox), and
still cannot reach the network, write outside its scratch space, or read the hub's data dir
and secrets: not directly, and not as root of a user namespace it made itself.

The environment under test is hostile: its ``load_environment`` probes from inside the real
worker's re-score job (a release uploaded to a real hub, a pushed run, the worker's drain) and
prints what it reached; the job's log is read back from the hub's database.
"""

from __future__ import annotations

import json
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hub_server import models as m
from tests.sandbox.conftest import needs_bwrap

from .conftest import Hub
from .test_run_trust import _body, _drain, _honest, _meta, _published, _put, _result_id, _worker

pytestmark = needs_bwrap

#: run in the job's sandbox, as itself and then as root of new user/mount/net/pid namespaces:
#: {probe: "refused: ..." | "ESCAPED"}
PROBE = r"""
import ctypes, json, os, socket, sys

port, datadir, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
out = {}


def attempt(name, fn):
    try:
        fn()
        out[name] = "ESCAPED"
    except OSError as e:
        out[name] = f"refused: {os.strerror(e.errno) if e.errno else e}"


def connect():
    socket.create_connection(("127.0.0.1", port), timeout=3).close()


def netfilter():
    socket.socket(16, socket.SOCK_RAW, 12).close()  # AF_NETLINK, NETLINK_NETFILTER


attempt("connect to the host's loopback", connect)
attempt("open a netfilter socket", netfilter)
for path in ("/job", "/opt/vf/sdk/verifiers", "/opt/vf/lib/site-packages", "/usr", "/"):
    def write(path=path):
        with open(os.path.join(path, "pwned"), "w") as f:
            f.write("x")

    def remount(path=path):
        if libc.mount(None, path.encode(), None, 32 | 4096, None) != 0:  # MS_REMOUNT|MS_BIND
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        write(path)

    attempt(f"write {path}", write)
    attempt(f"remount {path} read-write", remount)
attempt("list the hub's data dir", lambda: os.listdir(datadir))
attempt("read the hub's database", lambda: open(os.path.join(datadir, "hub.db"), "rb").read(1))
attempt("reach it through /proc/1/root", lambda: os.listdir("/proc/1/root" + datadir))
out["the worker's secret in the environment"] = (
    "ESCAPED" if any(secret in v for v in os.environ.values()) else "refused: not there"
)
with open(os.path.expanduser("~/scratch"), "w") as f:  # the scratch space is writable
    f.write("ok")
print(json.dumps(out))
"""

HOSTILE_ENV = """
import json, subprocess, sys
import verifiers as vf

PROBE = {probe!r}
ARGS = [{port!r}, {datadir!r}, {secret!r}]


def load_environment(**kwargs):
    with open("/home/user/probe.py", "w") as f:
        f.write(PROBE)
    report = {{}}
    for how, prefix in (
        ("direct", []),
        ("nested", ["unshare", "--user", "--map-root-user", "--mount", "--net", "--pid",
                    "--fork", "--mount-proc"]),
    ):
        p = subprocess.run([*prefix, sys.executable, "/home/user/probe.py", *ARGS],
                           capture_output=True, text=True, timeout=60)
        report[how] = {{"rc": p.returncode, "out": p.stdout, "err": p.stderr[-2000:]}}
    print("CONTAINMENT " + json.dumps(report), flush=True)
    rows = [{{"question": "2+2?", "answer": "4"}}, {{"question": "3+3?", "answer": "6"}}]

    def exact(completion, answer) -> float:
        return float(completion[-1]["content"] == answer)

    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]), **kwargs)
"""


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP service on the host's loopback, where the worker and the hub live."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _job_log(hub: Hub, result_id: int) -> str:
    from sqlalchemy import select

    with hub.service.session() as db:
        job = db.scalar(select(m.Job).where(m.Job.kind == "rescore", m.Job.subject_id == result_id))
        assert job is not None
        return str(job.log or "")


def _report(log: str) -> dict[str, Any]:
    (line,) = [ln for ln in log.splitlines() if ln.startswith("CONTAINMENT ")]
    report: dict[str, Any] = json.loads(line.removeprefix("CONTAINMENT "))
    return report


def test_a_rescore_job_with_nested_namespaces_reaches_no_network_host_file_or_secret(
    hub: Hub, listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"hub-secret-{secrets.token_hex(8)}"
    monkeypatch.setenv("VF_HUB_TEST_SECRET", secret)  # in the worker's own environment
    datadir = str(hub.settings.data_dir.resolve())
    assert Path(datadir, "hub.db").exists() or hub.settings.database_url  # a real data dir
    body = HOSTILE_ENV.format(probe=PROBE, port=str(listener), datadir=datadir, secret=secret)
    _, token, name, sha = _published(hub, "contain", module_body=body)
    meta = _meta(name, sha)
    assert _put(hub.url, token, meta, _body(meta, _honest())).status_code == 201
    result_id = _result_id(hub, meta["run_id"])
    service, worker = _worker(hub)
    try:
        _drain(worker, {("rescore", result_id)})
    finally:
        service.engine.dispose()
    report = _report(_job_log(hub, result_id))
    nested = report["nested"]
    # nested namespaces are allowed: root of its own user, mount, network and pid namespaces
    assert nested["rc"] == 0, nested
    for how in ("direct", "nested"):
        assert report[how]["rc"] == 0, report[how]
        probes = json.loads(report[how]["out"])
        assert len(probes) == 16, probes
        escaped = {k: v for k, v in probes.items() if not v.startswith("refused")}
        assert not escaped, (how, escaped)
    # and nothing was written on the host through the read-only binds
    import sysconfig

    import verifiers

    for bound in (Path(verifiers.__file__).parent, Path(sysconfig.get_paths()["purelib"])):
        assert not (bound.resolve() / "pwned").exists(), bound
