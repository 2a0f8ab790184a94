"""Internals that classic (0.3.x) code and 0.3.1's own test fixtures import: the classic client
base, ``save_utils``, ``error_utils``; and 0.3.1's results from public helpers
(``convert_func_to_tool_def``, message utilities, ``setup_logging``)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Annotated, Any

import openai
import pydantic
import pytest

import verifiers as vf
from verifiers.clients.client import Client as ClassicClient
from verifiers.clients.client import to_model_response
from verifiers.types import Response, ResponseMessage, Tool
from verifiers.utils.error_utils import ErrorChain, error_data, get_vf_error_chain
from verifiers.utils.logging_utils import setup_logging
from verifiers.utils.message_utils import (
    from_raw_message,
    message_to_printable,
    serialize_message_for_output,
)
from verifiers.utils.save_utils import make_serializable, state_to_output
from verifiers.utils.tool_utils import convert_func_to_tool_def


class EchoClient(ClassicClient[Any, list[dict[str, Any]], dict[str, Any], dict[str, Any]]):
    """A classic client over a fake native API that answers with the last user message."""

    def __init__(self, fail: BaseException | None = None) -> None:
        super().__init__(None)
        self.fail = fail
        self.seen_tools: list[Any] = []

    def setup_client(self, config: Any) -> Any:
        return None

    async def to_native_tool(self, tool: Tool) -> dict[str, Any]:
        return {"fn": tool.name}

    async def to_native_prompt(self, messages: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        return [dict(m) for m in messages], {}

    async def get_native_response(
        self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        if self.fail is not None:
            raise self.fail
        self.seen_tools.append(tools)
        return {"text": f"echo: {prompt[-1]['content']}"}

    async def raise_from_native_response(self, response: dict[str, Any]) -> None:
        if not response["text"]:
            raise vf.EmptyModelResponseError("no text")

    async def from_native_response(self, response: dict[str, Any]) -> Response:
        return Response(
            id="r1",
            created=0,
            model="m",
            usage=None,
            message=ResponseMessage(content=response["text"], finish_reason="stop"),
        )

    async def close(self) -> None:
        return None


def test_classic_client_runs_its_steps_and_an_environment_scores_its_answer() -> None:
    client = EchoClient()
    response = asyncio.run(client.get_response([vf.UserMessage(content="hi")], "m", {}))
    assert response.message.content == "echo: hi" and response.usage is None

    def exact(completion: Any, answer: str) -> float:
        return float(completion[-1]["content"] == answer)

    env = vf.SingleTurnEnv(
        dataset=[{"question": "ping", "answer": "echo: ping"}], rubric=vf.Rubric(funcs=[exact])
    )
    results = asyncio.run(env.evaluate(client, "m", num_examples=1))
    assert [o["reward"] for o in results["outputs"]] == [1.0]


def test_classic_client_errors_auth_passes_through_others_become_model_errors() -> None:
    import httpx

    request = httpx.Request("POST", "http://x/v1/chat/completions")
    auth = openai.AuthenticationError(
        "bad key", response=httpx.Response(401, request=request), body=None
    )
    with pytest.raises(openai.AuthenticationError):
        asyncio.run(EchoClient(auth).get_response([vf.UserMessage(content="q")], "m", {}))
    with pytest.raises(vf.ModelError) as info:
        asyncio.run(EchoClient(KeyError("k")).get_response([vf.UserMessage(content="q")], "m", {}))
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(vf.EmptyModelResponseError):  # a verifiers error is not re-wrapped
        asyncio.run(EchoClient(vf.EmptyModelResponseError("x")).get_response([], "m", {}))


def test_classic_client_takes_openai_tool_schemas_and_a_response_converts() -> None:
    client = EchoClient()
    schema = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    asyncio.run(client.get_response([vf.UserMessage(content="q")], "m", {}, tools=[schema]))
    assert client.seen_tools == [[{"fn": "f"}]]
    model_response = to_model_response(
        Response(
            id="i",
            created=0,
            model="m",
            usage={"prompt_tokens": 3, "completion_tokens": 2},
            message=ResponseMessage(
                content=None,
                tool_calls=[vf.ToolCall(id="c", name="f", arguments='{"a": 1}')],
                finish_reason="tool_calls",
            ),
        )
    )
    assert model_response.usage.prompt_tokens == 3 and model_response.finish_reason == "tool_calls"
    assert model_response.tool_calls[0]["function"] == {"name": "f", "arguments": '{"a": 1}'}


def test_state_to_output_is_the_classic_record() -> None:
    state = vf.State(
        example_id=4,
        prompt=[vf.UserMessage(content="q")],
        completion=[vf.AssistantMessage(content="a")],
        answer="",
        reward=0.5,
        metrics={"exact": 1.0},
        timing={"generation_ms": 1.0},
        error={"type": "ToolCallError", "message": "boom"},
        extra={"k": [1, 2]},
        bad=object(),
    )
    out = state_to_output(state, ["extra"])
    assert out["example_id"] == 4 and out["exact"] == 1.0 and "answer" not in out
    assert type(out["prompt"][0]) is dict and out["extra"] == {"k": [1, 2]}
    assert out["error"]["error"] == "ToolCallError" and out["error_chain"]
    json.dumps(out)
    with pytest.raises(ValueError, match="'bad'"):
        state_to_output(state, ["bad"])
    assert make_serializable(vf.types.TimeSpan(start=1.0, end=2.0))["end"] == 2.0


def test_error_chain_names_the_causes() -> None:
    try:
        try:
            raise KeyError("inner")
        except KeyError as e:
            raise vf.ToolCallError("outer") from e
    except vf.ToolCallError as e:
        err = e
    chain = ErrorChain(err)
    assert str(chain) == "ToolCallError -> KeyError" and KeyError in chain
    assert get_vf_error_chain(err) == [err]
    assert error_data(err)["error_chain_str"] == "ToolCallError -> KeyError"
    assert vf.types.Error is vf.errors.Error


def test_convert_func_to_tool_def_matches_0_3_1() -> None:
    def search(
        query: Annotated[str, pydantic.Field(description="What to look for.")],
        limit: int = 5,
        lang: str | None = None,
    ) -> str:
        """Search the pages.

        :param limit: how many hits
        """
        return query

    tool = convert_func_to_tool_def(search)
    assert tool.strict is True and tool.description == "Search the pages."
    params = tool.parameters
    assert params["title"] == "search_args" and params["additionalProperties"] is False
    assert params["required"] == ["query", "limit", "lang"]
    assert params["properties"]["query"]["description"] == "What to look for."
    assert params["properties"]["limit"] == {
        "default": 5,
        "description": "how many hits",
        "title": "Limit",
        "type": "integer",
    }
    assert "default" not in params["properties"]["lang"]  # a None default is dropped

    def numpy_style(x: int) -> int:
        """Double.

        Parameters
        ----------
        x : int
            the number
        """
        return 2 * x

    assert convert_func_to_tool_def(numpy_style).parameters["properties"]["x"]["description"] == (
        "the number"
    )


def test_message_utilities_match_0_3_1() -> None:
    raw = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}],
    }
    assert from_raw_message(raw).tool_calls[0].arguments == "{}"
    audio = {
        "role": "user",
        "content": [
            {"type": "text", "text": "hear"},
            {"type": "audio", "data": " QUJD\n", "format": "MP3"},
            {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}},
        ],
    }
    assert message_to_printable(audio)["content"] == "hear [audio] [audio]"
    assert serialize_message_for_output(audio)["content"][1:] == [
        {"type": "input_audio", "input_audio": {"data": "QUJD", "format": "mp3"}},
        {"type": "text", "text": "[audio]"},
    ]


def test_setup_logging_replaces_handlers_and_can_turn_logging_off() -> None:
    logger = logging.getLogger("verifiers")
    saved = (logger.level, list(logger.handlers), logger.propagate)
    try:
        logger.addHandler(logging.NullHandler())
        setup_logging("INFO")
        setup_logging("debug")
        assert len(logger.handlers) == 1 and logger.level == logging.DEBUG
        setup_logging(None)
        assert logger.handlers == []
        with pytest.raises(ValueError, match="log_file"):
            setup_logging("INFO", file_logging=True)
    finally:
        logger.setLevel(saved[0])
        logger.handlers = saved[1]
        logger.propagate = saved[2]


def test_legacy_lazy_imports_table() -> None:
    import verifiers

    table = verifiers.legacy._LAZY_IMPORTS
    assert table["ToolEnv"] == "verifiers.envs.tool_env:ToolEnv"
    assert set(table) <= set(verifiers.__all__)


def _bad_request(text: str, status: int = 400) -> Exception:
    import httpx

    response = httpx.Response(status, request=httpx.Request("POST", "http://x/v1"), text=text)
    if status == 401:
        return openai.AuthenticationError(text, response=response, body=None)
    return openai.BadRequestError(text, response=response, body=None)


class _ChatShaped:
    """An object of the openai client's shape whose calls fail with ``error``."""

    def __init__(self, error: Exception) -> None:
        async def create(**kwargs: Any) -> Any:
            raise error

        from types import SimpleNamespace

        self.chat = SimpleNamespace(completions=SimpleNamespace(create=create))


def test_openai_chat_client_over_a_client_shaped_object_maps_errors_as_0_3_1() -> None:
    from verifiers.classic.clients import OpenAIChatCompletionsClient

    def call(error: Exception) -> None:
        client = OpenAIChatCompletionsClient(_ChatShaped(error))
        asyncio.run(client.get_response([vf.UserMessage(content="q")], "m", sampling_args={}))

    with pytest.raises(vf.OverlongPromptError):
        call(_bad_request("This model's maximum context length is 8192 tokens"))
    with pytest.raises(openai.AuthenticationError):
        call(_bad_request("bad key", 401))
    with pytest.raises(vf.ModelError) as info:
        call(_bad_request("temperature must be >= 0"))
    assert isinstance(info.value.__cause__, openai.BadRequestError)


def test_openai_chat_client_conversion_steps() -> None:
    from types import SimpleNamespace

    from verifiers.classic.clients import OpenAIChatCompletionsClient
    from verifiers.types import ImageUrlContentPart, ImageUrlSource, TextContentPart

    client = OpenAIChatCompletionsClient(object())
    prompt, extra = asyncio.run(
        client.to_native_prompt(
            [
                vf.UserMessage(
                    content=[
                        TextContentPart(text="what?"),
                        ImageUrlContentPart(image_url=ImageUrlSource(url="data:x")),
                    ]
                ),
                vf.AssistantMessage(
                    content=None, tool_calls=[vf.ToolCall(id="c", name="f", arguments="{}")]
                ),
            ]
        )
    )
    assert extra == {} and prompt[0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:x"},
    }
    assert prompt[1]["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}
    message = SimpleNamespace(content=None, refusal="no.", reasoning_content="why", tool_calls=None)
    native = SimpleNamespace(
        id="i",
        created=0,
        model="m",
        usage=SimpleNamespace(prompt_tokens=2, completion_tokens=3, total_tokens=5),
        choices=[SimpleNamespace(finish_reason="stop", message=message)],
    )
    asyncio.run(client.raise_from_native_response(native))
    response = asyncio.run(client.from_native_response(native))
    assert response.message.content == "no." and response.message.reasoning_content == "why"
    assert response.usage["reasoning_tokens"] == 0 and response.usage["total_tokens"] == 5
    empty = SimpleNamespace(
        usage=None,
        choices=[SimpleNamespace(message=SimpleNamespace(content="", tool_calls=None))],
    )
    with pytest.raises(vf.EmptyModelResponseError):
        asyncio.run(client.raise_from_native_response(empty))


def test_resolve_client_and_usage_helpers() -> None:
    from verifiers.clients import resolve_client
    from verifiers.types import ClientConfig
    from verifiers.utils.response_utils import parse_response_message, parse_response_tokens
    from verifiers.utils.thread_utils import get_or_create_thread_attr
    from verifiers.utils.usage_utils import StateUsageTracker, compute_context_token_metrics

    assert type(resolve_client(ClientConfig(api_base_url="http://x/v1"))).__name__ == (
        "OpenAIChatCompletionsClient"
    )
    anthropic_client = resolve_client(
        ClientConfig(client_type="anthropic_messages", api_base_url="http://x")
    )
    assert type(anthropic_client).__name__ == "AnthropicMessagesClient"
    assert str(anthropic_client.client.base_url).startswith("http://x")

    def response(prompt: int, completion: int) -> Response:
        return Response(
            id="i",
            created=0,
            model="m",
            usage={"prompt_tokens": prompt, "completion_tokens": completion},
            message=ResponseMessage(
                content="a",
                tokens={
                    "prompt_ids": [1, 2, 3],
                    "prompt_mask": [0, 0, 0],
                    "completion_ids": [4, 5],
                    "completion_mask": [1, 1],
                    "completion_logprobs": [-0.1, -0.2],
                },
            ),
        )

    tracker = StateUsageTracker()
    assert tracker.snapshot() is None
    tracker.increment_from_response(response(10, 4))
    assert tracker.snapshot() == {"input_tokens": 10.0, "output_tokens": 4.0}
    steps = [{"response": response(10, 4)}, {"response": response(20, 6)}]
    assert compute_context_token_metrics(steps) == {
        "final_output_tokens": 10,
        "final_input_tokens": 16,
    }
    tokens = asyncio.run(parse_response_tokens(response(1, 1), max_seq_len=4))
    assert tokens is not None and tokens["completion_ids"] == [4] and tokens["is_truncated"]
    assert asyncio.run(parse_response_message(response(1, 1)))[0]["content"] == "a"
    assert get_or_create_thread_attr("vf_test_key", list) is get_or_create_thread_attr(
        "vf_test_key", list
    )


def test_usage_has_0_3_1_fields_and_a_response_takes_it() -> None:
    usage = vf.Usage(prompt_tokens=11, reasoning_tokens=2, completion_tokens=7, total_tokens=18)
    assert (usage.reasoning_tokens, usage.total_tokens) == (2, 18)
    assert vf.Usage(prompt_tokens=3, completion_tokens=4).total_tokens == 7
    usage.add(vf.Usage(prompt_tokens=1, completion_tokens=1, reasoning_tokens=1))
    assert (usage.prompt_tokens, usage.reasoning_tokens, usage.total_tokens) == (12, 3, 20)
    response = Response(
        id="i", created=0, model="m", usage=usage, message=ResponseMessage(content="x")
    )
    assert response.model_dump()["usage"]["total_tokens"] == 20
    assert to_model_response(response).usage.reasoning_tokens == 3
    assert to_model_response(response.model_copy(update={"usage": None})).usage.total_tokens == 0
