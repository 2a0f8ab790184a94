"""Runtime network policies: the shared allow/block rules (normalized, mutually exclusive,
matched by scheme, host and port), the ``e2b`` config's rule shapes and the egress table its
sandboxes would get, that selecting ``e2b`` to run a program says it cannot run here, and that
``network = false`` is enforced by the runtimes that accept it and refused by ``subprocess``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

import verifiers.v1 as vf
from verifiers.sandbox.bwrap import bwrap_available
from verifiers.sandbox.docker import docker_available
from verifiers.v1.configs.runtime import NetworkPolicyConfig, network_rule_matches
from verifiers.v1.errors import HarnessError
from verifiers.v1.harnesses import BashHarnessConfig
from verifiers.v1.runtimes import (
    BwrapConfig,
    DockerConfig,
    E2BConfig,
    RuntimeConfig,
    SubprocessConfig,
    make_runtime,
)
from verifiers.v1.runtimes.e2b import _egress_update

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")
needs_docker = pytest.mark.skipif(not docker_available(), reason="no docker engine runs here")
ROUTES = ["https://tunnel.example.com/intercept", "http://10.1.2.3:8000/mcp"]


def test_default_policy_is_unrestricted_and_permits_anything() -> None:
    policy = NetworkPolicyConfig()
    assert (policy.allow, policy.block, policy.network_restricted) == (["*"], [], False)
    assert policy.permits("https", "anything.example.org", 443)


@pytest.mark.parametrize(
    "given", [{"allow": []}, {"block": ["*"]}, {"allow": ["a.example.com"], "block": ["*"]}]
)
def test_framework_only_policies_normalize_to_block_everything(given: dict[str, Any]) -> None:
    policy = NetworkPolicyConfig(**given)
    assert (policy.allow, policy.block, policy.network_restricted) == ([], ["*"], True)
    assert not policy.permits("https", "a.example.com", 443)


def test_an_allowlist_and_a_blocklist_together_are_rejected() -> None:
    with pytest.raises(ValidationError, match=r"allowlist .* or a blocklist"):
        NetworkPolicyConfig(allow=["a.example.com"], block=["b.example.com"])


def test_an_allowlist_permits_its_hosts_scheme_and_port_only() -> None:
    policy = NetworkPolicyConfig(allow=["api.example.com", "*.cdn.example.com", "https://x.io"])
    assert policy.network_restricted
    assert policy.permits("http", "API.example.com.", 8080)  # host pattern: any scheme, port
    assert not policy.permits("https", "sub.api.example.com", 443)  # no subdomains
    assert policy.permits("https", "eu.cdn.example.com", 443)
    assert not policy.permits("https", "cdn.example.com", 443)  # `*.` needs a subdomain
    assert policy.permits("https", "x.io", 443)
    assert not policy.permits("http", "x.io", 443)  # another scheme
    assert not policy.permits("https", "x.io", 8443)  # https means port 443


def test_a_blocklist_covers_subdomains() -> None:
    policy = NetworkPolicyConfig(block=["example.com", "https://evil.io:8443"])
    assert policy.network_restricted
    assert not policy.permits("https", "example.com", 443)
    assert not policy.permits("https", "deep.api.example.com", 443)
    assert policy.permits("https", "notexample.com", 443)
    assert not policy.permits("https", "evil.io", 8443)
    assert policy.permits("https", "evil.io", 443)


def test_a_rule_with_a_bad_port_matches_nothing() -> None:
    assert not network_rule_matches("example.com:99999", "https", "example.com", 443)
    assert not network_rule_matches("", "https", "example.com", 443)


@pytest.mark.parametrize(
    "rule",
    ["", "https://api.example.com", "example.com:8443", "example.com/path", "user@example.com",
     "10.0.0.0/99", "example..com", "-bad.example.com", "a." + "b" * 64 + ".com", "*"],
)  # fmt: skip
def test_e2b_allow_rules_must_be_hosts_or_addresses(rule: str) -> None:
    if rule == "*":  # alone it is the unrestricted default; beside a block rule too
        assert not E2BConfig(allow=[rule]).network_restricted
        return
    with pytest.raises(ValidationError, match=f"E2B allow rules must be .*got {rule!r}"):
        E2BConfig(allow=[rule])


@pytest.mark.parametrize(
    "rule", ["api.example.com", "*.example.com", "10.0.0.1", "10.0.0.0/24", "2001:db8::/32"]
)
def test_e2b_accepts_enforceable_allow_rules(rule: str) -> None:
    assert E2BConfig(allow=[rule]).allow == [rule]


@pytest.mark.parametrize("rule", ["api.example.com", "*.example.com", "https://10.0.0.1"])
def test_e2b_block_rules_must_be_addresses(rule: str) -> None:
    with pytest.raises(ValidationError, match="E2B block rules must be IP addresses or CIDR"):
        E2BConfig(block=[rule])


def test_e2b_egress_table() -> None:
    assert _egress_update(E2BConfig(allow=["a.example.com"]), None) == {
        "allow_internet_access": True
    }
    assert _egress_update(E2BConfig(), ROUTES) == {"deny_out": []}
    assert _egress_update(E2BConfig(block=["203.0.113.7"]), ROUTES) == {"deny_out": ["203.0.113.7"]}
    # route hosts first, once each, then the allowlist (a route host it repeats is not doubled)
    assert _egress_update(E2BConfig(allow=["10.1.2.3", "api.example.com"]), ROUTES) == {
        "allow_out": ["tunnel.example.com", "10.1.2.3", "api.example.com"],
        "deny_out": ["0.0.0.0/0"],
    }
    assert _egress_update(E2BConfig(block=["*"]), ROUTES) == {
        "allow_out": ["tunnel.example.com", "10.1.2.3"],
        "deny_out": ["0.0.0.0/0"],
    }
    assert _egress_update(E2BConfig(allow=[]), []) == {"allow_internet_access": False}


def test_selecting_e2b_to_run_a_program_names_what_it_needs() -> None:
    adapter: TypeAdapter[RuntimeConfig] = TypeAdapter(RuntimeConfig)
    with pytest.raises(ValidationError, match=r"pip install e2b\) and an E2B_API_KEY"):
        adapter.validate_python({"type": "e2b", "image": "python:3.12"})
    # its own rules are checked first, so a bad rule is named as such
    with pytest.raises(ValidationError, match="E2B block rules"):
        adapter.validate_python({"type": "e2b", "block": ["example.com"]})
    with pytest.raises(ValidationError, match="e2b runtime is not available"):
        BashHarnessConfig(runtime=E2BConfig())  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="subprocess, bwrap or docker instead"):
        make_runtime(E2BConfig())


# network = false: enforced, or refused where it cannot be -------------------------------------


def test_subprocess_refuses_network_false_and_says_what_to_do() -> None:
    assert SubprocessConfig().network is True  # honest: host processes have the host's network
    with pytest.raises(ValidationError, match=r"cannot keep them off the network.*'bwrap'"):
        SubprocessConfig(network=False)
    with pytest.raises(ValidationError, match="cannot keep them off the network"):
        vf.AgentConfig(runtime={"type": "subprocess", "network": False})  # read: refused


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(BwrapConfig(network=False), id="bwrap", marks=needs_bwrap),
        pytest.param(DockerConfig(network=False), id="docker", marks=needs_docker),
    ],
)
async def test_network_false_keeps_programs_off_the_hosts_services(config: Any) -> None:
    """A listener on the host's loopback and the internet's DNS are out of reach."""
    hits = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal hits
        hits += 1
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    probe = (
        "import socket\n"
        f"for host, p in (('127.0.0.1', {port}), ('1.1.1.1', 53)):\n"
        "    try:\n"
        "        socket.create_connection((host, p), timeout=3).close(); print('reached', host)\n"
        "    except OSError as e:\n"
        "        print('blocked', host, type(e).__name__)\n"
    )
    try:
        async with make_runtime(config) as box:
            result = await box.run(["python3", "-c", probe])
    finally:
        server.close()
        await server.wait_closed()
    assert result.ok, result.stderr
    assert "reached" not in result.stdout and result.stdout.count("blocked") == 2
    assert hits == 0


def test_a_seat_asking_for_e2b_is_refused_with_that_reason() -> None:
    # a seat's runtime is a config chosen by type (as 0.4.0's), so the reason comes with it
    with pytest.raises(ValidationError, match="e2b runtime is not available"):
        vf.AgentConfig(runtime={"type": "e2b"})
