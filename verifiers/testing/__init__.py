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

from typing import TYPE_CHECKING

from verifiers._lazy import lazy_exports

_EXPORTS = {
    "ScriptedClient": "verifiers.testing.scripted",
    "ScriptedCall": "verifiers.testing.scripted",
    "OpenAITestServer": "verifiers.testing.server",
    "ServerProcess": "verifiers.testing.server",
    "check_environment": "verifiers.testing.check",
    "check_environment_async": "verifiers.testing.check",
    "CheckReport": "verifiers.testing.check",
    "CheckResult": "verifiers.testing.check",
    "EnvironmentCheckError": "verifiers.testing.check",
    "run_sandbox_conformance": "verifiers.testing.sandbox_conformance",
    "SandboxConformance": "verifiers.testing.sandbox_conformance",
    "ConformanceReport": "verifiers.testing.sandbox_conformance",
    "write_run": "verifiers.testing.runs",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from verifiers.testing.check import CheckReport as CheckReport
    from verifiers.testing.check import CheckResult as CheckResult
    from verifiers.testing.check import EnvironmentCheckError as EnvironmentCheckError
    from verifiers.testing.check import check_environment as check_environment
    from verifiers.testing.check import check_environment_async as check_environment_async
    from verifiers.testing.runs import write_run as write_run
    from verifiers.testing.sandbox_conformance import ConformanceReport as ConformanceReport
    from verifiers.testing.sandbox_conformance import SandboxConformance as SandboxConformance
    from verifiers.testing.sandbox_conformance import (
        run_sandbox_conformance as run_sandbox_conformance,
    )
    from verifiers.testing.scripted import ScriptedCall as ScriptedCall
    from verifiers.testing.scripted import ScriptedClient as ScriptedClient
    from verifiers.testing.server import OpenAITestServer as OpenAITestServer
    from verifiers.testing.server import ServerProcess as ServerProcess
