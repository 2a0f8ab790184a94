"""Upstream verifiers 0.3.1's own tests of the classic public API, run against this package.

The 0.3.1 sdist is downloaded at test time with pip (its sha256 pinned) and cached outside the
repository (``$VERIFIERS_TEST_CACHE`` or ``~/.cache/verifiers-tests``); only its ``tests/``
folder and ``pyproject.toml`` (its pytest settings) are unpacked. One pytest subprocess runs the
files of :data:`UPSTREAM_FILES` there, upstream's ``conftest.py`` unmodified, with this
repository first on ``PYTHONPATH`` so that ``import verifiers`` is ours.

Every test that passes under 0.3.1 must pass here, except those of
:data:`INTENDED_DIFFERENCES`: each names the row of the "Intentional differences" table of
``docs/compat.md`` that explains it (a test checks that the table and this list agree).
:data:`NOT_IN_SPEC` lists the tests that fail under 0.3.1 itself with this project's dependency
set; they are deselected.

Nothing of upstream's test code is kept in this repository: only the file list, the
exclusions and this runner.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from tests.compat.upstream_sdist import upstream_tests

VERSION = "0.3.1"
SDIST_SHA256 = "bb1f7681f44693e9fdfcc9e7194561e0b5cbc05ee6506a8d82b384a045292ee6"
REPO = Path(__file__).resolve().parents[2]
COMPAT_DOC = REPO / "docs" / "compat.md"

#: upstream's test files of the classic public API, and how many of each file's tests pass
#: under 0.3.1 (with its own dependencies): the size of the spec, so that a file whose tests
#: vanish (a collection error) cannot pass unnoticed.
UPSTREAM_FILES: dict[str, int] = {
    "test_environment.py": 34,
    "test_environment_extra.py": 17,
    "test_multiturn_env.py": 20,
    "test_singleturn_env.py": 16,
    "test_tool_env.py": 22,
    "test_stateful_tool_env.py": 7,
    "test_env_group.py": 16,
    "test_gym_env.py": 10,
    "test_rubric.py": 23,
    "test_rubric_group.py": 18,
    "test_math_rubric.py": 13,
    "test_decorator_ranks.py": 18,
    "test_parser.py": 8,
    "test_xml_parser.py": 18,
    "test_think_parser.py": 15,
    "test_maybe_think_parser.py": 5,
    "test_message_utils.py": 4,
    "test_message_utils_multimodal.py": 9,
    "test_tool_utils.py": 6,
    "test_types.py": 1,
    "test_logging.py": 12,
    "test_client_auth_errors.py": 5,
    "test_client_multimodal_types.py": 4,
    "test_error_chain.py": 12,
    "test_imports.py": 0,
    "test_client_config.py": 3,
    "test_per_turn_timing.py": 2,
    "test_context_token_metrics.py": 15,
    "test_path_utils.py": 6,
    "test_pricing_utils.py": 5,  # + 3 of OUT_OF_SCOPE
    "test_trajectory_processing.py": 7,  # + 3 of OUT_OF_SCOPE
    # the file's other 15 tests are of vf-eval's endpoint registry (see LEFT_OUT_FILES)
    "test_endpoint_registry.py::test_client_config_validates_extra_header_keys": 1,
}

_PRIME = "needs Prime Intellect's hosted services (sandboxes, Prime CLI, pricing API)"
_CLI = "tests 0.3.1's command-line programs and their private helpers, not the library API"
#: every other file of the 0.3.1 sdist's ``tests/`` folder, and why it is not run here
#: (a test checks that the two lists cover the folder).
LEFT_OUT_FILES: dict[str, str] = {
    "v1/": "0.3.1's preview of the v1 API, superseded by 0.4.0's (test_upstream_040.py)",
    "test_browser_env.py": "needs a browser service (Browserbase/Stagehand) and network",
    "test_build_script.py": _CLI + " (vf-build)",
    "test_cli_agent_env.py": _PRIME + "; asserts CliAgentEnv's private attributes",
    "test_composable_env.py": _PRIME + " (composable sandbox tasks)",
    "test_endpoint_registry.py": (
        _CLI + " (vf-eval's endpoints.toml registry, bundled endpoint ids); its "
        "ClientConfig test is run"
    ),
    "test_env_server.py": "asserts the private internals of 0.3.1's ZMQ env server and client",
    "test_eval_display.py": _CLI + " (vf-eval's rich display)",
    "test_eval_utils.py": _CLI + " (vf-eval's results layout and report helpers)",
    "test_gepa_cli.py": _CLI + " (vf-gepa)",
    "test_gepa_utils.py": _CLI + " (vf-gepa's result files)",
    "test_harbor_env_mcp.py": _PRIME + " (Harbor task bundles)",
    "test_init_script.py": _CLI + " (vf-init's templates)",
    "test_install_utils.py": _CLI + " (vf-install, the Environment Hub's installer)",
    "test_interception_utils.py": _PRIME + " (the sandbox agent's interception server)",
    "test_nemorl_client.py": "needs NVIDIA NeMo-RL's server (a vendor client)",
    "test_openai_chat_completions_token_client.py": (
        "needs a vLLM server's token endpoints (prompt ids from /tokenize)"
    ),
    "test_openai_responses_client.py": "needs OpenAI's Responses API (not served here)",
    "test_opencode_rlm_env.py": _PRIME + " (OpenCode in a sandbox)",
    "test_openenv_client.py": "needs an OpenEnv server (openenv-core and a Docker image)",
    "test_prime_plugin.py": _PRIME + " (the prime CLI plugin)",
    "test_renderer_client.py": "needs the renderers package's RendererPool and a tokenizer",
    "test_renderer_e2e.py": "needs the renderers package and a model tokenizer download",
    "test_rlm_composable_env.py": _PRIME + " (RLM harness in a sandbox)",
    "test_sandbox_debug_env.py": _PRIME + " (sandboxes)",
    "test_sandbox_env.py": _PRIME + " (prime-sandboxes)",
    "test_sandbox_mixin.py": _PRIME + " (prime-sandboxes)",
    "test_save_utils.py": _CLI + " (vf-eval's results writer, its private helpers)",
    "test_setup_script.py": _CLI + " (vf-setup)",
    "test_tui_info_formatting.py": _CLI + " (vf-tui)",
}

#: tests of selected files that are not run (deselected), each with why.
OUT_OF_SCOPE: dict[str, str] = {
    **{
        f"tests/test_pricing_utils.py::{name}": _PRIME + "; patches a private cache helper"
        for name in (
            "test_fetch_prime_pricing_parses_json_fixture",
            "test_fetch_prime_pricing_binary_missing_returns_empty",
            "test_fetch_prime_pricing_bad_json_returns_empty",
        )
    },
    **{
        f"tests/test_trajectory_processing.py::{name}": (
            "needs the renderers package (not a dependency here)"
        )
        for name in (
            "test_parse_response_tokens_carries_prompt_attribution",
            "test_parse_response_tokens_truncates_prompt_attribution_with_overlong_prompt",
        )
    },
    "tests/test_trajectory_processing.py::test_assert_serializable_accepts_msgpack_sidecars_rejects_unknown": (
        "asserts a private helper of 0.3.1's trainer transport (assert_serializable)"
    ),
}

#: tests that fail under 0.3.1 itself (not a difference of ours): deselected.
#: (0.3.1's Anthropic client tests also fail under 0.3.1 with anthropic>=0.80, whose types
#: its client combines into a typing.Union that raises; they pass here and run, beyond the
#: counts of :data:`UPSTREAM_FILES`, as tests of vf.AnthropicMessagesClient.)
NOT_IN_SPEC: dict[str, str] = {
    # 0.3.1 imports renderers.RendererPool, which current renderers releases lack
    "tests/test_imports.py::TestImports::test_all_items_are_importable": (
        "fails under 0.3.1 with current renderers"
    ),
    "tests/test_imports.py::TestImports::test_lazy_imports_work": (
        "fails under 0.3.1 with current renderers"
    ),
}

#: upstream tests whose expectation is a behaviour we keep different on purpose, each with the
#: "Area" cell of its row in docs/compat.md's "Intentional differences" table.
_ERRORS = "Rollout errors in the state"
INTENDED_DIFFERENCES: dict[str, str] = {
    "tests/test_singleturn_env.py::TestSingleTurnEnv::test_rollout_error_handling": _ERRORS,
    "tests/test_tool_env.py::TestToolEnv::test_tool_env_tool_call_error": _ERRORS,
    "tests/test_tool_env.py::TestToolEnv::test_tool_env_tool_invalid_json_arguments": _ERRORS,
    "tests/test_stateful_tool_env.py::TestStatefulToolEnv::test_tool_env_tool_call_error": _ERRORS,
    "tests/test_stateful_tool_env.py::TestStatefulToolEnv::test_tool_env_tool_invalid_json_arguments": _ERRORS,
    "tests/test_environment.py::TestEnvironmentBase::test_init_state_rejects_plain_string_task": (
        "Plain-string `task`"
    ),
}


#: upstream tests that still fail here and are NOT intended differences: work that is left
#: (the classic-exact issue stays open while this list is not empty). The runner tolerates
#: them so that every other upstream test guards against regressions, and
#: :func:`test_not_yet_list_only_shrinks` fails as soon as one of them passes, so that it is
#: taken off this list.
NOT_YET: dict[str, str] = {}


# ---------------------------------------------------------------------------- running


def _node_id(case: ET.Element) -> str:
    """``tests/test_x.py::Class::name`` from a JUnit test case."""
    classname = case.get("classname", "")
    if not classname:  # a collection error: name is "tests.test_x"
        return "/".join(case.get("name", "").split(".")[:2]) + ".py"
    parts = classname.split(".")
    # classname is "tests.test_x" or "tests.test_x.Class"
    path = "/".join(parts[:2]) + ".py"
    return "::".join([path, *parts[2:], case.get("name", "")])


def _base_id(node_id: str) -> str:
    """A node id without its parameters (``test_x[a-b]`` -> ``test_x``)."""
    return re.sub(r"\[.*\]$", "", node_id)


class UpstreamRun:
    def __init__(self, passed: set[str], failed: dict[str, str], output: str) -> None:
        self.passed = passed
        self.failed = failed  # node id -> failure message
        self.output = output

    def file_results(self, name: str) -> tuple[set[str], dict[str, str]]:
        prefix = f"tests/{name}"

        def mine(t: str) -> bool:  # a file's tests, or one test (with its parameters)
            return t == prefix or t.startswith((prefix + "::", prefix + "["))

        return (
            {t for t in self.passed if mine(t)},
            {t: m for t, m in self.failed.items() if mine(t)},
        )


def run_upstream_suite(files: list[str] | None = None) -> UpstreamRun:
    """Run upstream's test files (default: all of :data:`UPSTREAM_FILES`) against this package."""
    root = upstream_tests(VERSION, SDIST_SHA256)
    files = files or list(UPSTREAM_FILES)
    report = Path(tempfile.mkdtemp(prefix="upstream031-")) / "junit.xml"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [
        sys.executable, "-m", "pytest", *(f"tests/{f}" for f in files),
        "-c", str(root / "pyproject.toml"), "--rootdir", str(root),
        "-p", "no:cacheprovider", "--continue-on-collection-errors", "--timeout=60",
        "-q", "--tb=short", "-o", "junit_family=xunit1", f"--junitxml={report}",
        *(arg for node in [*NOT_IN_SPEC, *OUT_OF_SCOPE] for arg in ("--deselect", node)),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=1200)
    if not report.exists():
        pytest.fail(
            f"upstream's suite did not run (exit {proc.returncode}):\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    passed: set[str] = set()
    failed: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        node = _node_id(case)
        bad = [c for c in case if c.tag in ("failure", "error")]
        if bad:
            failed[node] = (bad[0].get("message") or "").strip()[:300]
        elif not any(c.tag == "skipped" for c in case):
            passed.add(node)
    shutil.rmtree(report.parent, ignore_errors=True)
    return UpstreamRun(passed, failed, proc.stdout)


@pytest.fixture(scope="module")
def upstream_run() -> UpstreamRun:
    return run_upstream_suite()


@pytest.mark.parametrize("name", list(UPSTREAM_FILES))
def test_upstream_file_passes_here(upstream_run: UpstreamRun, name: str) -> None:
    passed, failed = upstream_run.file_results(name)
    tolerated = INTENDED_DIFFERENCES.keys() | NOT_YET.keys()
    unexpected = {t: m for t, m in failed.items() if _base_id(t) not in tolerated}
    assert not unexpected, (
        f"{len(unexpected)} of upstream 0.3.1's tests in {name} fail here:\n"
        + "\n".join(f"  {t}: {m}" for t, m in sorted(unexpected.items()))
    )
    expected = UPSTREAM_FILES[name] - sum(1 for t in failed if _base_id(t) in tolerated)
    assert len(passed) >= expected, (
        f"only {len(passed)} of upstream's tests in {name} passed here, expected {expected}"
    )


def test_intended_differences_still_differ(upstream_run: UpstreamRun) -> None:
    """An exclusion whose test now passes is stale: drop it (and its row in docs/compat.md)."""
    now_passing = sorted(
        key for key in INTENDED_DIFFERENCES if any(_base_id(t) == key for t in upstream_run.passed)
    )
    assert not now_passing, f"these excluded upstream tests pass now: {now_passing}"


def test_not_yet_list_only_shrinks(upstream_run: UpstreamRun) -> None:
    """A test of :data:`NOT_YET` that passes now is fixed: take it off the list."""
    fixed = sorted(key for key in NOT_YET if any(_base_id(t) == key for t in upstream_run.passed))
    assert not fixed, f"these upstream tests pass now; remove them from NOT_YET: {fixed}"
    ran = {_base_id(t) for t in upstream_run.failed}
    missing = sorted(key for key in NOT_YET if key not in ran)
    assert not missing, f"NOT_YET names tests that did not run (renamed?): {missing}"


def _compat_table_areas() -> list[str]:
    text = COMPAT_DOC.read_text()
    section = text.split("## Intentional differences", 1)[1].split("\n## ", 1)[0]
    areas = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] not in ("Area", "---"):
            areas.append(cells[0])
    return areas


def _compat_table_tests() -> dict[str, set[str]]:
    """Upstream test ids (``tests/test_x.py::...``) each row of the table names."""
    text = COMPAT_DOC.read_text()
    section = text.split("## Intentional differences", 1)[1].split("\n## ", 1)[0]
    named: dict[str, set[str]] = defaultdict(set)
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        area = line.strip().strip("|").split("|")[0].strip()
        for node in re.findall(r"`(tests/test_\w+\.py::[\w:]+)`", line):
            named[area].add(node)
    return named


def test_exclusions_match_the_compat_table() -> None:
    """Each excluded upstream test is named in the row of docs/compat.md it points to, each
    row names its upstream tests, and the list stays short."""
    assert len(INTENDED_DIFFERENCES) <= 10
    areas = _compat_table_areas()
    named = _compat_table_tests()
    for node, area in INTENDED_DIFFERENCES.items():
        assert area in areas, f"{node}: no row {area!r} in docs/compat.md's table"
        assert node in named[area], f"docs/compat.md's row {area!r} does not name {node}"
    for area in areas:
        assert named[area], f"docs/compat.md's row {area!r} names no upstream test"
    listed = {node for nodes in named.values() for node in nodes}
    assert listed == set(INTENDED_DIFFERENCES), (
        "docs/compat.md names upstream tests that are not excluded here, or the reverse: "
        f"{sorted(listed ^ set(INTENDED_DIFFERENCES))}"
    )


def test_every_upstream_test_file_is_selected_or_left_out_with_a_reason() -> None:
    """Each file of the sdist's ``tests/`` folder is run (:data:`UPSTREAM_FILES`) or named in
    :data:`LEFT_OUT_FILES` with why; the lists name no file the sdist lacks."""
    root = upstream_tests(VERSION, SDIST_SHA256) / "tests"
    present = {p.name for p in root.glob("test_*.py")} | {
        p.name + "/" for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    selected = {name.split("::")[0] for name in UPSTREAM_FILES}
    partly = {name.split("::")[0] for name in UPSTREAM_FILES if "::" in name}
    assert not (selected - partly) & LEFT_OUT_FILES.keys(), "a file is both run and left out"
    unaccounted = sorted(present - selected - LEFT_OUT_FILES.keys())
    assert not unaccounted, f"upstream test files neither run nor left out: {unaccounted}"
    stale = sorted((selected | LEFT_OUT_FILES.keys()) - present)
    assert not stale, f"listed files the 0.3.1 sdist does not have: {stale}"
    assert all(reason.strip() for reason in [*LEFT_OUT_FILES.values(), *OUT_OF_SCOPE.values()])
