"""RetryPolicy: backoff arithmetic, Retry-After parsing, status classification, the retry loop."""

from __future__ import annotations

from collections import Counter
from email.utils import formatdate

import pytest

from verifiers.clients.retry import (
    RetryPolicy,
    TransientError,
    error_for_status,
    is_context_length_message,
    parse_retry_after,
)
from verifiers.errors import ConfigError, EndpointError, OverlongPromptError


def test_retry_after_seconds_and_dates() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.25 ") == 0.25
    assert parse_retry_after("-5") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("soon") is None
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30.0)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_delay_grows_exponentially_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [policy.delay(n) for n in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.delay(10_000) == 5.0


def test_jitter_stays_within_its_fraction() -> None:
    policy = RetryPolicy(base_delay=2.0, max_delay=100.0, jitter=0.5)
    delays = {policy.delay(1) for _ in range(200)}
    assert all(2.0 <= d <= 4.0 for d in delays)
    assert len(delays) > 1


def test_retry_after_replaces_backoff_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, jitter=0.0, max_retry_after=10.0)
    assert policy.delay(0, retry_after=7.0) == 7.0
    assert policy.delay(0, retry_after=3600.0) == 10.0


@pytest.mark.parametrize(
    "kwargs", [{"max_retries": -1}, {"base_delay": -1.0}, {"jitter": 1.5}, {"max_delay": -2.0}]
)
def test_invalid_policy_is_a_config_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="RetryPolicy"):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_transient_statuses(status: int) -> None:
    err = error_for_status(status, b'{"error": {"message": "busy"}}', "2", "http://x")
    assert isinstance(err, TransientError)
    assert err.status_code == status
    assert err.retry_after == 2.0
    assert "busy" in str(err)


def test_context_length_400_is_overlong_prompt() -> None:
    body = (
        b'{"error": {"message": "This model\'s maximum context length is 4096 tokens. '
        b'However, you requested 5000 tokens."}}'
    )
    assert isinstance(error_for_status(400, body, None, "u"), OverlongPromptError)
    assert is_context_length_message("prompt is too long: 5000 tokens > 4096 maximum")
    assert not is_context_length_message("temperature must be positive")


@pytest.mark.parametrize(
    ("status", "needle"), [(400, "bad temperature"), (401, "API key"), (404, "base URL")]
)
def test_other_4xx_are_endpoint_errors_with_status(status: int, needle: str) -> None:
    err = error_for_status(status, b'{"detail": "bad temperature"}', None, "http://x/v1")
    assert isinstance(err, EndpointError)
    assert err.status_code == status
    assert needle in str(err)


async def test_run_retries_transient_errors_until_success() -> None:
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise TransientError("http_503", "busy", status_code=503)
        return "ok"

    stats: Counter[str] = Counter()
    result = await RetryPolicy(base_delay=0.0).run(flaky, where="x", stats=stats)
    assert result == "ok"
    assert calls == 3
    assert stats == Counter({"http_503": 2})


async def test_run_gives_up_with_endpoint_error() -> None:
    calls = 0

    async def down() -> str:
        nonlocal calls
        calls += 1
        raise TransientError("connection", "refused")

    stats: Counter[str] = Counter()
    with pytest.raises(EndpointError, match="gave up after 3 attempts"):
        await RetryPolicy(max_retries=2, base_delay=0.0).run(down, where="x", stats=stats)
    assert calls == 3
    assert stats == Counter({"connection": 3, "gave_up": 1})


async def test_run_does_not_retry_other_errors() -> None:
    calls = 0

    async def bad() -> str:
        nonlocal calls
        calls += 1
        raise EndpointError("HTTP 401", status_code=401)

    with pytest.raises(EndpointError):
        await RetryPolicy(base_delay=0.0).run(bad, where="x")
    assert calls == 1
