"""An OpenAI-compatible HTTP server for tests and benchmarks.

It serves ``POST /v1/chat/completions``, ``POST /v1/completions`` and ``GET /v1/models`` on
127.0.0.1 (port 0 by default: the OS picks a free port), answers from a responder function or a
script of replies, and can add latency and inject faults (HTTP 500, 429 with ``Retry-After``,
dropped connections, malformed JSON, hangs). Three ways to run it::

    async with OpenAITestServer(responder=answer) as srv:      # in the running event loop
        client = NativeClient(srv.base_url)

    with OpenAITestServer(replies=["4", "5"]) as srv:          # in a background thread
        ...

    with ServerProcess(responder="my_module:answer", fault_rate=0.2) as srv:  # own process
        ...   # python -m verifiers.testing.server --port 0 --responder my_module:answer

A responder gets the decoded request body and returns a reply: a string (the assistant's
content), ``None`` (an empty message), or a dict with any of ``content``, ``tool_calls``
(``[{"name": ..., "arguments": dict or JSON string}]``), ``reasoning_content`` and
``finish_reason``. It may be ``async``.

The toy tokenizer, chat template and response bodies live in :mod:`verifiers.testing.replies`
(re-exported here).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

import orjson

from verifiers.testing.replies import (
    END,
    TOKEN_OFFSET,
    Reply,
    Responder,
    build_chat_completion,
    build_completion,
    default_responder,
    toy_chat_template,
    toy_detokenize,
    toy_logprob,
    toy_render_assistant,
    toy_tokenize,
)

if TYPE_CHECKING:
    from aiohttp import web

__all__ = [
    "END",
    "FAULT_KINDS",
    "TOKEN_OFFSET",
    "OpenAITestServer",
    "Reply",
    "ServerProcess",
    "ServerStats",
    "build_chat_completion",
    "build_completion",
    "default_responder",
    "toy_chat_template",
    "toy_detokenize",
    "toy_logprob",
    "toy_render_assistant",
    "toy_tokenize",
]

FAULT_KINDS = ("500", "429", "drop", "malformed", "hang")


# --------------------------------------------------------------------------------------------
# the server


@dataclass
class ServerStats:
    """What the server saw: ``requests`` (every POST to a completions route), ``responses``
    (answered 200), ``faults`` by kind, ``bad_requests`` (answered 4xx)."""

    requests: int = 0
    responses: int = 0
    bad_requests: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    peak_in_flight: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "responses": self.responses,
            "bad_requests": self.bad_requests,
            "faults": dict(self.faults),
            "peak_in_flight": self.peak_in_flight,
        }


class _ScriptExhausted(Exception):
    pass


def _error(status: int, message: str, type_: str = "invalid_request_error") -> web.Response:
    from aiohttp import web

    body = orjson.dumps({"error": {"message": message, "type": type_, "code": status}})
    return web.Response(status=status, body=body, content_type="application/json")


class OpenAITestServer:
    """An OpenAI-compatible server on ``host:port`` (port 0 = any free port).

    Args:
        responder: ``responder(request_json) -> reply`` (sync or async); default
            :func:`default_responder`. Not together with ``replies``.
        replies: replies served in order, one per request; when they run out the server
            answers 500 ``"script exhausted"``.
        latency: seconds added to every request, or ``latency(request_json) -> seconds``.
        fault_rate: the probability that a request gets a fault, drawn from ``random.Random(seed)``
            in arrival order.
        fault_kinds: which faults to draw from (:data:`FAULT_KINDS`): ``"500"``; ``"429"`` with
            ``Retry-After: retry_after``; ``"drop"`` (the connection is closed without an answer);
            ``"malformed"`` (200 with a truncated JSON body); ``"hang"`` (no answer for
            ``hang_seconds``, or until the server stops).
        fault_sequence: faults for the first requests, in order (``None`` = no fault), before
            ``fault_rate`` applies.
        max_model_len: prompts with at least this many toy tokens get a vLLM-style 400
            "maximum context length" error.
        model: the id listed by ``GET /v1/models``.
        keep_requests: record every request in :attr:`requests` and the latest headers in
            :attr:`last_headers` (the command line turns this off for long benchmark runs).
        max_in_flight: a rate-limited endpoint: a request that arrives while this many are
            being answered gets 429 with ``Retry-After: retry_after`` (counted as a "429"
            fault); ``stats.peak_in_flight`` is the most answered at once.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        replies: Sequence[Reply] | None = None,
        latency: float | Callable[[dict[str, Any]], float] = 0.0,
        fault_rate: float = 0.0,
        fault_kinds: Sequence[str] = FAULT_KINDS,
        fault_sequence: Sequence[str | None] = (),
        seed: int = 0,
        retry_after: float = 0.0,
        hang_seconds: float = 3600.0,
        max_model_len: int | None = None,
        model: str = "toy-model",
        keep_requests: bool = True,
        max_in_flight: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if responder is not None and replies is not None:
            raise ValueError("give either responder or replies, not both")
        bad = [k for k in [*fault_kinds, *(f for f in fault_sequence if f)] if k not in FAULT_KINDS]
        if bad:
            raise ValueError(f"unknown fault kinds {bad}; choose from {list(FAULT_KINDS)}")
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be between 0 and 1, got {fault_rate}")
        self.responder: Responder = responder or default_responder
        self._replies = list(replies) if replies is not None else None
        self.latency = latency
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.fault_sequence = list(fault_sequence)
        self.retry_after = retry_after
        self.hang_seconds = hang_seconds
        self.max_model_len = max_model_len
        self.model = model
        self.keep_requests = keep_requests
        self.max_in_flight = max_in_flight
        self._in_flight = 0
        self.host = host
        self.port = port
        self.stats = ServerStats()
        self.requests: list[dict[str, Any]] = []
        """Every decoded completions request, in arrival order."""
        self.last_headers: dict[str, str] = {}
        """The HTTP headers of the latest completions request."""
        self._rng = random.Random(seed)
        self._count = 0
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (valid once started)."""
        return f"http://{self.host}:{self.port}/v1"

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> OpenAITestServer:
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/_test/stats", self._stats)
        self._stopping = asyncio.Event()
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, backlog=1024, reuse_address=True)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self._runner = runner
        return self

    async def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> OpenAITestServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __enter__(self) -> OpenAITestServer:
        """Run the server in a background thread with its own event loop."""
        started: Future[None] = Future()
        loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as e:
                started.set_exception(e)
                loop.close()
                return
            started.set_result(None)
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread_loop = loop
        self._thread = threading.Thread(target=run, name="OpenAITestServer", daemon=True)
        self._thread.start()
        started.result(timeout=30)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        loop, thread = self._thread_loop, self._thread
        if loop is None or thread is None:
            return
        if self._stopping is not None:
            loop.call_soon_threadsafe(self._stopping.set)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        self._thread = self._thread_loop = None

    # -- handlers --------------------------------------------------------------------------

    def _next_fault(self, index: int) -> str | None:
        if index < len(self.fault_sequence):
            return self.fault_sequence[index]
        if self.fault_rate and self._rng.random() < self.fault_rate:
            return self._rng.choice(self.fault_kinds)
        return None

    async def _reply_for(self, request: dict[str, Any]) -> Reply:
        if self._replies is not None:
            if not self._replies:
                raise _ScriptExhausted("script exhausted: the server has no replies left")
            return self._replies.pop(0)
        reply = self.responder(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return reply

    async def _handle(
        self,
        request: web.Request,
        build: Callable[[dict[str, Any], Reply, int], dict[str, Any]],
        required: str,
    ) -> web.StreamResponse:
        limit = self.max_in_flight
        if limit is not None and self._in_flight >= limit:  # a rate-limited endpoint
            self.stats.requests += 1
            self.stats.faults["429"] += 1
            self._count += 1
            resp = _error(429, f"more than {limit} requests in flight", "rate_limit_error")
            resp.headers["Retry-After"] = f"{self.retry_after:g}"
            return resp
        self._in_flight += 1
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self._in_flight)
        try:
            return await self._handle_one(request, build, required)
        finally:
            self._in_flight -= 1

    async def _handle_one(
        self,
        request: web.Request,
        build: Callable[[dict[str, Any], Reply, int], dict[str, Any]],
        required: str,
    ) -> web.StreamResponse:
        from aiohttp import web

        index = self._count
        self._count += 1
        self.stats.requests += 1
        fault = self._next_fault(index)
        raw = await request.read()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self.stats.bad_requests += 1
            return _error(400, "the request body is not valid JSON")
        if not isinstance(body, dict) or required not in body:
            self.stats.bad_requests += 1
            return _error(400, f"the request body must be a JSON object with {required!r}")
        if body.get("stream") and required != "messages":
            self.stats.bad_requests += 1
            return _error(400, "this test server streams chat completions only; drop 'stream'")
        if required == "prompt" and not isinstance(body["prompt"], str):
            self.stats.bad_requests += 1
            return _error(400, "this test server takes one string 'prompt' per request")
        if self.keep_requests:
            self.requests.append(body)
            self.last_headers = dict(request.headers)
        latency = self.latency(body) if callable(self.latency) else self.latency
        if latency > 0:
            await asyncio.sleep(latency)
        if fault is not None:
            self.stats.faults[fault] += 1
            if fault == "500":
                return _error(500, "injected server error", "server_error")
            if fault == "429":
                resp = _error(429, "injected rate limit", "rate_limit_error")
                resp.headers["Retry-After"] = f"{self.retry_after:g}"
                return resp
            if fault == "malformed":
                return web.Response(
                    status=200,
                    body=b'{"id": "x", "choices": [{"mess',
                    content_type="application/json",
                )
            if fault == "drop":
                if request.transport is not None:
                    request.transport.abort()
                raise asyncio.CancelledError()  # nothing more to send: the peer is gone
            assert self._stopping is not None
            try:  # hang
                await asyncio.wait_for(self._stopping.wait(), self.hang_seconds)
            except TimeoutError:
                pass
            return _error(503, "the server hung and is now stopping", "server_error")
        if self.max_model_len is not None:
            if required == "messages":
                text = toy_chat_template(body["messages"], body.get("tools"))
            else:
                text = body["prompt"]
            n = len(text.encode("utf-8"))  # toy tokens: one per byte
            if n >= self.max_model_len:
                self.stats.bad_requests += 1
                return _error(
                    400,
                    f"This model's maximum context length is {self.max_model_len} tokens. "
                    f"However, your request has {n} input tokens. Please reduce the length of "
                    "the messages.",
                )
        try:
            reply = await self._reply_for(body)
            payload = build(body, reply, index)
        except _ScriptExhausted as e:
            return _error(500, str(e), "server_error")
        except Exception as e:  # a broken responder: tell the test, never a bare 500
            return _error(500, f"the responder raised {type(e).__name__}: {e}", "server_error")
        self.stats.responses += 1
        if body.get("stream"):
            return await _stream(request, payload, body)
        return web.Response(body=orjson.dumps(payload), content_type="application/json")

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, build_chat_completion, "messages")

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, build_completion, "prompt")

    async def _models(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        data = {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "vf"}]}
        return web.json_response(data)

    async def _stats(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        return web.json_response(self.stats.as_dict())


# --------------------------------------------------------------------------------------------
# the server in its own process


async def _stream(
    request: web.Request, payload: dict[str, Any], body: dict[str, Any]
) -> web.StreamResponse:
    """A chat completion as server-sent events: the whole message in one delta, then the
    finish reason, the usage when ``stream_options.include_usage`` asks for it, and
    ``[DONE]``. Token ids ride on the first chunk (``prompt_token_ids``) and the choice."""
    from aiohttp import web

    choice = payload["choices"][0]
    message = dict(choice["message"])
    if message.get("tool_calls"):
        message["tool_calls"] = [{"index": i, **tc} for i, tc in enumerate(message["tool_calls"])]
    head: dict[str, Any] = {k: payload[k] for k in ("id", "created", "model") if k in payload}
    head["object"] = "chat.completion.chunk"
    delta = {k: v for k, v in choice.items() if k not in ("message", "finish_reason")}
    chunks = [
        {**head, "prompt_token_ids": payload.get("prompt_token_ids"),
         "choices": [{**delta, "index": 0, "delta": message, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason")}]},
    ]  # fmt: skip
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**head, "choices": [], "usage": payload.get("usage")})
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for chunk in chunks:
        await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def _load_responder(spec: str) -> Responder:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"--responder must look like module:function, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"--responder: cannot import {module_name!r}: {e}") from None
    func = getattr(module, attr, None)
    if not callable(func):
        raise SystemExit(f"--responder: {module_name!r} has no function {attr!r}")
    return func  # type: ignore[no-any-return]


class ServerProcess:
    """``python -m verifiers.testing.server`` in a child process, as a context manager.

    Keyword arguments become command-line flags (``fault_rate=0.2`` -> ``--fault-rate 0.2``;
    ``responder`` is a ``"module:function"`` string); ``env`` adds environment variables
    (``PYTHONPATH`` to find the responder, say). ``base_url`` is read from the child's first
    stdout line; :meth:`stats` fetches the child's counters.
    """

    def __init__(
        self, *, python: str | None = None, env: dict[str, str] | None = None, **options: Any
    ) -> None:
        self.args = [python or sys.executable, "-m", "verifiers.testing.server"]
        self.env = {**os.environ, **env} if env else None
        for key, value in options.items():
            if value is None:
                continue
            if isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            self.args += [f"--{key.replace('_', '-')}", str(value)]
        self.base_url = ""
        self.process: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None

    def __enter__(self) -> ServerProcess:
        err_file = tempfile.TemporaryFile(mode="w+")  # a file never fills up like a pipe
        self._stderr = err_file
        self.process = subprocess.Popen(
            self.args, stdout=subprocess.PIPE, stderr=err_file, text=True, env=self.env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("http"):
            self.process.kill()
            self.process.communicate(timeout=10)
            err_file.seek(0)
            err = err_file.read().strip()
            err_file.close()
            raise RuntimeError(f"the test server did not start: {line!r} {err}")
        self.base_url = line
        return self

    def stats(self) -> dict[str, Any]:
        url = self.base_url.rsplit("/v1", 1)[0] + "/_test/stats"
        with urllib.request.urlopen(url, timeout=10) as resp:
            data: dict[str, Any] = json.loads(resp.read())
        return data

    def __exit__(self, *exc: object) -> None:
        proc = self.process
        if proc is None:
            return
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        if self._stderr is not None:
            self._stderr.close()


async def _serve_forever(server: OpenAITestServer) -> None:
    await server.start()
    print(server.base_url, flush=True)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)
    await done.wait()
    await server.stop()


_CLI_EPILOG = """\
responder protocol:
  --responder module:function names a function (sync or async) called once per request with the
  decoded JSON body (a /v1/chat/completions or /v1/completions request). It returns:
    "text"                      the assistant's content
    None                        an empty assistant message
    {"content": ..., "tool_calls": [{"name": ..., "arguments": {...} or "json"}],
     "reasoning_content": ..., "finish_reason": ...}   any of these keys
  Without --responder the server answers with the default responder (echoes the last user
  message). The module must be importable: set PYTHONPATH to its directory.

fault kinds (--fault-kinds, comma separated; drawn with probability --fault-rate, seeded by
--seed):
  500        HTTP 500 with an OpenAI-style error body
  429        HTTP 429 with a Retry-After header of --retry-after seconds
  drop       the connection is closed with no response
  malformed  HTTP 200 with a truncated JSON body
  hang       no answer for --hang-seconds, then 503

other routes: GET /v1/models, GET /_test/stats (request and fault counters as JSON).
The first line on stdout is the base URL (http://HOST:PORT/v1); SIGTERM or Ctrl-C stops it.
"""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m verifiers.testing.server",
        description="OpenAI-compatible test server; prints its base URL on the first line.",
        epilog=_CLI_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default %(default)s)"
    )
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    parser.add_argument(
        "--responder", metavar="MODULE:FUNCTION", help="function answering each request (below)"
    )
    parser.add_argument(
        "--latency-ms", type=float, default=0.0, help="delay before each answer, in milliseconds"
    )
    parser.add_argument(
        "--fault-rate",
        type=float,
        default=0.0,
        help="probability (0-1) that a request gets a fault",
    )
    parser.add_argument(
        "--fault-kinds",
        default=",".join(FAULT_KINDS),
        help="comma-separated faults to draw from (default: all; see below)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault draws")
    parser.add_argument(
        "--retry-after", type=float, default=0.0, help="Retry-After seconds sent with 429 faults"
    )
    parser.add_argument(
        "--hang-seconds", type=float, default=3600.0, help="how long a 'hang' fault waits"
    )
    parser.add_argument(
        "--max-model-len",
        type=int,
        default=None,
        help="refuse prompts longer than this many toy tokens with HTTP 400, as vLLM does",
    )
    parser.add_argument("--model", default="toy-model", help="model name the server reports")
    ns = parser.parse_args(argv)
    try:
        server = OpenAITestServer(
            _load_responder(ns.responder) if ns.responder else None,
            latency=ns.latency_ms / 1000.0,
            fault_rate=ns.fault_rate,
            fault_kinds=[k for k in ns.fault_kinds.split(",") if k],
            seed=ns.seed,
            retry_after=ns.retry_after,
            hang_seconds=ns.hang_seconds,
            max_model_len=ns.max_model_len,
            model=ns.model,
            keep_requests=False,
            host=ns.host,
            port=ns.port,
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    asyncio.run(_serve_forever(server))


if __name__ == "__main__":
    main()
