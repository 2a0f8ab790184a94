"""The network policy of a runtime: which destinations its programs may reach while they run.

A rule names a destination as a host pattern (``api.example.com``, ``*.example.com``), optionally
with a port (``example.com:8443``), or as a URL origin (``https://api.example.com``; a URL
without a port means its scheme's default one). A runtime may accept only some of these shapes
(:class:`verifiers.v1.runtimes.E2BConfig` checks its own).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from glob import has_magic
from typing import Self
from urllib.parse import SplitResult, urlsplit

from pydantic import Field, model_validator

from verifiers.v1.configs import Config

__all__ = [
    "NetworkPolicyConfig",
    "intersect_network_hosts",
    "network_rule_matches",
    "parse_network_rule",
    "split_network_rule",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_network_rule(rule: str) -> tuple[SplitResult, str, int | None]:
    """A rule taken apart: ``(the URL split, host, port)``. The split keeps the rule's URL
    syntax (scheme, path) for a runtime to check what it accepts; the host is lower-cased
    without a trailing dot; the port is the rule's own, else its scheme's default (443 for
    ``https``, 80 for any other scheme), else None (a bare host pattern). Raises ValueError
    for a malformed port."""
    parts = urlsplit(rule if "://" in rule else f"//{rule}")
    port = parts.port
    if port is None and parts.scheme:
        port = 443 if parts.scheme == "https" else 80
    return parts, (parts.hostname or "").lower().rstrip("."), port


def split_network_rule(rule: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of a rule as :func:`parse_network_rule` reads it (the scheme
    ``""`` for a bare host pattern)."""
    parts, host, port = parse_network_rule(rule)
    return parts.scheme, host, port


def intersect_network_hosts(left: str, right: str) -> str:
    """The host pattern two rules' hosts both cover: the narrower of the two when one covers
    the other (``*`` covers everything; a ``*.domain`` pattern covers the concrete and
    wildcard hosts under it), ``""`` when they cover nothing in common. Two glob patterns
    whose overlap cannot be told from their text raise ValueError."""
    for wide, narrow in ((left, right), (right, left)):
        if wide in ("*", narrow):
            return narrow
        # Text matching proves one glob covers another only for a plain domain suffix.
        suffix_pattern = wide.startswith("*.") and not has_magic(wide[2:])
        if has_magic(narrow) and not suffix_pattern:
            continue
        if fnmatchcase(narrow, wide):
            return narrow
    both_globs = has_magic(left) and has_magic(right)
    if both_globs and (has_magic(left.removeprefix("*.")) or has_magic(right.removeprefix("*."))):
        raise ValueError(f"cannot intersect network hosts {left!r} and {right!r}")
    return ""


def network_rule_matches(
    rule: str, scheme: str, host: str, port: int, *, subdomains: bool = False
) -> bool:
    """Whether ``rule`` covers the destination ``scheme://host:port`` (paths play no part).
    With ``subdomains``, a rule naming a domain also covers the hosts under it."""
    try:
        rule_scheme, pattern, rule_port = split_network_rule(rule)
    except ValueError:
        return False
    if not pattern or (rule_scheme and rule_scheme != scheme):
        return False
    if rule_port is not None and rule_port != port:
        return False
    host = host.lower().rstrip(".")
    return fnmatchcase(host, pattern) or (subdomains and host.endswith(f".{pattern}"))


class NetworkPolicyConfig(Config):
    """Egress of a runtime's programs while they run (setup before them is not restricted).

    ``allow = ["*"]`` with no ``block`` (the default) is unrestricted. An allowlist (concrete
    ``allow`` rules, nothing blocked) or a blocklist (``allow = ["*"]`` and ``block`` rules)
    restricts it; both at once are rejected. ``allow = []`` or a ``"*"`` among ``block`` leaves
    only the framework's own routes (the model endpoint, tool servers) reachable: the policy is
    then normalized to ``allow = []``, ``block = ["*"]``."""

    allow: list[str] = Field(default_factory=lambda: ["*"])
    """Destinations programs may reach; ``["*"]``: any, ``[]``: only the framework's routes."""
    block: list[str] = Field(default_factory=list)
    """Destinations programs may not reach (a domain covers its subdomains); ``"*"`` among
    them: only the framework's routes."""

    @model_validator(mode="after")
    def _one_policy(self) -> Self:
        if not self.allow or "*" in self.block:
            self.allow, self.block = [], ["*"]
        elif self.allow != ["*"] and self.block:
            raise ValueError(
                f"network policy: allow {self.allow} and block {self.block} both name "
                "destinations; give an allowlist (and no block) or a blocklist "
                '(with allow = ["*"])'
            )
        return self

    @property
    def network_restricted(self) -> bool:
        """Whether the policy restricts anything (else programs reach any destination)."""
        return "*" not in self.allow or bool(self.block)

    def permits(self, scheme: str, host: str, port: int) -> bool:
        """Whether a program may reach ``scheme://host:port`` under this policy (the
        framework's own routes aside)."""
        if any(network_rule_matches(r, scheme, host, port, subdomains=True) for r in self.block):
            return False
        return any(network_rule_matches(r, scheme, host, port) for r in self.allow)
