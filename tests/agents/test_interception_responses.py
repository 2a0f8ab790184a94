"""The interception server's OpenAI Responses route (what Codex speaks), driven by the real
``openai`` client and answered by the project's test server: plain text, a function-tool round
trip, a custom (free-form) tool, streaming, and malformed requests as OpenAI-shaped 400s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest

from verifiers.agents.interception import Channel, InterceptedCall, InterceptionServer
from verifiers.clients.native import NativeClient
from verifiers.clients.retry import RetryPolicy
from verifiers.testing import OpenAITestServer


@pytest.fixture
async def server() -> AsyncIterator[InterceptionServer]:
    srv = InterceptionServer(max_body_bytes=64 << 10)
    yield srv
    await srv.close()


@pytest.fixture
async def client(server: InterceptionServer) -> AsyncIterator[tuple[Channel, openai.AsyncOpenAI]]:
    channel = await server.open_channel()
    sdk = openai.AsyncOpenAI(
        base_url=f"http://agent{channel.base_path()}",
        api_key="unused",
        http_client=httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=channel.path)),
        max_retries=0,
    )
    yield channel, sdk
    await sdk.close()


async def answer_with(model: OpenAITestServer, channel: Channel, n: int) -> list[InterceptedCall]:
    """Answer the channel's next ``n`` calls through the test server, as a harness does."""
    native = NativeClient(model.base_url, timeout=10.0, retry=RetryPolicy(max_retries=0))
    calls: list[InterceptedCall] = []
    try:
        for _ in range(n):
            call = await asyncio.wait_for(channel.next_call(), 10)
            response = await native.get_response(
                call.messages,
                "policy",
                sampling_args={**call.sampling_args, "extra_body": {"return_token_ids": True}},
                tools=call.tools,
            )
            call.answer(response)
            calls.append(call)
    finally:
        await native.close()
    return calls


async def test_plain_text(client: tuple[Channel, openai.AsyncOpenAI]) -> None:
    channel, sdk = client
    async with OpenAITestServer(replies=["hello there"]) as model:
        reply, calls = await asyncio.gather(
            sdk.responses.create(
                model="gpt-test",
                instructions="be brief",
                input="say hi",
                max_output_tokens=64,
                temperature=0.2,
            ),
            answer_with(model, channel, 1),
        )
    assert reply.status == "completed" and reply.model == "gpt-test"
    assert reply.output_text == "hello there"
    assert reply.usage is not None and reply.usage.output_tokens > 0
    call = calls[0]
    assert call.dialect == "responses" and not call.stream
    assert call.messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "say hi"},
    ]
    assert call.sampling_args == {"temperature": 0.2, "max_tokens": 64}


async def test_function_tool_round_trip_streamed(
    client: tuple[Channel, openai.AsyncOpenAI],
) -> None:
    channel, sdk = client
    tool = {
        "type": "function",
        "name": "exec_command",
        "description": "run a command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
    first = {"tool_calls": [{"name": "exec_command", "arguments": {"cmd": "ls"}}]}
    async with OpenAITestServer(replies=[first, "two files"]) as model:

        async def ask(items: list[Any]) -> list[Any]:
            tools: Any = [tool]
            stream = await sdk.responses.create(
                model="gpt-test", input=items, tools=tools, stream=True
            )
            return [event async for event in stream]

        history: list[Any] = [{"role": "user", "content": "what is here?"}]
        events, calls = await asyncio.gather(ask(history), answer_with(model, channel, 1))
        assert events[0].type == "response.created"
        done = events[-1]
        assert done.type == "response.completed"
        [item] = done.response.output
        assert item.type == "function_call" and item.name == "exec_command"
        assert json.loads(item.arguments) == {"cmd": "ls"}
        assert calls[0].stream and calls[0].tools is not None
        assert calls[0].tools[0]["function"]["name"] == "exec_command"
        history += [
            {"type": "function_call", "call_id": item.call_id, "name": item.name,
             "arguments": item.arguments},
            {"type": "function_call_output", "call_id": item.call_id, "output": "a b"},
        ]  # fmt: skip
        events, calls = await asyncio.gather(ask(history), answer_with(model, channel, 1))
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "two files"
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "two files"
    messages = calls[0].messages
    assert messages[1]["tool_calls"][0]["function"]["name"] == "exec_command"
    assert messages[2] == {"role": "tool", "tool_call_id": item.call_id, "content": "a b"}


async def test_custom_tool_is_one_string_both_ways(
    client: tuple[Channel, openai.AsyncOpenAI],
) -> None:
    channel, sdk = client
    patch = "*** Begin Patch\n*** End Patch"
    custom: Any = {"type": "custom", "name": "apply_patch", "description": "edit files"}
    reply_call = {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]}
    async with OpenAITestServer(replies=[reply_call]) as model:
        reply, calls = await asyncio.gather(
            sdk.responses.create(model="m", input="fix it", tools=[custom]),
            answer_with(model, channel, 1),
        )
    [item] = reply.output
    assert item.type == "custom_tool_call" and item.input == patch
    offered = calls[0].tools
    assert offered is not None
    assert offered[0]["function"]["parameters"]["required"] == ["input"]
    # the agent's history of that call reads back as the same function call
    async with OpenAITestServer(replies=["done"]) as model:
        history: Any = [
            {"role": "user", "content": "fix it"},
            {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": patch},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"},
        ]
        _, calls = await asyncio.gather(
            sdk.responses.create(model="m", input=history, tools=[custom]),
            answer_with(model, channel, 1),
        )
    sent = calls[0].messages[1]["tool_calls"][0]
    assert sent["type"] == "function"
    assert json.loads(sent["function"]["arguments"]) == {"input": patch}


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"model": "m"}, "'input' must be a non-empty string or list of item objects"),
        ({"model": "m", "input": [1, 2]}, "'input' must be"),
        ({"model": "m", "input": "hi", "tools": "all"}, "'tools' must be a list of objects"),
        ({"model": "m", "input": [{"role": "user", "content": 5}]}, "invalid request"),
    ],
)
async def test_malformed_requests_are_openai_shaped_400s(
    client: tuple[Channel, openai.AsyncOpenAI], body: dict[str, Any], needle: str
) -> None:
    channel, sdk = client
    with pytest.raises(openai.BadRequestError) as bad:
        await sdk.post("/responses", body=body, cast_to=httpx.Response)
    assert bad.value.status_code == 400
    assert needle in str(bad.value.body)
    assert channel.stats["calls"] == 0
