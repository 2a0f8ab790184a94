"""The OpenAI-compatible test server, driven by the official ``openai`` client and raw HTTP."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

import verifiers as vf
from verifiers.testing.server import (
    END,
    TOKEN_OFFSET,
    OpenAITestServer,
    ServerProcess,
    build_chat_completion,
    toy_chat_template,
    toy_detokenize,
    toy_render_assistant,
    toy_tokenize,
)

USER = [{"role": "user", "content": "hi"}]


def _post(url: str, body: bytes) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_toy_tokenizer_round_trips() -> None:
    text = "héllo <|end|> 世界"
    ids = toy_tokenize(text)
    assert len(ids) == len(text.encode())
    assert min(ids) >= TOKEN_OFFSET
    assert toy_detokenize(ids) == text


def test_toy_template_shape() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ]
    assert toy_chat_template(messages) == f"<|system|>be brief{END}<|user|>hi{END}<|assistant|>"
    assert toy_chat_template(messages, add_generation_prompt=False).endswith(END)
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert toy_chat_template(messages, tools).startswith('<|tools|>[{"function"')


def test_next_turn_prompt_extends_previous_sequence() -> None:
    """prompt_ids(turn 2) == prompt_ids(turn 1) + completion_ids(turn 1) + new messages."""
    req1 = {"messages": USER, "return_token_ids": True}
    reply = {
        "content": "let me look",
        "reasoning_content": "think",
        "tool_calls": [{"name": "f", "arguments": {"x": 1}}],
    }
    out1 = build_chat_completion(req1, reply)
    assistant = out1["choices"][0]["message"]
    history = [*USER, assistant, {"role": "tool", "tool_call_id": "c", "content": "2"}]
    out2 = build_chat_completion({"messages": history, "return_token_ids": True}, "done")
    first = out1["prompt_token_ids"] + out1["choices"][0]["token_ids"]
    assert out2["prompt_token_ids"][: len(first)] == first
    assert toy_detokenize(out1["choices"][0]["token_ids"]) == toy_render_assistant(assistant) + END


async def test_openai_client_chat_tools_and_models() -> None:
    reply = {"content": "", "tool_calls": [{"name": "lookup", "arguments": '{"q": "x"}'}]}
    async with OpenAITestServer(replies=[reply, "plain", "echo"], model="m1") as srv:
        assert srv.base_url.startswith("http://127.0.0.1:") and srv.port > 0
        oc = openai.AsyncOpenAI(base_url=srv.base_url, api_key="k", max_retries=0)
        r = await oc.chat.completions.create(model="m1", messages=USER)  # type: ignore[arg-type]
        tc = r.choices[0].message.tool_calls
        assert tc is not None and tc[0].function.name == "lookup"  # type: ignore[union-attr]
        assert tc[0].function.arguments == '{"q": "x"}'  # type: ignore[union-attr]
        assert r.choices[0].finish_reason == "tool_calls"
        r2 = await oc.chat.completions.create(model="m1", messages=USER)  # type: ignore[arg-type]
        assert r2.choices[0].message.content == "plain"
        assert r2.usage is not None and r2.usage.total_tokens > 0
        models = await oc.models.list()
        assert [m.id for m in models.data] == ["m1"]
        c = await oc.completions.create(model="m1", prompt="abc", max_tokens=2)
        assert c.choices[0].text == "ec" and c.choices[0].finish_reason == "length"
        await oc.close()


def test_script_exhausted_and_broken_responder_are_reported() -> None:
    with OpenAITestServer(replies=["only"]) as srv:
        body = json.dumps({"model": "m", "messages": USER}).encode()
        assert _post(srv.base_url + "/chat/completions", body)[0] == 200
        status, data = _post(srv.base_url + "/chat/completions", body)
    assert status == 500 and "script exhausted" in data["error"]["message"]

    def broken(req: dict[str, Any]) -> str:
        raise KeyError("answer")

    with OpenAITestServer(responder=broken) as srv:
        status, data = _post(srv.base_url + "/chat/completions", body)
    assert status == 500 and "KeyError" in data["error"]["message"]


def test_bad_requests_get_400() -> None:
    with OpenAITestServer() as srv:
        url = srv.base_url + "/chat/completions"
        assert _post(url, b"{not json")[0] == 400
        status, data = _post(url, b'{"model": "m"}')
        assert status == 400 and "messages" in data["error"]["message"]
        stream = json.dumps({"prompt": "a", "stream": True}).encode()
        assert _post(srv.base_url + "/completions", stream)[0] == 400
        batch = json.dumps({"prompt": ["a", "b"]}).encode()
        assert _post(srv.base_url + "/completions", batch)[0] == 400
        assert srv.stats.bad_requests == 4 and srv.stats.responses == 0


async def test_chat_streams_as_server_sent_events() -> None:
    from openai import AsyncOpenAI

    def reply(request: dict[str, Any]) -> Any:
        return {"content": "hi", "tool_calls": [{"name": "f", "arguments": {"a": 1}}]}

    async with OpenAITestServer(responder=reply) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="x")
        stream = await client.chat.completions.create(  # type: ignore[call-overload]
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
    delta = chunks[0].choices[0].delta
    assert delta.content == "hi" and delta.tool_calls is not None
    assert delta.tool_calls[0].function is not None
    assert delta.tool_calls[0].function.arguments == '{"a": 1}'
    assert chunks[1].choices[0].finish_reason == "tool_calls"
    assert chunks[2].usage is not None and chunks[2].usage.completion_tokens > 0


def test_max_model_len_rejects_long_chat_and_completion_prompts() -> None:
    with OpenAITestServer(max_model_len=40) as srv:
        for path, body in (
            ("/chat/completions", {"messages": [{"role": "user", "content": "é" * 30}]}),
            ("/completions", {"prompt": "é" * 20}),
        ):
            status, data = _post(srv.base_url + path, json.dumps(body).encode())
            assert status == 400, path
            assert "maximum context length is 40 tokens" in data["error"]["message"]
        status, _ = _post(srv.base_url + "/completions", json.dumps({"prompt": "short"}).encode())
        assert status == 200
    env = vf.SingleTurnEnv(dataset=[{"question": "x" * 50}], message_type="completion")
    with OpenAITestServer(max_model_len=40) as srv:
        (record,) = vf.evaluate(
            env, srv.base_url, "m", num_examples=-1, rollouts_per_example=1
        ).records
    assert record["stop_condition"] == "prompt_too_long" and record["is_truncated"]
    assert record["error"] is None


async def test_async_responder_and_latency_function() -> None:
    seen: list[float] = []

    async def responder(req: dict[str, Any]) -> str:
        return req["messages"][-1]["content"].upper()

    def latency(req: dict[str, Any]) -> float:
        seen.append(0.0)
        return 0.0

    async with OpenAITestServer(responder=responder, latency=latency) as srv:
        oc = openai.AsyncOpenAI(base_url=srv.base_url, api_key="k")
        r = await oc.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        await oc.close()
    assert r.choices[0].message.content == "HI"
    assert seen == [0.0]


def test_faults_are_deterministic_for_a_seed() -> None:
    def draw(seed: int) -> list[str | None]:
        srv = OpenAITestServer(fault_rate=0.5, seed=seed)
        return [srv._next_fault(i) for i in range(50)]

    assert draw(1) == draw(1)
    assert draw(1) != draw(2)
    assert {f for f in draw(1) if f} <= {"500", "429", "drop", "malformed", "hang"}
    with pytest.raises(ValueError, match="unknown fault kinds"):
        OpenAITestServer(fault_kinds=["boom"])


def test_thread_mode_with_sync_openai_client() -> None:
    with OpenAITestServer(responder=lambda req: "threaded") as srv:
        oc = openai.OpenAI(base_url=srv.base_url, api_key="k")
        r = oc.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        oc.close()
        assert r.choices[0].message.content == "threaded"
        assert srv.stats.responses == 1


def test_subprocess_mode_prints_url_and_injects_faults() -> None:
    with ServerProcess(
        responder="verifiers.testing.server:default_responder",
        fault_rate=1.0,
        fault_kinds=["500"],
    ) as proc:
        status, _ = _post(
            proc.base_url + "/chat/completions",
            json.dumps({"model": "m", "messages": USER}).encode(),
        )
        assert status == 500
        assert proc.stats() == {
            "requests": 1,
            "responses": 0,
            "bad_requests": 0,
            "faults": {"500": 1},
            "peak_in_flight": 1,
        }
    assert proc.process is not None and proc.process.returncode is not None


def test_subprocess_mode_reports_a_bad_responder() -> None:
    with pytest.raises(RuntimeError, match="cannot import"), ServerProcess(responder="nope_x:f"):
        pass


def test_module_help_runs() -> None:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "verifiers.testing.server", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--fault-rate" in out.stdout


_text_st = st.text(max_size=40)


@given(_text_st)
def test_toy_tokenizer_round_trips_any_text(text: str) -> None:
    assert toy_detokenize(toy_tokenize(text)) == text


@given(
    user=_text_st,
    content=_text_st,
    reasoning=st.one_of(st.none(), _text_st),
    args=st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    follow_up=_text_st,
)
def test_prefix_property_holds_for_any_turn(
    user: str, content: str, reasoning: str | None, args: dict[str, int], follow_up: str
) -> None:
    reply = {"content": content, "reasoning_content": reasoning}
    reply["tool_calls"] = [{"name": "f", "arguments": args}] if args else []
    req = {"messages": [{"role": "user", "content": user}], "return_token_ids": True}
    out = build_chat_completion(req, reply)
    history = [
        *req["messages"],
        out["choices"][0]["message"],
        {"role": "user", "content": follow_up},
    ]
    nxt = build_chat_completion({"messages": history, "return_token_ids": True}, "ok")
    seq = out["prompt_token_ids"] + out["choices"][0]["token_ids"]
    assert nxt["prompt_token_ids"][: len(seq)] == seq


def test_command_line_help_documents_the_responder_protocol_and_every_fault_kind() -> None:
    import subprocess
    import sys

    from verifiers.testing.server import FAULT_KINDS

    out = subprocess.run(
        [sys.executable, "-m", "verifiers.testing.server", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "responder protocol" in out and "tool_calls" in out
    for kind in FAULT_KINDS:
        assert f"\n  {kind} " in out, kind
