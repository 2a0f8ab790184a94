"""A quick check that an OpenAI-compatible endpoint is there before a run starts.

Without it, a wrong base URL costs a full run of retries (about a minute per rollout) and ends
with every rollout errored. :func:`probe_endpoint` asks ``GET {base_url}/models`` once, with a
short timeout, and turns the two common mistakes into one clear :class:`EndpointError`:

- nothing listens there (connection refused, unknown host): start the server or fix the URL;
- the URL answers, but not as an API root (404): the base URL usually ends in ``/v1``.

Other answers (401, 5xx, a server with ``/chat/completions`` but no ``/models``) are left to the run itself, which reports
them per rollout with retries where they make sense.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from verifiers.errors import EndpointError

__all__ = ["probe_endpoint"]


def probe_endpoint(base_url: str, api_key: str | None = None, *, timeout: float = 10.0) -> None:
    """Raise :class:`EndpointError` when ``base_url`` is unreachable or not an API root."""
    import httpx

    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(url, headers=headers, timeout=timeout, follow_redirects=True)
    except httpx.ConnectError as e:
        reason = _reason(e)
        raise EndpointError(
            f"cannot connect to the model endpoint {base_url} ({reason}): start the server "
            "there, or pass the right base URL with -b (e.g. http://127.0.0.1:8000/v1)"
        ) from None
    except httpx.TimeoutException:
        raise EndpointError(
            f"the model endpoint {base_url} did not answer within {timeout:g} s: check that the "
            "server is up and the base URL (-b) is right"
        ) from None
    except httpx.HTTPError as e:
        raise EndpointError(f"cannot reach the model endpoint {base_url}: {e}") from None
    if resp.status_code == 404 and not _has_chat_route(base_url, headers, timeout):
        path = urlsplit(base_url).path.rstrip("/")
        hint = (
            f"it usually ends in /v1: try -b {base_url.rstrip('/')}/v1"
            if not path.endswith("/v1")
            else "check the path of the base URL (-b)"
        )
        raise EndpointError(
            f"{url} answered 404 Not Found: {base_url} is not the root of an "
            f"OpenAI-compatible API; {hint}"
        )


def _has_chat_route(base_url: str, headers: dict[str, str], timeout: float) -> bool:
    """Some servers have no ``/models``: does ``/chat/completions`` exist there instead?

    An empty body is refused by any real implementation (400/422/401) without generating.
    """
    import httpx

    try:
        resp = httpx.post(
            base_url.rstrip("/") + "/chat/completions", json={}, headers=headers, timeout=timeout
        )
    except httpx.HTTPError:
        return False
    return resp.status_code not in (404, 405)


def _reason(e: Exception) -> str:
    text = str(e).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return str(e) or type(e).__name__
