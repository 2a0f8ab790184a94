"""The ``e2b`` runtime's configuration: E2B's hosted sandboxes, with the egress policy E2B's
network API can enforce.

This package does not drive E2B sandboxes (that needs the ``e2b`` SDK and an ``E2B_API_KEY``):
an ``e2b`` config validates (so configs written for upstream verifiers parse), and selecting it
to run a program raises :data:`E2B_UNAVAILABLE`. :func:`_egress_update` states the policy such a
sandbox gets once its setup is done.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from verifiers.v1.configs.runtime import NetworkPolicyConfig

__all__ = ["E2B_UNAVAILABLE", "E2BConfig"]

E2B_UNAVAILABLE = (
    "the e2b runtime is not available in this package: running programs in E2B's hosted "
    "sandboxes needs the `e2b` SDK (pip install e2b) and an E2B_API_KEY, and this package does "
    "not drive them; give the runtime `type` subprocess, bwrap or docker instead"
)

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?", re.IGNORECASE)
_DENY_ALL = "0.0.0.0/0"


def _is_address(rule: str) -> bool:
    """An IP address or a CIDR block (host bits may be set)."""
    try:
        ipaddress.ip_network(rule, strict=False)
    except ValueError:
        return False
    return True


def _is_hostname(rule: str) -> bool:
    """A DNS name, optionally under a leading ``*.`` wildcard; no scheme, port or path."""
    name = rule.removeprefix("*.")
    return len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split("."))


class E2BConfig(NetworkPolicyConfig):
    """A program runs in an E2B sandbox built from ``image`` (E2B's API; see
    :data:`E2B_UNAVAILABLE`). E2B enforces egress by destination only: ``allow`` rules are
    hostnames (``*.`` wildcards included), IP addresses or CIDR blocks, ``block`` rules are IP
    addresses or CIDR blocks."""

    type: Literal["e2b"] = "e2b"
    image: str = "python:3.11-slim"
    """A public Debian-based docker image the sandbox template is built from."""
    workdir: str | None = None
    """The programs' working directory; None: the task's, else ``/app``."""
    cpu: float = Field(default=2.0, ge=1)
    """CPU cores (E2B templates take 1 or an even whole number)."""
    memory: float = Field(default=1.0, ge=0.125)
    """Memory in GB (E2B templates take an even whole number of MB)."""
    disk: float = Field(default=5.0, gt=0)
    """Disk in GB; accepted for tasks that state it, E2B templates have no size for it."""
    creates_per_sec: float | None = 1.0
    """Sandboxes created per second at most, across the run; None or <= 0: no pacing."""

    @model_validator(mode="after")
    def _enforceable_egress(self) -> Self:
        if not self.network_restricted:
            return self
        for rule in self.block:
            if rule != "*" and not _is_address(rule):
                raise ValueError(
                    f"E2B block rules must be IP addresses or CIDR blocks, got {rule!r} "
                    "(to keep programs off a host name, give an allowlist instead)"
                )
        for rule in self.allow:
            if rule != "*" and not (_is_address(rule) or _is_hostname(rule)):
                raise ValueError(
                    "E2B allow rules must be hostnames (a leading `*.` allowed), IP addresses "
                    f"or CIDR blocks, without scheme, port, user or path; got {rule!r}"
                )
        return self


def _egress_update(config: E2BConfig, routes: list[str] | None) -> dict[str, Any]:
    """The whole egress policy to give an E2B sandbox (E2B's network update replaces every
    rule at once).

    ``routes`` None: unrestricted again (a trusted setup phase). Otherwise the framework's
    ``routes`` (URLs programs must keep reaching: the model endpoint, tool servers) stay
    reachable: a blocklist denies only its rules (everything else, routes included, stays
    open); an allowlist allows the routes' hosts and its rules over a deny-everything floor
    (E2B lets an allowed destination win over the floor); with nothing to allow, internet
    access is off."""
    if routes is None:
        return {"allow_internet_access": True}
    if config.allow == ["*"]:
        return {"deny_out": list(config.block)}
    hosts = [host for route in routes if (host := urlsplit(route).hostname)]
    allowed = list(dict.fromkeys([*hosts, *config.allow]))
    if not allowed:
        return {"allow_internet_access": False}
    return {"allow_out": allowed, "deny_out": [_DENY_ALL]}
