"""Wire compatibility with verifiers 0.3.1's env server and client, both directions: a 0.3.1
client drives our server, and our client (through ``env.run_group(..., env_client=...)``, as
prime-rl calls it) drives a 0.3.1 server; rewards, token ids and masks are the same as when
our client drives our server.

verifiers 0.3.1 runs in its own virtual environment (``conftest.python_031``: created once
with pip in ``~/.cache/verifiers-tests/venv-0.3.1``, or named by
``VF_TEST_VERIFIERS_031_PYTHON``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from tests.serve.conftest import ENV_PATHS, python_031, spawned_server, subprocess_server
from tests.serve.test_classic_rollouts import check_tokens
from tests.serve.test_prime_rl_e2e import prime_rl_client_config
from verifiers.serve import ZMQEnvClient
from verifiers.testing.server import OpenAITestServer

pytestmark = pytest.mark.slow

# run by the 0.3.1 interpreter: the orchestrator sequence with 0.3.1's own client
CLIENT_031 = """
import asyncio, json, sys
import verifiers as vf
from verifiers.serve import ZMQEnvClient

async def main(address, base_url):
    client = ZMQEnvClient(address=address, name="probe")
    await client.wait_for_server_startup(timeout=120)
    config = vf.ClientConfig(client_idx=0, api_base_url=base_url, api_key_var="VF_TEST_NO_KEY")
    sampling = {"temperature": 1.0, "logprobs": True, "extra_body": {"return_token_ids": True}}
    rows = [{"prompt": [{"role": "user", "content": f"Say: {i}"}], "example_id": i,
             "info": {"numbers": [i, i + 10, i + 20]}} for i in range(3)]
    groups = await asyncio.gather(*(client.run_group([r] * 2, config, "m", sampling, 0,
                                                     ["trajectory"]) for r in rows))
    single = await client.run_rollout(rows[1], config, "m", sampling, 0, ["trajectory"])
    await client.close()
    print(json.dumps([[dict(o) for o in g] for g in groups] + [[dict(single)]]))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""

ROWS = [
    {
        "prompt": [{"role": "user", "content": f"Say: {i}"}],
        "example_id": i,
        "info": {"numbers": [i, i + 10, i + 20]},
    }
    for i in range(3)
]


def summary(groups: list[list[dict[str, Any]]]) -> list[list[tuple[Any, ...]]]:
    """What must agree across versions: rewards and each step's token ids and masks."""
    return [
        [
            (
                o["example_id"],
                o["reward"],
                [
                    (
                        s["tokens"]["prompt_ids"],
                        s["tokens"]["completion_ids"],
                        s["tokens"]["completion_mask"],
                        s["tokens"]["completion_logprobs"],
                    )
                    for s in o["trajectory"]
                ],
            )
            for o in g
        ]
        for g in groups
    ]


async def run_with_our_client(
    address: str, base_url: str, insecure: bool = False
) -> list[list[dict[str, Any]]]:
    env = vf.load_environment("serve_probe")
    # 0.3.1 speaks plain ZeroMQ: talking to (or serving) it needs insecure=True
    client = ZMQEnvClient(address=address, name="probe", insecure=insecure)
    await client.wait_for_server_startup(timeout=300)
    config = prime_rl_client_config(base_url, 0)
    sampling = {"temperature": 1.0, "logprobs": True, "extra_body": {"return_token_ids": True}}
    groups = await asyncio.gather(
        *(
            env.run_group(
                [r] * 2,
                client=config,
                model="m",
                sampling_args=sampling,
                max_retries=0,
                state_columns=["trajectory"],
                env_client=client,
            )
            for r in ROWS
        )
    )
    single = await env.run_rollout(
        ROWS[1],
        client=config,
        model="m",
        sampling_args=sampling,
        max_retries=0,
        state_columns=["trajectory"],
        env_client=client,
    )
    await client.close()
    return [*groups, [single]]


@pytest.fixture(scope="module")
def py031() -> str:
    return python_031()


async def test_our_client_and_our_server(model_server: OpenAITestServer) -> None:
    with spawned_server("serve_probe") as (address, _):
        groups = await run_with_our_client(address, model_server.base_url)
    assert all(o["reward"] == 1.0 for g in groups for o in g)
    for g in groups:
        for o in g:
            check_tokens(o)


async def test_a_031_client_drives_our_server(model_server: OpenAITestServer, py031: str) -> None:
    with spawned_server("serve_probe", insecure=True) as (address, _):
        proc = await asyncio.create_subprocess_exec(
            py031,
            "-c",
            CLIENT_031,
            address,
            model_server.base_url,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd="/",
            env={**os.environ, "PYTHONPATH": os.pathsep.join(ENV_PATHS)},
        )
        out, err = await asyncio.wait_for(proc.communicate(), 300)
        assert proc.returncode == 0, err.decode()[-3000:]
        theirs = json.loads(out.decode().strip().splitlines()[-1])
        ours = await run_with_our_client(address, model_server.base_url, insecure=True)
    assert summary(theirs) == summary(ours)
    assert all(o["reward"] == 1.0 for g in theirs for o in g)
    for g in theirs:
        for o in g:
            check_tokens(o)
            assert o["token_usage"]["final_output_tokens"] > 0


async def test_our_client_drives_a_031_server(model_server: OpenAITestServer, py031: str) -> None:
    with subprocess_server(py031, "serve_probe") as address:
        theirs = await run_with_our_client(address, model_server.base_url, insecure=True)
    with spawned_server("serve_probe") as (address, _):
        ours = await run_with_our_client(address, model_server.base_url)
    assert summary(theirs) == summary(ours)
    assert all(o["reward"] == 1.0 for g in theirs for o in g)
    for g in theirs:
        for o in g:
            check_tokens(o)
            usage = o["token_usage"]
            mine = next(m for g2 in ours for m in g2 if m["example_id"] == o["example_id"])
            assert usage["final_input_tokens"] == mine["token_usage"]["final_input_tokens"]
            assert usage["final_output_tokens"] == mine["token_usage"]["final_output_tokens"]


def test_the_031_interpreter_is_separate(py031: str) -> None:
    probe = subprocess.run(
        [
            py031,
            "-c",
            "import sys, importlib.metadata as m; print(m.version('verifiers'), sys.prefix)",
        ],
        capture_output=True,
        text=True,
        cwd="/",
        check=True,
    )
    found, prefix = probe.stdout.split()
    assert found == "0.3.1" and Path(prefix).resolve() != Path(sys.prefix).resolve()
