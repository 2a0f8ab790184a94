"""NativeClient and OpenAIClient against the real test server on port 0: same behaviour."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest

from verifiers.clients.base import Client, as_client
from verifiers.clients.native import NativeClient
from verifiers.clients.openai_client import OpenAIClient
from verifiers.clients.retry import RetryPolicy
from verifiers.errors import (
    ConfigError,
    EmptyModelResponseError,
    EndpointError,
    OverlongPromptError,
)
from verifiers.testing.server import (
    OpenAITestServer,
    toy_chat_template,
    toy_logprob,
    toy_tokenize,
)

FAST = RetryPolicy(max_retries=3, base_delay=0.0, jitter=0.0)
USER = [{"role": "user", "content": "What is 2+2?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]

MakeClient = Callable[..., Client]


def _native(base_url: str, **kw: Any) -> Client:
    return NativeClient(base_url, api_key="sk-test", retry=kw.pop("retry", FAST), **kw)


def _openai(base_url: str, **kw: Any) -> Client:
    timeout = kw.pop("timeout", 600.0)
    retry = kw.pop("retry", FAST)
    oc = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", timeout=timeout)
    return OpenAIClient(oc, retry=retry, owns_client=True, **kw)


@pytest.fixture(params=[_native, _openai], ids=["native", "openai"])
def make_client(request: pytest.FixtureRequest) -> MakeClient:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
async def clients() -> AsyncIterator[list[Client]]:
    made: list[Client] = []
    yield made
    for c in made:
        await c.close()


async def test_chat_round_trip(make_client: MakeClient, clients: list[Client]) -> None:
    async with OpenAITestServer(responder=lambda req: "4") as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        r = await client.get_response(USER, "toy", sampling_args={"temperature": 0.5})
    assert r.message == {"role": "assistant", "content": "4"}
    assert r.content == "4"
    assert r.finish_reason == "stop"
    assert r.model == "toy"
    prompt_ids = toy_tokenize(toy_chat_template(USER))
    assert r.usage.prompt_tokens == len(prompt_ids)
    assert r.usage.completion_tokens > 0
    assert r.prompt_token_ids is None and r.completion_token_ids is None
    assert r.completion_logprobs is None
    sent = srv.requests[0]
    assert sent["messages"] == USER
    assert sent["temperature"] == 0.5
    assert srv.last_headers["Authorization"] == "Bearer sk-test"


async def test_token_ids_and_logprobs_when_requested(
    make_client: MakeClient, clients: list[Client]
) -> None:
    sampling = {"logprobs": True, "max_tokens": 64, "extra_body": {"return_token_ids": True}}
    async with OpenAITestServer(responder=lambda req: "four") as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        r = await client.get_response(USER, "toy", sampling_args=sampling)
        assert srv.requests[0]["return_token_ids"] is True
        assert "extra_body" not in srv.requests[0]
    assert r.prompt_token_ids == toy_tokenize(toy_chat_template(USER))
    assert r.completion_token_ids == toy_tokenize("four<|end|>\n")
    assert r.completion_logprobs == [
        toy_logprob(t, i) for i, t in enumerate(r.completion_token_ids)
    ]


async def test_tool_calls_reasoning_and_history(
    make_client: MakeClient, clients: list[Client]
) -> None:
    replies: list[Any] = [
        {
            "content": None,
            "reasoning_content": "I should add.",
            "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 2}}],
        },
        "The answer is 4.",
    ]
    async with OpenAITestServer(replies=replies) as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        first = await client.get_response(USER, "toy", tools=TOOLS)
        assert first.finish_reason == "tool_calls"
        assert first.message["reasoning_content"] == "I should add."
        (call,) = first.tool_calls
        assert call["type"] == "function"
        assert call["function"] == {"name": "add", "arguments": '{"a": 2, "b": 2}'}
        history = [
            *USER,
            first.message,
            {"role": "tool", "tool_call_id": call["id"], "content": "4"},
        ]
        second = await client.get_response(history, "toy", tools=TOOLS)
        assert second.content == "The answer is 4."
        sent = srv.requests[1]
    assert sent["tools"] == TOOLS
    # reasoning_content is passed back on the later turn, untouched
    assert sent["messages"][1]["reasoning_content"] == "I should add."
    assert sent["messages"][1]["tool_calls"] == first.message["tool_calls"]


async def test_completions_api(make_client: MakeClient, clients: list[Client]) -> None:
    sampling = {"logprobs": True, "extra_body": {"return_token_ids": True}}
    async with OpenAITestServer(responder=lambda req: " world") as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        r = await client.get_response(
            "hello", "toy", sampling_args=sampling, message_type="completion"
        )
        assert srv.requests[0]["prompt"] == "hello"
        assert srv.requests[0]["logprobs"] == 0
    assert r.content == " world"
    assert r.prompt_token_ids == toy_tokenize("hello")
    assert r.completion_token_ids == toy_tokenize(" world")
    assert r.completion_logprobs is not None and len(r.completion_logprobs) == 6


async def test_max_tokens_gives_length_finish(
    make_client: MakeClient, clients: list[Client]
) -> None:
    async with OpenAITestServer(responder=lambda req: "a long answer") as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        r = await client.get_response(USER, "toy", sampling_args={"max_tokens": 3})
    assert r.finish_reason == "length"
    assert r.content == "a l"
    assert r.usage.completion_tokens == 3


@pytest.mark.parametrize("fault", ["500", "429", "drop", "malformed"])
async def test_transient_faults_are_retried(
    make_client: MakeClient, clients: list[Client], fault: str
) -> None:
    async with OpenAITestServer(responder=lambda req: "ok", fault_sequence=[fault, fault]) as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        r = await client.get_response(USER, "toy")
    assert r.content == "ok"
    assert srv.stats.requests == 3
    assert srv.stats.faults == {fault: 2}
    kinds = {"500": "http_500", "429": "http_429", "drop": "connection"}
    assert client.stats == {kinds.get(fault, "malformed_json"): 2}  # type: ignore[attr-defined]


async def test_hang_past_timeout_is_retried(make_client: MakeClient, clients: list[Client]) -> None:
    async with OpenAITestServer(responder=lambda req: "ok", fault_sequence=["hang"]) as srv:
        client = make_client(srv.base_url, timeout=1.0)
        clients.append(client)
        r = await client.get_response(USER, "toy")
    assert r.content == "ok"
    assert client.stats == {"timeout": 1}  # type: ignore[attr-defined]


async def test_retry_after_is_honoured(
    make_client: MakeClient, clients: list[Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    original = RetryPolicy.delay

    def recording(self: RetryPolicy, attempt: int, retry_after: float | None = None) -> float:
        waits.append(original(self, attempt, retry_after))
        return 0.0

    monkeypatch.setattr(RetryPolicy, "delay", recording)
    async with OpenAITestServer(fault_sequence=["429"], retry_after=1.5) as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        await client.get_response(USER, "toy")
    assert waits == [1.5]


async def test_gives_up_after_retries(make_client: MakeClient, clients: list[Client]) -> None:
    async with OpenAITestServer(fault_rate=1.0, fault_kinds=["500"]) as srv:
        client = make_client(srv.base_url, retry=RetryPolicy(max_retries=2, base_delay=0.0))
        clients.append(client)
        with pytest.raises(EndpointError, match="gave up after 3 attempts") as info:
            await client.get_response(USER, "toy")
    assert info.value.status_code == 500
    assert srv.stats.requests == 3


async def test_context_length_is_overlong_and_not_retried(
    make_client: MakeClient, clients: list[Client]
) -> None:
    async with OpenAITestServer(max_model_len=10) as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        with pytest.raises(OverlongPromptError, match="maximum context length"):
            await client.get_response(USER, "toy")
    assert srv.stats.requests == 1


async def test_404_is_not_retried(make_client: MakeClient, clients: list[Client]) -> None:
    async with OpenAITestServer() as srv:
        client = make_client(srv.base_url.removesuffix("/v1") + "/wrong")
        clients.append(client)
        with pytest.raises(EndpointError, match="404") as info:
            await client.get_response(USER, "toy")
    assert info.value.status_code == 404
    assert srv.stats.requests == 0


async def test_connection_refused_gives_up(make_client: MakeClient, clients: list[Client]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = make_client(f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(1, base_delay=0.0))
    clients.append(client)
    with pytest.raises(EndpointError, match="gave up after 2 attempts"):
        await client.get_response(USER, "toy")
    assert client.stats == {"connection": 2, "gave_up": 1}  # type: ignore[attr-defined]


async def test_empty_message_is_an_error(make_client: MakeClient, clients: list[Client]) -> None:
    async with OpenAITestServer(replies=[None, ""]) as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        for _ in range(2):
            with pytest.raises(EmptyModelResponseError):
                await client.get_response(USER, "toy")
    assert srv.stats.requests == 2  # not retried


async def test_many_concurrent_requests(make_client: MakeClient, clients: list[Client]) -> None:
    async with OpenAITestServer(fault_rate=0.2, seed=3, fault_kinds=["500", "drop"]) as srv:
        client = make_client(srv.base_url, retry=RetryPolicy(max_retries=10, base_delay=0.0))
        clients.append(client)
        prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(100)]
        results = await asyncio.gather(*(client.get_response(p, "toy") for p in prompts))
    assert [r.content for r in results] == [f"echo: q{i}" for i in range(100)]
    assert srv.stats.responses == 100
    assert sum(srv.stats.faults.values()) > 0


async def test_bad_arguments_are_config_errors(
    make_client: MakeClient, clients: list[Client]
) -> None:
    client = make_client("http://127.0.0.1:9/v1")
    clients.append(client)
    with pytest.raises(ConfigError, match="list of messages"):
        await client.get_response("text", "toy")
    with pytest.raises(ConfigError, match="string prompt"):
        await client.get_response(USER, "toy", message_type="completion")
    with pytest.raises(ConfigError, match="stream"):
        await client.get_response(USER, "toy", sampling_args={"stream": True})


def test_native_client_survives_a_new_event_loop() -> None:
    with OpenAITestServer(responder=lambda req: "ok") as srv:
        client = NativeClient(srv.base_url, retry=FAST)
        for _ in range(2):  # two asyncio.run calls: the second needs a new session
            r = asyncio.run(client.get_response(USER, "toy"))
            assert r.content == "ok"
        asyncio.run(client.close())


def test_native_client_rejects_bad_urls() -> None:
    with pytest.raises(ConfigError, match="http"):
        NativeClient("localhost:8000")


async def test_openai_client_does_not_change_the_users_object() -> None:
    oc = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=7)
    client = OpenAIClient(oc)
    assert oc.max_retries == 7
    assert client._raw.max_retries == 0
    await client.close()
    assert not oc.is_closed()
    await oc.close()


async def test_as_client_accepts_openai_objects_and_urls() -> None:
    with OpenAITestServer(responder=lambda req: "sync ok") as srv:
        sync = openai.OpenAI(base_url=srv.base_url, api_key="k")
        client = as_client(sync)
        assert isinstance(client, OpenAIClient)
        assert (await client.get_response(USER, "toy")).content == "sync ok"
        await client.close()  # closes the AsyncOpenAI it made from the sync client
        assert client.client.is_closed()  # type: ignore[attr-defined]
        native = as_client(srv.base_url)
        assert isinstance(native, NativeClient)
        assert (await native.get_response(USER, "toy")).content == "sync ok"
        await native.close()
        assert as_client(native) is native
        sync.close()


async def test_pydantic_history_messages_are_sent(
    make_client: MakeClient, clients: list[Client]
) -> None:
    from openai.types.chat import ChatCompletionMessage

    history = [*USER, ChatCompletionMessage(role="assistant", content="4"), *USER]
    async with OpenAITestServer(responder=lambda req: "again 4") as srv:
        client = make_client(srv.base_url)
        clients.append(client)
        r = await client.get_response(history, "toy")  # type: ignore[arg-type]
        assert srv.requests[0]["messages"][1] == {"role": "assistant", "content": "4"}
    assert r.content == "again 4"
