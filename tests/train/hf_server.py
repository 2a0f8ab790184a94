"""A real HTTP inference server for tests: OpenAI-style chat completions (with vLLM's
``return_token_ids``) served by a Hugging Face model, and vLLM's dev-mode weight reload ``POST /collective_rpc
{"method": "reload_weights", "kwargs": {"weights_path": DIR}}``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import web

from verifiers.train.local_client import LocalModelClient


class HFServer:
    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.client = LocalModelClient(model, tokenizer, seed=7)
        self.updates: list[int] = []  # the step_N of each reloaded directory
        self.refuse = False  # answer reloads with 500 (a server that cannot load them)
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        assert body.get("return_token_ids") is True and body.get("logprobs") is True
        r = await self.client.get_response(
            body["messages"],
            body["model"],
            sampling_args={
                "temperature": body.get("temperature", 1.0),
                "max_tokens": body.get("max_tokens"),
            },
        )
        assert r.completion_token_ids is not None and r.completion_logprobs is not None
        return web.json_response(
            {
                "id": "cmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "prompt_token_ids": r.prompt_token_ids,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": r.finish_reason,
                        "message": {"role": "assistant", "content": r.content},
                        "token_ids": r.completion_token_ids,
                        "logprobs": {
                            "content": [
                                {"token": str(t), "logprob": lp, "top_logprobs": []}
                                for t, lp in zip(
                                    r.completion_token_ids, r.completion_logprobs, strict=True
                                )
                            ]
                        },
                    }
                ],
                "usage": {
                    "prompt_tokens": r.usage.prompt_tokens,
                    "completion_tokens": r.usage.completion_tokens,
                },
            }
        )

    async def _collective_rpc(self, request: web.Request) -> web.Response:
        from pathlib import Path

        from transformers import AutoModelForCausalLM

        body = await request.json()
        if self.refuse:
            return web.json_response({"error": "cannot load"}, status=500)
        assert body["method"] == "reload_weights", body
        path = body["kwargs"]["weights_path"]
        fresh = AutoModelForCausalLM.from_pretrained(path)
        self.model.load_state_dict(fresh.state_dict())
        self.updates.append(int(Path(path).name.split("_")[1]))
        return web.json_response({"results": [None]})

    async def _reset_prefix_cache(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    def __enter__(self) -> HFServer:
        started = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self._chat)
            app.router.add_post("/collective_rpc", self._collective_rpc)
            app.router.add_post("/reset_prefix_cache", self._reset_prefix_cache)
            self._runner = web.AppRunner(app)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        started.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
