"""Prometheus text metrics without a dependency: counters and a latency sum per route."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self.seconds: dict[tuple[str, str], float] = defaultdict(float)
        self.events: dict[str, int] = defaultdict(int)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1
            self.seconds[(method, route)] += seconds

    def inc(self, event: str, n: int = 1) -> None:
        with self._lock:
            self.events[event] += n

    def render(self, gauges: dict[str, int]) -> str:
        out = [
            "# HELP vf_hub_http_requests_total HTTP requests by method, route and status.",
            "# TYPE vf_hub_http_requests_total counter",
        ]
        with self._lock:
            for (method, route, status), n in sorted(self.requests.items()):
                out.append(
                    f'vf_hub_http_requests_total{{method="{method}",route="{_esc(route)}",'
                    f'status="{status}"}} {n}'
                )
            out += [
                "# HELP vf_hub_http_request_seconds_sum Time spent answering, by route.",
                "# TYPE vf_hub_http_request_seconds_sum counter",
            ]
            for (method, route), secs in sorted(self.seconds.items()):
                out.append(
                    f'vf_hub_http_request_seconds_sum{{method="{method}",route="{_esc(route)}"}} '
                    f"{secs:.6f}"
                )
            out += [
                "# HELP vf_hub_events_total Uploads, downloads and other events.",
                "# TYPE vf_hub_events_total counter",
            ]
            for event, n in sorted(self.events.items()):
                out.append(f'vf_hub_events_total{{event="{event}"}} {n}')
        for name, value in sorted(gauges.items()):
            out += [f"# TYPE vf_hub_{name} gauge", f"vf_hub_{name} {value}"]
        return "\n".join(out) + "\n"


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"')


class MetricsMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware overhead): labels by the matched route template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            self.metrics.observe(scope["method"], path, status, time.perf_counter() - start)
