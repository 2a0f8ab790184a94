"""Public test doubles for environment authors and the project's own tests.

- :class:`ScriptedClient`: an in-process model that replies from a script.
- :class:`OpenAITestServer`: a real OpenAI-compatible HTTP server on port 0 (scripted replies,
  tool calls, latency, injected faults, token ids and logprobs).
- :func:`check_environment`: a conformance check any environment can run.
- :func:`run_sandbox_conformance`: the suite every sandbox backend passes.
- :func:`write_run`: a synthetic run directory (``results.jsonl`` + ``metadata.json``).

Names load lazily: importing this package starts nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ScriptedClient": "verifiers.testing.scripted",
    "OpenAITestServer": "verifiers.testing.server",
    "check_environment": "verifiers.testing.check",
    "check_environment_async": "verifiers.testing.check",
    "CheckReport": "verifiers.testing.check",
    "CheckResult": "verifiers.testing.check",
    "EnvironmentCheckError": "verifiers.testing.check",
    "ServerProcess": "verifiers.testing.server",
    "ScriptedCall": "verifiers.testing.scripted",
    "run_sandbox_conformance": "verifiers.testing.sandbox_conformance",
    "SandboxConformance": "verifiers.testing.sandbox_conformance",
    "ConformanceReport": "verifiers.testing.sandbox_conformance",
    "write_run": "verifiers.testing.runs",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'verifiers.testing' has no attribute {name!r}")
    return getattr(import_module(module), name)
