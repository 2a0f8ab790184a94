"""Shared test setup."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLASSIC_ENVS = ROOT / "tests" / "fixtures" / "classic_envs"

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


@pytest.fixture
def classic_envs_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the classic-API fixture environments on sys.path (and PYTHONPATH for children)."""
    monkeypatch.syspath_prepend(str(CLASSIC_ENVS))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(CLASSIC_ENVS), os.environ.get("PYTHONPATH", "")])
    )
    return CLASSIC_ENVS


@pytest.fixture
def vf_bin() -> Path:
    """The directory holding the vf and vf-eval scripts of this interpreter."""
    return Path(sys.executable).parent


@pytest.fixture(scope="session")
def mini_swe_agent_dir() -> Path:
    """The cached mini-swe-agent environment, built from the package index by the first test
    that needs it (a fresh machine has none; a test must not skip for that)."""
    from verifiers.agents.installs import mini_swe_agent_env

    return mini_swe_agent_env()


# ---------------------------------------------------------------------------- web pages


@pytest.fixture
def browser(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    """Headless Debian Chromium driven by selenium; a screenshot is saved on failure (path
    printed, under the test's tmp_path)."""
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if chromium is None or driver_bin is None:
        pytest.fail("browser tests need chromium and chromium-driver: run scripts/bootstrap.sh")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    opts.add_argument("--window-size=1280,1000")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_bin), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        shot = tmp_path / f"{request.node.name}.png"
        driver.save_screenshot(str(shot))
        print(f"screenshot of the failing page: {shot}")
    driver.quit()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    rep = yield
    if rep.when == "call":
        item.rep_call = rep  # type: ignore[attr-defined]
    return rep


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A test process still alive two minutes after its last test is hung at exit (a thread
    or worker process that does not stop): every thread's stack goes to stderr and the process
    exits with status 1, rather than waiting for CI's time limit with nothing to show."""
    import faulthandler

    faulthandler.dump_traceback_later(120, exit=True)


@pytest.fixture
def busy_cores() -> object:
    """Two busy loops (``yes > /dev/null``) holding the cores, as on a loaded two-core
    machine; stopped after the test."""
    import subprocess

    loops = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    yield loops
    for p in loops:
        p.kill()
        p.wait()
