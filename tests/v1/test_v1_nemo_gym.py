"""The NeMo Gym taskset (``verifiers.v1.tasksets.nemo_gym``) against a small resource server
written here: a session per rollout (its cookie), the row's plain function tools called as
``POST /<tool>`` within that session, and ``/verify`` reading the conversation as a
Responses object; plus the env lifecycle (``Env.start`` / ``stop``) a managed server uses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import verifiers.v1 as vf
from verifiers.testing import OpenAITestServer
from verifiers.v1.tasksets.nemo_gym import NeMoGymConfig, NeMoGymEnv, NeMoGymTaskset


def _weather(city: str) -> str:
    return f"It is windy in {city}."


@pytest.fixture
async def resource_server() -> AsyncIterator[tuple[str, dict[str, Any]]]:
    sessions: dict[str, dict[str, Any]] = {}
    seen: dict[str, Any] = {"verify": []}

    async def seed(request: web.Request) -> web.Response:
        row = await request.json()
        sid = f"s{len(sessions)}"
        sessions[sid] = {"city": row["verifier_metadata"]["city"], "calls": []}
        response = web.json_response({})
        response.set_cookie("session", sid)
        return response

    async def get_weather(request: web.Request) -> web.Response:
        session = sessions[request.cookies["session"]]
        args = await request.json()
        session["calls"].append(args["city"])
        return web.Response(text=_weather(args["city"]))

    async def verify(request: web.Request) -> web.Response:
        body = await request.json()
        session = sessions[request.cookies["session"]]
        seen["verify"].append(body)
        texts = [
            part["text"]
            for item in body["response"]["output"]
            if item["type"] == "message"
            for part in item["content"]
        ]
        called = session["city"] in session["calls"]
        said = any(_weather(session["city"]) in t for t in texts)
        return web.json_response(
            {**body, "reward": float(called and said), "tool_call_seen": called, "note": "x"}
        )

    app = web.Application()
    app.add_routes(
        [
            web.post("/seed_session", seed),
            web.post("/get_weather", get_weather),
            web.post("/verify", verify),
        ]
    )
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def _dataset(tmp_path: Path, cities: list[str]) -> Path:
    path = tmp_path / "rows.jsonl"
    rows = [
        {
            "responses_create_params": {
                "input": [{"role": "user", "content": f"Weather in {city}? Use the tool."}],
                "tools": [TOOL],
            },
            "verifier_metadata": {"city": city},
        }
        for city in cities
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _respond(request: dict[str, Any]) -> Any:
    messages = request["messages"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    city = user.split("Weather in ")[1].split("?")[0]
    results = [m for m in messages if m["role"] == "tool"]
    if not results:
        return {"tool_calls": [{"name": "get_weather", "arguments": {"city": city}}]}
    return f"Report: {results[-1]['content']}"


async def test_each_rollout_runs_in_its_own_session_and_is_scored_by_verify(
    resource_server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    url, seen = resource_server
    config = NeMoGymConfig(
        dataset=_dataset(tmp_path, ["Oslo", "Lima"]), task={"resources_url": url}
    )  # type: ignore[arg-type]
    tasks = list(NeMoGymTaskset(config))
    assert [t.data.name for t in tasks] == ["rows:0", "rows:1"]
    async with OpenAITestServer(responder=_respond) as server:
        agent = vf.Agent(server.base_url, "m")
        traces = [await agent.run(task) for task in tasks]
    for trace, city in zip(traces, ["Oslo", "Lima"], strict=True):
        assert trace.ok, trace.errors
        assert trace.rewards["nemo_gym"].score == 1.0 and trace.reward == 1.0
        assert trace.metrics == {"tool_call_seen": 1.0}
        assert trace.info["nemo_gym"]["note"] == "x"
        assert trace.tool_messages[0].content == _weather(city)
    kinds = [item["type"] for item in seen["verify"][0]["response"]["output"]]
    assert kinds == ["function_call", "function_call_output", "message"]
    assert seen["verify"][0]["verifier_metadata"] == {"city": "Oslo"}


async def test_a_task_without_a_server_fails_its_setup_saying_how_to_name_one(
    tmp_path: Path,
) -> None:
    task = next(iter(NeMoGymTaskset(NeMoGymConfig(dataset=_dataset(tmp_path, ["Rome"])))))
    async with OpenAITestServer(responder=_respond) as server:
        trace = await vf.Agent(server.base_url, "m").run(task)
    assert not trace.ok and "resources-url" in trace.errors[0].message


class _Counting(vf.SingleAgentEnv):
    events: list[str] = []

    async def start(self) -> None:
        self.events.append("start")

    async def stop(self) -> None:
        self.events.append("stop")


async def test_an_env_starts_once_before_its_episodes_and_stops_at_close(
    resource_server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    url, _ = resource_server
    config = NeMoGymConfig(
        dataset=_dataset(tmp_path, ["Oslo", "Lima"]), task={"resources_url": url}
    )  # type: ignore[arg-type]
    env = _Counting(NeMoGymTaskset(config), vf.AgentConfig(harness="null"))  # type: ignore[arg-type]
    async with OpenAITestServer(responder=_respond) as server:
        episodes = await env.evaluate(server.base_url, "m")
        assert _Counting.events == ["start"]
        await env.close()
    assert _Counting.events == ["start", "stop"]
    assert [e.traces[0].reward for e in episodes] == [1.0, 1.0]


async def test_the_nemo_gym_env_uses_a_configured_server_as_is(tmp_path: Path) -> None:
    config = NeMoGymConfig(
        dataset=_dataset(tmp_path, ["Oslo"]), task={"resources_url": "http://127.0.0.1:9"}
    )  # type: ignore[arg-type]
    env = NeMoGymEnv(NeMoGymTaskset(config))
    await env.start()  # nothing to start
    await env.close()
    assert config.task.resources_url == "http://127.0.0.1:9"
