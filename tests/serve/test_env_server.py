"""The env server in its own process: concurrency, results streamed back as they finish,
cancellation and client disconnects (rollouts cancelled, cleanup run), a clear error for an
environment that fails to load, clean SIGTERM shutdown with no orphaned sandbox, several
servers balanced by the client, worker processes."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import zmq

import verifiers as vf
from tests.sandbox.conftest import marker, needs_bwrap, pids_with
from tests.serve.conftest import authenticated_dealer, spawned_server, wait_until
from verifiers.serve import EnvServerError, ZMQEnvClient
from verifiers.serve.protocol import pack, unpack
from verifiers.testing.server import OpenAITestServer

ROWS = [
    {
        "prompt": [{"role": "user", "content": f"Say: {i}"}],
        "example_id": i,
        "info": {"numbers": [i, i + 10, i + 20]},
    }
    for i in range(8)
]


@pytest.fixture
async def clients() -> Any:
    """Env clients made by a test, closed at its end whatever happened."""
    made: list[ZMQEnvClient] = []

    def make(*args: Any, **kwargs: Any) -> ZMQEnvClient:
        made.append(ZMQEnvClient(*args, **kwargs))
        return made[-1]

    yield make
    for c in made:
        await c.close()


def cfg(srv: OpenAITestServer) -> vf.ClientConfig:
    return vf.ClientConfig(api_base_url=srv.base_url, api_key_var="VF_TEST_NO_KEY")


async def test_rollouts_and_groups_run_concurrently_and_stream_back_as_they_finish(
    clients: Any, model_server: OpenAITestServer, tmp_path: Path
) -> None:
    args = {"delay": 60.0, "slow_examples": [0], "track_dir": str(tmp_path)}
    with spawned_server("serve_probe", args) as (address, _):
        client = clients(address=address, name="probe")
        await client.wait_for_server_startup(timeout=120)
        slow = asyncio.ensure_future(client.run_group([ROWS[0]] * 2, cfg(model_server), "m", {}))
        await wait_until(lambda: len(os.listdir(tmp_path)) == 2, what="the slow group to start")
        fast = await asyncio.gather(
            *(client.run_rollout(ROWS[i], cfg(model_server), "m", {}) for i in range(1, 6)),
            client.run_group([ROWS[6]] * 3, cfg(model_server), "m", {}, 0, ["server_pid"]),
        )
        assert [o["reward"] for o in fast[:5]] == [1.0] * 5
        assert [o["reward"] for o in fast[5]] == [1.0] * 3
        assert not slow.done()  # the slow group is still running; the rest came back
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        # the cancel reached the server: its rollouts were cancelled and cleaned up
        await wait_until(lambda: os.listdir(tmp_path) == [], what="the cancelled group's cleanup")


async def test_a_client_that_disconnects_mid_group_has_its_rollouts_cancelled(
    clients: Any, model_server: OpenAITestServer, tmp_path: Path
) -> None:
    args = {"delay": 300.0, "slow_examples": [0], "track_dir": str(tmp_path)}
    with spawned_server("serve_probe", args) as (address, _):
        survivor = clients(address=address)
        await survivor.wait_for_server_startup(timeout=120)
        # a client that sends a group and goes away without a word (a crashed trainer)
        ctx = zmq.Context()
        sock = authenticated_dealer(ctx, address)
        request = {
            "request_type": "run_group",
            "group_inputs": [ROWS[0]] * 4,
            "client_config": cfg(model_server).model_dump(mode="json"),
            "model": "m",
            "sampling_args": {},
            "max_retries": 0,
            "state_columns": None,
        }
        sock.send_multipart([b"gone-1", pack(request)])
        await wait_until(lambda: len(os.listdir(tmp_path)) == 4, what="the group to start")
        sock.close(linger=0)
        ctx.term()
        # cancelled at once (the rollouts would otherwise sleep 300s), cleanup handlers ran
        await wait_until(
            lambda: os.listdir(tmp_path) == [], what="the disconnected client's cleanup"
        )
        # the server goes on serving others
        out = await survivor.run_group([ROWS[3]] * 2, cfg(model_server), "m", {})
        assert [o["reward"] for o in out] == [1.0, 1.0]


async def test_an_environment_that_fails_to_load_is_one_clear_error(
    clients: Any, env_paths: list[str]
) -> None:
    with spawned_server("serve_probe", {"fail": True}) as (address, process):
        client = clients(address=address, name="probe")
        started = time.monotonic()
        with pytest.raises(EnvServerError, match="asked to fail while loading") as info:
            await client.wait_for_server_startup(timeout=120)
        assert "could not load environment 'serve_probe'" in str(info.value)
        assert time.monotonic() - started < 60  # not a wait for the startup timeout
        with pytest.raises(EnvServerError, match="asked to fail while loading"):
            await client.run_rollout(ROWS[0], vf.ClientConfig(), "m", {})
        assert process.is_alive()


async def test_an_unknown_environment_names_the_environment(
    clients: Any, env_paths: list[str]
) -> None:
    with spawned_server("no_such_env_xyz") as (address, _):
        client = clients(address=address)
        with pytest.raises(EnvServerError, match="no_such_env_xyz"):
            await client.wait_for_server_startup(timeout=120)


async def test_a_bad_request_gets_an_error_answer_not_a_hang(
    clients: Any,
    model_server: OpenAITestServer,
) -> None:
    with spawned_server("serve_probe") as (address, _):
        client = clients(address=address)
        await client.wait_for_server_startup(timeout=120)
        ctx = zmq.Context()
        sock = authenticated_dealer(ctx, address)
        for payload in (pack({"request_type": "explode"}), b"\xc1not msgpack"):
            sock.send_multipart([b"r", payload])
            assert sock.poll(30_000), "no answer"
            rid, answer = sock.recv_multipart()
            assert rid == b"r" and unpack(answer)["success"] is False
        sock.close(linger=0)
        ctx.term()


async def test_several_servers_of_one_environment_are_balanced_by_the_client(
    clients: Any,
    model_server: OpenAITestServer,
) -> None:
    args = {"delay": 0.2}
    with (
        spawned_server("serve_probe", args) as (a, pa),
        spawned_server("serve_probe", args) as (b, pb),
    ):
        client = clients(address=[a, b], name="probe")
        await client.wait_for_server_startup(timeout=120)
        outs = await asyncio.gather(
            *(
                client.run_rollout(ROWS[i % 8], cfg(model_server), "m", {}, 0, ["server_pid"])
                for i in range(12)
            )
        )
        pids = [o["server_pid"] for o in outs]
        assert set(pids) == {pa.pid, pb.pid}
        assert abs(pids.count(pa.pid) - pids.count(pb.pid)) <= 2
        assert [o["reward"] for o in outs] == [1.0] * 12


async def test_worker_processes_share_the_requests(
    clients: Any, model_server: OpenAITestServer
) -> None:
    with spawned_server("serve_probe", {"delay": 0.2}, num_workers=2) as (address, process):
        client = clients(address=address)
        await client.wait_for_server_startup(timeout=180)
        outs = await asyncio.gather(
            *(
                client.run_group([ROWS[i]] * 2, cfg(model_server), "m", {}, 0, ["server_pid"])
                for i in range(8)
            )
        )
        pids = {o["server_pid"] for group in outs for o in group}
        assert len(pids) == 2 and process.pid not in pids
        assert all(o["reward"] == 1.0 for group in outs for o in group)


def _sleepers(tag: str) -> list[int]:
    """The processes running ``sleep <tag>`` itself."""
    found = []
    for pid in pids_with(tag):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", tag.encode()]:
            found.append(pid)
    return found


@needs_bwrap
async def test_sigterm_shuts_down_cleanly_with_no_orphaned_sandbox(
    clients: Any, env_paths: list[str]
) -> None:
    tag = marker()

    def model(request: dict[str, Any]) -> Any:
        if any(m["role"] == "tool" for m in request["messages"]):
            return "done"
        command = f"setsid -f sleep {tag}; sleep 300"
        return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}

    with OpenAITestServer(responder=model) as srv:
        with spawned_server("serve_sandbox") as (address, process):
            client = clients(address=address)
            await client.wait_for_server_startup(timeout=120)
            env = vf.load_environment("serve_sandbox")
            row = env.get_dataset().to_list()[0]
            group = asyncio.ensure_future(client.run_group([row] * 2, cfg(srv), "m", {}))
            # one detached `sleep <tag>` per sandbox (the shell that started it is counted
            # by pids_with too, or not, depending on how the sandbox runs the command)
            await wait_until(
                lambda: len(_sleepers(tag)) == 2 or group.done(),
                deadline_s=120,
                what="both sandboxes' processes",
            )
            assert not group.done(), group.result()
            os.kill(process.pid, signal.SIGTERM)
            await asyncio.to_thread(process.join, 60)
            assert process.exitcode == 0
            # the rollouts were cancelled: their sandboxes (and what ran inside) are gone
            await wait_until(lambda: pids_with(tag) == [], deadline_s=15, what="sandbox teardown")
            group.cancel()
            with pytest.raises((asyncio.CancelledError, EnvServerError)):
                await group
