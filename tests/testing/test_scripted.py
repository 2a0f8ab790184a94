"""ScriptedClient: the in-process model double."""

from __future__ import annotations

from typing import Any

import pytest

from verifiers.errors import EmptyModelResponseError, EndpointError
from verifiers.testing.scripted import ScriptedClient
from verifiers.testing.server import toy_chat_template, toy_tokenize

USER = [{"role": "user", "content": "hi"}]


async def test_replies_in_order_and_calls_recorded() -> None:
    client = ScriptedClient(
        ["first", {"content": None, "tool_calls": [{"name": "f", "arguments": {"x": 1}}]}]
    )
    history = list(USER)
    r1 = await client.get_response(history, "m", sampling_args={"temperature": 0})
    history.append(r1.message)
    r2 = await client.get_response(history, "m", tools=[{"type": "function"}])
    assert r1.message == {"role": "assistant", "content": "first"}
    assert r2.finish_reason == "tool_calls"
    assert r2.tool_calls[0]["function"] == {"name": "f", "arguments": '{"x": 1}'}
    assert client.remaining == 0
    assert [c.prompt for c in client.calls] == [USER, [*USER, r1.message]]
    assert client.calls[0].sampling_args == {"temperature": 0}
    assert client.calls[1].tools == [{"type": "function"}]
    with pytest.raises(AssertionError, match=r"ran out of replies at call 3 \(2 scripted\)"):
        await client.get_response(USER, "m")


async def test_injected_errors_are_raised() -> None:
    client = ScriptedClient([EndpointError("down", status_code=503), TimeoutError, None, "ok"])
    with pytest.raises(EndpointError, match="down"):
        await client.get_response(USER, "m")
    with pytest.raises(TimeoutError):
        await client.get_response(USER, "m")
    with pytest.raises(EmptyModelResponseError):
        await client.get_response(USER, "m")
    assert (await client.get_response(USER, "m")).content == "ok"


async def test_responder_gets_what_it_names() -> None:
    def by_prompt(messages: Any) -> str:
        return "n=" + str(len(messages))

    async def with_kw(messages: Any, **kw: Any) -> str:
        return f"{kw['model']}/{kw['message_type']}"

    def only_model(prompt: Any, model: str) -> str:
        return model

    assert (await ScriptedClient(responder=by_prompt).get_response(USER, "m")).content == "n=1"
    assert (await ScriptedClient(responder=with_kw).get_response(USER, "x")).content == "x/chat"
    assert (await ScriptedClient(responder=only_model).get_response(USER, "y")).content == "y"
    with pytest.raises(TypeError, match="exactly one"):
        ScriptedClient()


async def test_token_ids_logprobs_and_truncation_like_the_server() -> None:
    client = ScriptedClient(["hello", "completion text"])
    sampling = {"logprobs": True, "max_tokens": 3, "extra_body": {"return_token_ids": True}}
    r = await client.get_response(USER, "m", sampling_args=sampling)
    assert r.prompt_token_ids == toy_tokenize(toy_chat_template(USER))
    assert r.completion_token_ids == toy_tokenize("hel")
    assert r.finish_reason == "length" and r.content == "hel"
    assert r.completion_logprobs is not None and len(r.completion_logprobs) == 3
    c = await client.get_response("Once", "m", message_type="completion")
    assert c.content == "completion text"
    assert c.completion_token_ids is None
