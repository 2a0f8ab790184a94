"""OpenAPI accuracy (issue 13, point 11): the published schema matches the server. The orgs
schema offers no ``admin``, ``scopes: []`` is refused by the schema, and schemathesis drives
every operation on both backends with no server error and no response outside the schema."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from .conftest import Hub


@schemathesis.serializer("application/gzip")
def _gzip(ctx: Any, value: Any) -> bytes:
    """Pushed eval runs are a gzip stream: generated bodies are gzipped bytes (the server must
    answer any of them, garbage inside included, without a server error)."""
    import gzip

    raw = value if isinstance(value, bytes) else str(value).encode()
    return gzip.compress(raw, mtime=0)


@pytest.fixture(scope="module")
def fuzz_token(hub: Hub) -> str:
    """A user of its own: what schemathesis revokes or changes touches no other test (an
    admin's token could revoke the other tests' admin token)."""
    _, token = hub.service.create_user(hub.unique("fuzz"))
    return str(token)


def test_api_has_no_server_errors_and_matches_its_schema(hub: Hub, fuzz_token: str) -> None:
    """Every operation, driven with generated requests (schemathesis strategies under
    hypothesis; its pytest plugin does not run under this pytest)."""
    schema = schemathesis.openapi.from_url(f"{hub.url}/api/openapi.json")
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(
            max_examples=10,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def drive(case: Any) -> None:
            case.call_and_validate(
                base_url=hub.url,
                headers={"Authorization": f"Bearer {fuzz_token}"},
                checks=[not_a_server_error, response_schema_conformance],
            )

        try:
            drive()
        except Exception as e:  # one line per failing operation, all reported together
            failures.append(f"{operation.method.upper()} {operation.path}: {str(e)[:600]}")
    assert operations >= 20
    assert not failures, "\n".join(failures)


def _component(hub: Hub, path: str, method: str) -> dict[str, Any]:
    spec = hub.app.openapi()
    body = spec["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    name = body["$ref"].rsplit("/", 1)[1]
    return dict(spec["components"]["schemas"][name])


def test_orgs_schema_offers_no_admin_flag(hub: Hub) -> None:
    org = _component(hub, "/api/v1/orgs", "post")
    assert set(org["properties"]) == {"name"}
    r = hub.api("POST", "/orgs", hub.admin_token, json={"name": hub.unique("o"), "admin": True})
    assert r.status_code == 201  # an unknown field is ignored, never acted on


def test_empty_scopes_are_refused_by_the_schema(hub: Hub) -> None:
    token = _component(hub, "/api/v1/tokens", "post")
    assert token["properties"]["scopes"]["minItems"] == 1
    r = hub.api("POST", "/tokens", hub.admin_token, json={"name": "x", "scopes": []})
    assert r.status_code == 400
    assert "scopes" in r.json()["message"]
