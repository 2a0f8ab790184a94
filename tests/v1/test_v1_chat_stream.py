"""The streaming chat helper (``verifiers.v1.harnesses.utils.core.chat``): a streamed completion
is assembled whole (content, tool calls, usage, and the reasoning fields the SDK drops), a
broken stream is asked for again as a marked retry of the same body, and once the retries are
spent the failure is raised."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from openai import APIConnectionError, AsyncOpenAI

from verifiers.v1.harnesses.utils.core import chat

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {
        "id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }  # fmt: skip


def sse(events: list[dict[str, Any]], done: bool = True) -> bytes:
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


class Server:
    """Answers the k-th request with the k-th script: bytes to stream, then an optional error
    raised mid-stream."""

    def __init__(self, *scripts: tuple[bytes, Exception | None]) -> None:
        self.scripts = list(scripts)
        self.requests: list[httpx.Request] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        data, error = self.scripts[len(self.requests) - 1]

        class Body(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                yield data
                if error is not None:
                    raise error

        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, stream=Body(), headers=headers, request=request)

    def client(self, max_retries: int = 2) -> tuple[AsyncOpenAI, httpx.AsyncClient]:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self))
        openai = AsyncOpenAI(
            api_key="k",
            base_url="https://model.test/v1",
            # openai 3 types its client as httpx2's and takes an httpx one too
            http_client=http,  # type: ignore[arg-type]
            max_retries=max_retries,
        )
        return openai, http


async def test_a_streamed_tool_call_turn_is_assembled_whole() -> None:
    events = [
        chunk({"role": "assistant", "content": "Let me "}),
        chunk({"content": "look.", "reasoning_content": "need "}),
        chunk({"reasoning_content": "ls", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": '{"comm'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'and": "ls"}'}}]}),
        chunk({}, "tool_calls"),
        {**chunk({}), "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5,
                                               "total_tokens": 8}},
    ]  # fmt: skip
    server = Server((sse(events), None))
    client, http = server.client()
    async with http:
        completion = await chat(client, "m", [{"role": "user", "content": "hi"}], TOOLS,
                                tool_choice="required")  # fmt: skip
    body = json.loads(server.requests[0].content)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"] == TOOLS and body["tool_choice"] == "required"
    (choice,) = completion.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me look."
    assert choice.message.model_dump(exclude_none=True)["reasoning_content"] == "need ls"
    (call,) = choice.message.tool_calls or []
    assert (call.id, call.function.name, call.function.arguments) == (  # type: ignore[union-attr]
        "call_1",
        "bash",
        '{"command": "ls"}',
    )
    assert completion.usage is not None and completion.usage.total_tokens == 8
    assert (completion.id, completion.model, completion.object) == ("c1", "m", "chat.completion")


async def test_no_tools_means_no_tool_choice_is_sent() -> None:
    server = Server((sse([chunk({"content": "ok"}, "stop")]), None))
    client, http = server.client()
    async with http:
        completion = await chat(client, "m", [], [], tool_choice="auto")
    body = json.loads(server.requests[0].content)
    assert "tools" not in body and "tool_choice" not in body
    assert completion.choices[0].message.role == "assistant"


async def test_reasoning_details_join_only_the_entry_they_continue() -> None:
    def detail(text: str, **keys: Any) -> dict[str, Any]:
        return {"type": "reasoning.text", "text": text, **keys}

    events = [
        chunk({"reasoning_details": [detail("a", id="r1")]}),
        chunk({"reasoning_details": [detail("b", signature="s1")]}),  # continues r1
        chunk({"reasoning_details": [detail("c", id="r2")]}),  # another id: a new entry
        chunk({"reasoning_details": [{"type": "reasoning.encrypted", "data": "x"}]}),
        chunk({"content": "done"}, "stop"),
    ]
    server = Server((sse(events), None))
    client, http = server.client()
    async with http:
        completion = await chat(client, "m", [], [])
    assert completion.choices[0].message.model_dump(exclude_none=True)["reasoning_details"] == [
        detail("ab", id="r1", signature="s1"),
        detail("c", id="r2"),
        {"type": "reasoning.encrypted", "data": "x"},
    ]


async def test_a_cut_stream_is_retried_as_a_marked_replay_of_the_same_body() -> None:
    cut = sse([chunk({"content": "disc"})], done=False)
    good = sse([chunk({"content": "whole"}, "stop")])
    server = Server((cut, None), (cut, httpx.ReadError("reset")), (good, None))
    client, http = server.client(max_retries=2)
    async with http:
        completion = await chat(client, "m", [{"role": "user", "content": "hi"}], [])
    assert completion.choices[0].message.content == "whole"
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1", "2"]
    assert len({r.content for r in server.requests}) == 1


async def test_when_the_retries_are_spent_the_failure_is_raised() -> None:
    cut = sse([chunk({"content": "disc"})], done=False)
    server = Server((cut, None), (cut, None))
    client, http = server.client(max_retries=1)
    async with http:
        with pytest.raises(APIConnectionError):
            await chat(client, "m", [], [])
    assert len(server.requests) == 2
    server = Server((b"", httpx.ReadTimeout("slow")))
    client, http = server.client(max_retries=0)
    async with http:
        # raw, or wrapped by the SDK (openai 3 raises APITimeoutError for a read timeout)
        with pytest.raises((httpx.ReadTimeout, APIConnectionError)):
            await chat(client, "m", [], [])
