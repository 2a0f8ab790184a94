"""Deterministic test doubles for the rollout source: a fake clock, fake inference endpoints
and a minimal environment that drives them (the GroupRunner protocol)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from verifiers.clients.base import Client
from verifiers.types import Messages, MessageType, ModelResponse, SamplingArgs, State

T = TypeVar("T")


class FakeClock:
    """Virtual time: ``sleep`` waits until ``advance`` moves time past its deadline."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._seq), fut))
        await fut

    def advance_to_next(self) -> bool:
        """Jump to the earliest pending deadline and wake everything due; False if none."""
        while self._sleepers and self._sleepers[0][2].done():  # cancelled sleepers
            heapq.heappop(self._sleepers)
        if not self._sleepers:
            return False
        self.now = max(self.now, self._sleepers[0][0])
        while self._sleepers and self._sleepers[0][0] <= self.now:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)
        return True

    async def run(self, aw: Awaitable[T]) -> T:
        """Await ``aw``, advancing virtual time whenever every task is waiting on the clock."""
        task = asyncio.ensure_future(aw)
        while True:
            for _ in range(100):  # let every ready task run until all are blocked
                await asyncio.sleep(0)
            if task.done():
                return task.result()
            if not self.advance_to_next():
                raise AssertionError(
                    "deadlock: the awaited task waits on nothing the clock controls"
                )


class FakeEndpoint(Client):
    """An inference endpoint answering after ``latency`` virtual seconds.

    ``answer(prompt_text, call_index)`` picks the reply text; each reply is one token.
    Every call is logged as ``(endpoint name, prompt text)``; cancelled calls are counted.
    """

    def __init__(
        self,
        name: str,
        clock: FakeClock,
        latency: float,
        answer: Callable[[str, int], str],
        log: list[tuple[str, str]],
    ) -> None:
        self.name = name
        self.clock = clock
        self.latency = latency
        self.answer = answer
        self.log = log
        self.calls = 0
        self.cancelled = 0

    async def get_response(
        self,
        prompt: Messages | str,
        model: str,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        message_type: MessageType = "chat",
    ) -> ModelResponse:
        text = prompt[-1]["content"] if isinstance(prompt, list) else prompt
        index = self.calls
        self.calls += 1
        self.log.append((self.name, text))
        try:
            await self.clock.sleep(self.latency)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        reply = self.answer(text, index)
        return ModelResponse(
            message={"role": "assistant", "content": reply},
            finish_reason="stop",
            prompt_token_ids=[ord(c) for c in text],
            completion_token_ids=[ord(reply[0])],
            completion_logprobs=[-0.5],
        )


class FakeEnv:
    """Single-turn environment over ``rows``: reward 1 when the reply equals the answer."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.launches: list[tuple[str, int]] = []  # (endpoint name, example id) per group

    def get_rows(self, split: str = "train") -> list[dict[str, Any]]:
        return self.rows

    async def run_group(
        self,
        input: Mapping[str, Any],
        client: Client,
        model: str,
        n: int,
        sampling_args: SamplingArgs | None = None,
    ) -> list[State]:
        prompt = input["prompt"]

        self.launches.append((getattr(client, "name", "?"), input["example_id"]))

        async def one() -> State:
            try:
                r = await client.get_response(prompt, model, sampling_args=sampling_args)
            except RuntimeError as e:  # recorded on the state, as Environment does
                return State(
                    prompt=prompt,
                    completion=[],
                    example_id=input["example_id"],
                    error={"type": "RuntimeError", "message": str(e)},
                    reward=None,
                    metrics={},
                    trajectory=[],
                )
            assert r.prompt_token_ids is not None and r.completion_token_ids is not None
            return State(
                prompt=prompt,
                completion=[r.message],
                example_id=input["example_id"],
                task=input.get("task", "fake"),
                error=None,
                reward=1.0 if r.content == input["answer"] else 0.0,
                metrics={},
                trajectory=[
                    {
                        "prompt_len": len(prompt),
                        "completion": [r.message],
                        "response": r,
                        "tokens": {
                            "prompt_ids": r.prompt_token_ids,
                            "completion_ids": r.completion_token_ids,
                            "completion_logprobs": r.completion_logprobs,
                        },
                        "is_truncated": False,
                        "extras": {},
                    }
                ],
            )

        return list(await asyncio.gather(*(one() for _ in range(n))))


def rows(n: int) -> list[dict[str, Any]]:
    return [
        {"prompt": [{"role": "user", "content": f"q{i}"}], "answer": "A", "example_id": i}
        for i in range(n)
    ]
