"""``isolated-verifier``: grade a solver's work in a fresh runtime (see :mod:`.env`)."""

from verifiers.v1.envs.isolated_verifier.env import (
    IsolatedVerifierEnv,
    IsolatedVerifierEnvConfig,
    VerifierConfig,
)

__all__ = ["IsolatedVerifierEnv", "IsolatedVerifierEnvConfig", "VerifierConfig"]
