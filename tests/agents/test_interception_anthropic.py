"""The interception server's Anthropic Messages route, driven by the real ``anthropic`` client
and answered by the project's OpenAI-compatible test server: plain text, a tool round trip,
streaming, the max_tokens stop, Anthropic-shaped errors and ``x-api-key`` auth."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import pytest

from verifiers.agents.interception import Channel, InterceptedCall, InterceptionServer
from verifiers.clients.native import NativeClient
from verifiers.clients.retry import RetryPolicy
from verifiers.testing import OpenAITestServer
from verifiers.types import ModelResponse

BASH = {
    "name": "bash",
    "description": "run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}
# anthropic 2 is built on httpx2 and refuses an httpx client (anthropic 0.x takes httpx's)
HTTP: Any = importlib.import_module(
    "httpx2" if int(anthropic.__version__.split(".")[0]) >= 2 else "httpx"
)


@pytest.fixture
async def server() -> AsyncIterator[InterceptionServer]:
    srv = InterceptionServer(max_body_bytes=64 << 10)
    yield srv
    await srv.close()


@pytest.fixture
async def clients() -> AsyncIterator[list[anthropic.AsyncAnthropic]]:
    made: list[anthropic.AsyncAnthropic] = []
    yield made
    for c in made:
        await c.close()


def sdk(
    channel: Channel, made: list[anthropic.AsyncAnthropic], *, key_auth: bool = False
) -> anthropic.AsyncAnthropic:
    """The Anthropic SDK pointed at the channel: the secret in the base path, or (``key_auth``)
    as the API key only."""
    client = anthropic.AsyncAnthropic(
        base_url="http://agent" if key_auth else f"http://agent/vf/{channel.secret}",
        api_key=channel.secret if key_auth else "unused",
        http_client=HTTP.AsyncClient(transport=HTTP.AsyncHTTPTransport(uds=channel.path)),
        max_retries=0,
    )
    made.append(client)
    return client


async def answer_with(model: OpenAITestServer, channel: Channel, n: int) -> list[InterceptedCall]:
    """Answer the channel's next ``n`` calls through the test server, as an environment does."""
    client = NativeClient(model.base_url, timeout=10.0, retry=RetryPolicy(max_retries=0))
    calls: list[InterceptedCall] = []
    try:
        for _ in range(n):
            call = await asyncio.wait_for(channel.next_call(), 10)
            response: ModelResponse = await client.get_response(
                call.messages,
                "policy",
                sampling_args={**call.sampling_args, "extra_body": {"return_token_ids": True}},
                tools=call.tools,
            )
            assert response.prompt_token_ids and response.completion_token_ids
            call.answer(response)
            calls.append(call)
    finally:
        await client.close()
    return calls


async def test_plain_text_message(
    server: InterceptionServer, clients: list[anthropic.AsyncAnthropic]
) -> None:
    channel = await server.open_channel()
    client = sdk(channel, clients)
    async with OpenAITestServer(replies=["hello there"]) as model:
        request = client.messages.create(
            model="claude-test",
            max_tokens=64,
            system=[{"type": "text", "text": "be brief"}],
            messages=[{"role": "user", "content": "say hi"}],
            stop_sequences=["END"],
            extra_body={"temperature": 0.2},  # anthropic 2 has no temperature argument
        )
        reply, calls = await asyncio.gather(request, answer_with(model, channel, 1))
        sent = model.requests[0]
    assert reply.type == "message" and reply.role == "assistant"
    assert reply.id.startswith("msg_") and reply.model == "claude-test"
    assert [b.type for b in reply.content] == ["text"]
    assert reply.content[0].text == "hello there"  # type: ignore[union-attr]
    assert reply.stop_reason == "end_turn" and reply.stop_sequence is None
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    call = calls[0]
    assert call.dialect == "anthropic" and not call.stream
    assert call.messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "say hi"},
    ]
    assert call.sampling_args == {"max_tokens": 64, "temperature": 0.2, "stop": ["END"]}
    assert sent["messages"] == call.messages and sent["max_tokens"] == 64
    assert channel.stats["calls"] == 1


async def test_tool_use_round_trip(
    server: InterceptionServer, clients: list[anthropic.AsyncAnthropic]
) -> None:
    channel = await server.open_channel()
    client = sdk(channel, clients)
    first = {
        "content": "let me look",
        "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
    }
    async with OpenAITestServer(replies=[first, "two files"]) as model:
        history: list[Any] = [{"role": "user", "content": "what is here?"}]
        reply, _ = await asyncio.gather(
            client.messages.create(
                model="m",
                max_tokens=100,
                messages=history,
                tools=[BASH],  # type: ignore[list-item]
            ),
            answer_with(model, channel, 1),
        )
        assert reply.stop_reason == "tool_use"
        assert [b.type for b in reply.content] == ["text", "tool_use"]
        use = reply.content[1]
        assert use.type == "tool_use" and use.name == "bash" and use.input == {"command": "ls"}
        history += [
            {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": "a.txt b.txt"}
                ],
            },
        ]
        final, calls = await asyncio.gather(
            client.messages.create(
                model="m",
                max_tokens=100,
                messages=history,
                tools=[BASH],  # type: ignore[list-item]
            ),
            answer_with(model, channel, 1),
        )
        sent = model.requests[1]
    assert final.stop_reason == "end_turn"
    assert final.content[0].text == "two files"  # type: ignore[union-attr]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "run a shell command",
                "parameters": BASH["input_schema"],
            },
        }
    ]
    assert calls[0].messages == [
        {"role": "user", "content": "what is here?"},
        {
            "role": "assistant",
            "content": "let me look",
            "tool_calls": [
                {
                    "id": use.id,
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": use.id, "name": "bash", "content": "a.txt b.txt"},
    ]


async def test_streaming_with_messages_stream(
    server: InterceptionServer, clients: list[anthropic.AsyncAnthropic]
) -> None:
    channel = await server.open_channel()
    client = sdk(channel, clients)
    reply = {
        "content": "checking",
        "reasoning_content": "the user wants a listing",
        "tool_calls": [{"name": "bash", "arguments": {"command": "ls -a"}}],
    }

    async def consume() -> tuple[list[str], list[str], anthropic.types.Message]:
        kinds: list[str] = []
        texts: list[str] = []
        async with client.messages.stream(
            model="m",
            max_tokens=200,
            messages=[{"role": "user", "content": "list"}],
            tools=[BASH],  # type: ignore[list-item]
            thinking={"type": "enabled", "budget_tokens": 2048},
        ) as stream:
            async for event in stream:
                kinds.append(event.type)
                if event.type == "text":
                    texts.append(event.text)
            return kinds, texts, await stream.get_final_message()

    async with OpenAITestServer(replies=[reply]) as model:
        (kinds, texts, message), calls = await asyncio.gather(
            consume(), answer_with(model, channel, 1)
        )
        sent = model.requests[0]
    assert calls[0].stream and sent["reasoning_effort"] == "low"
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"content_block_start", "content_block_stop", "message_delta"} <= set(kinds)
    assert {"thinking", "text", "input_json"} <= set(kinds)
    assert texts == ["checking"]
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[0].thinking == "the user wants a listing"  # type: ignore[union-attr]
    assert message.content[2].input == {"command": "ls -a"}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use" and message.usage.output_tokens > 0


async def test_max_tokens_stop_reason(
    server: InterceptionServer, clients: list[anthropic.AsyncAnthropic]
) -> None:
    channel = await server.open_channel()
    client = sdk(channel, clients)
    async with OpenAITestServer(replies=["a long answer that will not fit"]) as model:
        reply, _ = await asyncio.gather(
            client.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "talk"}]
            ),
            answer_with(model, channel, 1),
        )
    assert reply.stop_reason == "max_tokens"
    assert reply.usage.output_tokens == 5


async def test_malformed_requests_are_400s_naming_the_field(
    server: InterceptionServer, clients: list[anthropic.AsyncAnthropic]
) -> None:
    channel = await server.open_channel()
    client = sdk(channel, clients)
    robot: Any = [{"role": "robot", "content": "hi"}]  # malformed on purpose
    with pytest.raises(anthropic.BadRequestError) as bad_role:
        await client.messages.create(model="m", max_tokens=10, messages=robot)
    assert bad_role.value.status_code == 400
    assert bad_role.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "invalid request: messages[0].role: must be 'user', 'assistant' or "
            "'system', not 'robot'",
        },
    }
    schemaless: Any = [{"name": "bash"}]
    with pytest.raises(anthropic.BadRequestError, match=r"tools\[0\]\.input_schema"):
        await client.messages.create(
            model="m",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            tools=schemaless,
        )
    async with httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(uds=channel.path), base_url="http://agent"
    ) as raw:
        for body in (b"{not json", b"[1]", b'{"model": "m", "max_tokens": 5}'):
            resp = await raw.post(f"{channel.base_path()}/messages", content=body)
            assert resp.status_code == 400
            assert resp.json()["type"] == "error"
            assert resp.json()["error"]["type"] == "invalid_request_error"
        assert "messages" in resp.json()["error"]["message"]
        missing = await raw.post(f"{channel.base_path()}/messages/count_tokens", content=b"{}")
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "not_found_error"
        wrong = await raw.post("/vf/wrong/v1/messages", content=b"{}")
        assert wrong.status_code == 401
        assert wrong.json()["error"]["type"] == "authentication_error"
    assert channel.stats["calls"] == 0


async def test_x_api_key_auth_and_errors_of_the_environment(
    server: InterceptionServer, clients: list[anthropic.AsyncAnthropic]
) -> None:
    channel = await server.open_channel()
    client = sdk(channel, clients, key_auth=True)

    async def refuse() -> None:
        call = await asyncio.wait_for(channel.next_call(), 10)
        call.fail(400, "the rollout reached its max_turns cap", "max_turns_reached")

    with pytest.raises(anthropic.BadRequestError) as refused:
        await asyncio.gather(
            client.messages.create(
                model="m",
                max_tokens=10,
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"anthropic-version": "2023-06-01"},
            ),
            refuse(),
        )
    assert refused.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "the rollout reached its max_turns cap",
        },
    }

    async def close_soon() -> None:
        await asyncio.wait_for(channel.next_call(), 10)
        await channel.close()

    with pytest.raises(anthropic.APIStatusError) as over:
        await asyncio.gather(
            client.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "again"}]
            ),
            close_soon(),
        )
    assert over.value.status_code == 503
    assert json.loads(over.value.response.text)["error"] == {
        "type": "api_error",
        "message": "the rollout is over",
    }
