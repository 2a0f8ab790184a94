"""OpenAPI accuracy (issue 13, point 11): the published schema matches the server. The orgs
schema offers no ``admin``, ``scopes: []`` is refused by the schema, and schemathesis drives
every operation on both backends with no server error and no response outside the schema."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from .conftest import Hub


@pytest.fixture
def api_schema(hub: Hub) -> Any:
    return schemathesis.openapi.from_url(f"{hub.url}/api/openapi.json")


@pytest.fixture(scope="module")
def fuzz_token(hub: Hub) -> str:
    """An admin of its own (what schemathesis revokes or creates touches no other test)."""
    _, token = hub.service.create_user(hub.unique("fuzz"), admin=True)
    return str(token)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_has_no_server_errors_and_matches_its_schema(case: Any, fuzz_token: str) -> None:
    case.call_and_validate(
        headers={"Authorization": f"Bearer {fuzz_token}"},
        checks=[not_a_server_error, response_schema_conformance],
    )


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
