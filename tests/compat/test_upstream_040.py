"""Upstream verifiers 0.4.0's own ``tests/v1`` files (the v1 API), run against this package.

The 0.4.0 sdist is downloaded at test time with pip (its sha256 pinned) and cached outside the
repository (``$VERIFIERS_TEST_CACHE`` or ``~/.cache/verifiers-tests``); only its ``tests/``
folder and ``pyproject.toml`` (its pytest settings: the fixture directory on the path, asyncio
auto mode) are unpacked. One pytest subprocess runs the files of :data:`UPSTREAM_FILES` there,
upstream's ``tests/v1/conftest.py`` unmodified, with this repository first on ``PYTHONPATH``.
Without ``PRIME_API_KEY`` its live-model (``e2e``) tests skip, as they do upstream; the cases
upstream marks ``prime``, ``modal``, ``e2b``, ``docker``, ``podman`` or ``apptainer`` (pytest
markers, selected out with ``-m`` as upstream's CI does) are deselected.

Every test that passes under 0.4.0 must pass here, except those of :data:`NOT_YET` (work that is
left, each with its reason in the v1 section of ``docs/compat.md``; a test checks that the two
agree, and :func:`test_not_yet_list_only_shrinks` fails as soon as a listed test passes).
:data:`LEFT_OUT` files are not run at all. Per-file pass counts are printed.

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
from pathlib import Path

import pytest

from tests.compat.upstream_sdist import upstream_tests

VERSION = "0.4.0"
SDIST_SHA256 = "66cbb1e2c1ff3fd2da8e4470d4468f2cf8464852cb2f6e9a123c1254d2960aab"
REPO = Path(__file__).resolve().parents[2]
COMPAT_DOC = REPO / "docs" / "compat.md"
DESELECT = "not prime and not modal and not e2b and not docker and not podman and not apptainer"

#: upstream's v1 test files, and how many of each file's tests pass under 0.4.0 with its own
#: conftest and dependencies, offline, with the same ``-m`` deselection (measured with
#: ``scripts/upstream_v1_suite.py --python``): the size of the spec, so that a file whose tests
#: vanish cannot pass unnoticed. ``test_configs.py``: its E2B config cases are plain validation
#: (not marked ``e2b``), and its parse-every-config case has no configs to parse in the sdist.
UPSTREAM_FILES: dict[str, int] = {
    "test_taskset.py": 15,
    "test_scoring.py": 6,
    "test_trace.py": 28,
    "test_graph.py": 13,
    "test_e2e.py": 5,
    "test_judges.py": 30,
    "test_serve_delta.py": 7,
    "test_delivery_behaviors.py": 0,
    "test_envs.py": 0,
    "test_configs.py": 20,
}

#: files not run: they test Prime's hosted platform or import what the sdist does not ship.
LEFT_OUT: dict[str, str] = {
    "test_color_codeword_tasks.py": "imports a module the sdist does not ship",
    "test_platform_run.py": "Prime's hosted evaluation platform (prime_runs), a Prime case",
    "test_tunnel_watchdog.py": "Prime's tunnel (prime_tunnel), a Prime case",
}

#: upstream tests (or whole files, when the file fails to import) that still fail here: work
#: that is left. Each is named, with its reason, in the v1 section of docs/compat.md.
NOT_YET: dict[str, str] = {
    "tests/v1/test_delivery_behaviors.py": "program harnesses and runtimes",
}


# ---------------------------------------------------------------------------- running


def _node_id(case: ET.Element) -> str:
    """``tests/v1/test_x.py::Class::name`` from a JUnit test case."""
    classname = case.get("classname", "")
    if not classname:  # a collection error: name is "tests.v1.test_x"
        return "/".join(case.get("name", "").split(".")[:3]) + ".py"
    parts = classname.split(".")
    return "::".join(["/".join(parts[:3]) + ".py", *parts[3:], case.get("name", "")])


def _base_id(node_id: str) -> str:
    """A node id without its parameters (``test_x[a-b]`` -> ``test_x``)."""
    return re.sub(r"\[.*\]$", "", node_id)


def _tolerated(node_id: str) -> bool:
    return _base_id(node_id) in NOT_YET or node_id.split("::", 1)[0] in NOT_YET


class UpstreamRun:
    def __init__(self, passed: set[str], failed: dict[str, str], skipped: set[str]) -> None:
        self.passed = passed
        self.failed = failed  # node id -> failure message
        self.skipped = skipped

    def file_results(self, name: str) -> tuple[set[str], dict[str, str], set[str]]:
        path = f"tests/v1/{name}"

        def mine(node: str) -> bool:
            return node == path or node.startswith(path + "::")

        return (
            {t for t in self.passed if mine(t)},
            {t: m for t, m in self.failed.items() if mine(t)},
            {t for t in self.skipped if mine(t)},
        )


def run_upstream_suite() -> UpstreamRun:
    root = upstream_tests(VERSION, SDIST_SHA256)
    report = Path(tempfile.mkdtemp(prefix="upstream040-")) / "junit.xml"
    env = {k: v for k, v in os.environ.items() if k != "PRIME_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    cmd = [
        sys.executable, "-m", "pytest", *(f"tests/v1/{f}" for f in UPSTREAM_FILES),
        "-c", str(root / "pyproject.toml"), "--rootdir", str(root), "-o", "addopts=",
        "-p", "no:cacheprovider", "--continue-on-collection-errors", "--timeout=120",
        "-q", "--tb=short", "-m", DESELECT, "-o", "junit_family=xunit1",
        f"--junitxml={report}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=1500)
    if not report.exists():
        pytest.fail(
            f"upstream's v1 suite did not run (exit {proc.returncode}):\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    passed: set[str] = set()
    failed: dict[str, str] = {}
    skipped: set[str] = set()
    for case in ET.parse(report).getroot().iter("testcase"):
        node = _node_id(case)
        bad = [c for c in case if c.tag in ("failure", "error")]
        if bad:
            failed[node] = (bad[0].get("message") or "").strip()[:300]
        elif any(c.tag == "skipped" for c in case):
            skipped.add(node)
        else:
            passed.add(node)
    shutil.rmtree(report.parent, ignore_errors=True)
    return UpstreamRun(passed, failed, skipped)


@pytest.fixture(scope="module")
def upstream_run(pytestconfig: pytest.Config) -> UpstreamRun:
    run = run_upstream_suite()
    lines = [f"upstream {VERSION} tests/v1 here: file, passed (of upstream's), failed, skipped"]
    for name, spec in UPSTREAM_FILES.items():
        passed, failed, skipped = run.file_results(name)
        lines.append(f"  {name:32} {len(passed):>3} ({spec:>3}) {len(failed):>4} {len(skipped):>4}")
    total = sum(len(run.file_results(n)[0]) for n in UPSTREAM_FILES)
    lines.append(f"  {'total':32} {total:>3} ({sum(UPSTREAM_FILES.values()):>3})")
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else _null():
        print("\n" + "\n".join(lines), file=sys.stderr)
    return run


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("name", list(UPSTREAM_FILES))
def test_upstream_file_passes_here(upstream_run: UpstreamRun, name: str) -> None:
    passed, failed, _ = upstream_run.file_results(name)
    unexpected = {t: m for t, m in failed.items() if not _tolerated(t)}
    assert not unexpected, (
        f"{len(unexpected)} of upstream {VERSION}'s tests in {name} fail here:\n"
        + "\n".join(f"  {t}: {m}" for t, m in sorted(unexpected.items()))
    )
    whole_file = f"tests/v1/{name}" in NOT_YET
    expected = 0 if whole_file else UPSTREAM_FILES[name] - sum(1 for t in failed if _tolerated(t))
    assert len(passed) >= expected, (
        f"only {len(passed)} of upstream's tests in {name} passed here, expected {expected}"
    )


def test_not_yet_list_only_shrinks(upstream_run: UpstreamRun) -> None:
    """An entry of :data:`NOT_YET` whose tests all pass now is done: take it off the list
    (and its row in docs/compat.md)."""
    done = []
    for key in NOT_YET:
        if "::" in key:
            ran_ok = any(_base_id(t) == key for t in upstream_run.passed)
            still_failing = any(_base_id(t) == key for t in upstream_run.failed)
        else:
            ran_ok = any(t.startswith(key + "::") for t in upstream_run.passed)
            still_failing = any(t == key or t.startswith(key + "::") for t in upstream_run.failed)
        if ran_ok and not still_failing:
            done.append(key)
    assert not done, f"these upstream tests pass now; remove them from NOT_YET: {done}"


def _compat_v1_section() -> str:
    text = COMPAT_DOC.read_text()
    return text.split("## The v1 API", 1)[1].split("\n## ", 1)[0]


def test_not_yet_matches_the_compat_doc() -> None:
    """Each entry of NOT_YET is named (in backticks) in docs/compat.md's v1 section and the
    section names nothing else; each left-out file is named there too."""
    section = _compat_v1_section()
    named = set(re.findall(r"`(tests/v1/test_\w+\.py(?:::\w+)?)`", section))
    assert named == set(NOT_YET), (
        "docs/compat.md's v1 section and NOT_YET disagree: "
        f"only in the doc {sorted(named - set(NOT_YET))}, "
        f"only here {sorted(set(NOT_YET) - named)}"
    )
    for name in LEFT_OUT:
        assert f"`{name}`" in section, f"docs/compat.md's v1 section does not name {name}"
