"""The docker backend passes the conformance suite where an engine runs (skipped elsewhere)."""

from __future__ import annotations

import pytest

from verifiers.sandbox import Sandbox, SandboxLimits, create_sandbox
from verifiers.sandbox.docker import docker_available
from verifiers.testing.sandbox_conformance import SandboxConformance

pytestmark = pytest.mark.skipif(not docker_available(), reason="no container engine running")


class TestDockerConformance(SandboxConformance):
    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        return create_sandbox("docker", limits=limits)
