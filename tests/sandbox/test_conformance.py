"""Every backend passes the conformance suite (docker and remote in their own modules)."""

from __future__ import annotations

import warnings

from tests.sandbox.conftest import needs_bwrap
from verifiers.sandbox import Sandbox, SandboxLimits, create_sandbox
from verifiers.testing.sandbox_conformance import SandboxConformance


@needs_bwrap
class TestBwrapConformance(SandboxConformance):
    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        return create_sandbox("bwrap", limits=limits)


class TestSubprocessConformance(SandboxConformance):
    def make_sandbox(self, limits: SandboxLimits) -> Sandbox:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return create_sandbox("subprocess", limits=limits)
