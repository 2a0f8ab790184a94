"""Training runs in `vf view`, in a real headless Chromium: a live `vf train` run is watched as
it writes (new steps, sample rollouts and checkpoints appear without a reload), several runs
overlay on one chart, and hostile text in a run's files stays text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.browsing import follow
from verifiers.web.viewer import serve

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def _no_console_errors(driver: Any) -> None:
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


def _wait_for_file(path: Path, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not path.is_file():
        if proc.poll() is not None:
            pytest.fail(f"vf train exited ({proc.returncode}) before writing {path.name}")
        if time.monotonic() > deadline:
            pytest.fail(f"vf train wrote no {path.name} in {timeout:.0f} s")
        time.sleep(0.05)


def _mark_page(driver: Any) -> None:
    driver.execute_script("window.__vfSamePage = true")


def _same_page(driver: Any) -> bool:
    return bool(driver.execute_script("return window.__vfSamePage === true"))


def _text(driver: Any, css: str) -> str:
    """The element's text; the live page replaces elements as the run goes on, so a read that
    meets a replaced one reads the new one (a few tries, no waiting)."""
    for _ in range(4):
        try:
            return str(driver.find_element(By.CSS_SELECTOR, css).text)
        except StaleElementReferenceException:
            continue
    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def test_a_live_vf_train_run_is_watched_without_reload(browser: Any, tmp_path: Path) -> None:
    steps = 30
    out = tmp_path / "runs" / "live"
    cfg = tmp_path / "train.toml"
    cfg.write_text(
        "[env]\nfactory = 'tests.train.toy_env:load_environment'\n"
        "[rollouts]\nrollouts_per_example = 2\ngroups_per_batch = 1\nmax_tokens = 2\n"
        "filter_zero_variance = false\n"
        f"[train]\nsteps = {steps}\ncheckpoint_every = 10\nseq_len = 64\n"
        f"sample_rollouts = 2\noutput_dir = '{out}'\n"
    )
    log = (tmp_path / "train.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "train", str(cfg)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for_file(out / "run.json", proc)  # written just before the first step
        with serve(tmp_path / "runs") as (url, viewer):
            browser.get(url + viewer.launch_path())
            assert "live" in _text(browser, "#train-table")
            follow(browser, browser.find_element(By.LINK_TEXT, "live"))
            _mark_page(browser)
            wait = WebDriverWait(browser, 30)
            wait.until(
                lambda d: d.execute_script(
                    "return document.getElementById('train').dataset.caughtUp"
                )
            )
            first = int(_text(browser, ".steps-done"))
            assert first < steps, "the run finished before the page opened: nothing was live"
            WebDriverWait(browser, 300).until(
                lambda d: (
                    _text(d, ".steps-done") == str(steps) and _text(d, ".run-status") == "completed"
                )
            )
            assert proc.wait(timeout=60) == 0, (tmp_path / "train.log").read_text()
            assert _same_page(browser), "the page reloaded"
            # every curve the issue names is drawn from the run's own metrics
            for chart, series in [
                ("reward", "reward"),
                ("loss", "loss"),
                ("KL-logprob-mismatch", "mismatch_kl"),
                ("entropy", "entropy"),
                ("learning-rate", "lr"),
                ("tokens-per-second", "tokens_per_second"),
                ("off-policy-lag-steps-", "off_policy_lag"),
                ("masked-fraction", "masked_fraction"),
                ("masked-and-skipped-counts", "skipped_batches"),
            ]:
                found = browser.find_elements(
                    By.CSS_SELECTOR, f"#chart-{chart} path.line[data-series='{series}']"
                )
                assert found and found[0].get_attribute("d").count("L") == steps - 1, chart
            assert browser.find_elements(By.CSS_SELECTOR, "#reward-dist path.band.inner")
            # the latest step's sample rollouts (followed as they came) and its checkpoints
            wait.until(lambda d: f"step {steps - 1}:" in _text(d, "#step-caption"))
            samples = browser.find_elements(By.CSS_SELECTOR, ".sample-rollout")
            assert len(samples) == 2 and "Say A" in samples[0].text
            wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.checkpoint")) == 3)
            assert _text(browser, "#checkpoints").split("\n")[1].startswith("step_30")
            assert '"sample_rollouts": 2' in _text(browser, "#config")
            # an earlier step's rollouts on request
            box = browser.find_element(By.ID, "step-input")
            box.clear()
            box.send_keys("3")
            browser.execute_script(
                "document.getElementById('step-input').dispatchEvent(new Event('change'))"
            )
            wait.until(lambda d: "step 3:" in _text(d, "#step-caption"))
            assert _same_page(browser)
            _no_console_errors(browser)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def _row(step: int, reward: float, **extra: Any) -> str:
    return json.dumps({"step": step, "reward": reward, "loss": 0.1 * step, "counts": {}, **extra})


def test_runs_overlay_and_keep_updating(browser: Any, tmp_path: Path) -> None:
    for name, slope in (("a", 0.01), ("b", 0.02)):
        d = tmp_path / name
        d.mkdir()
        (d / "metrics.jsonl").write_text("".join(_row(s, s * slope) + "\n" for s in range(20)))
        (d / "run.json").write_text(json.dumps({"kind": "train", "status": "running", "steps": 40}))
    with serve(tmp_path) as (url, viewer):
        browser.get(url + viewer.launch_path())
        for box in browser.find_elements(By.CSS_SELECTOR, "#train-form input[name=run]"):
            box.click()
        follow(browser, browser.find_element(By.CSS_SELECTOR, "#train-form button"))
        assert "/train?run=" in browser.current_url
        _mark_page(browser)
        wait = WebDriverWait(browser, 30)
        wait.until(
            lambda d: (
                d.execute_script("return document.getElementById('train').dataset.rows") == "40"
            )
        )
        lines = browser.find_elements(By.CSS_SELECTOR, "#chart-reward path.line")
        assert sorted(p.get_attribute("class") for p in lines) == ["line s0", "line s1"]
        # a writer appends to run b as vf train does: the chart extends without a reload
        with (tmp_path / "b" / "metrics.jsonl").open("a") as f:
            f.write("".join(_row(s, s * 0.02) + "\n" for s in range(20, 25)))
        wait.until(
            lambda d: (
                d.execute_script("return document.getElementById('train').dataset.rows") == "45"
            )
        )
        counts = {
            tr.get_attribute("data-name"): tr.find_element(By.CSS_SELECTOR, ".steps-done").text
            for tr in browser.find_elements(By.CSS_SELECTOR, "tr.train-run")
        }
        assert counts == {"a": "20", "b": "25"}
        assert _same_page(browser)
        _no_console_errors(browser)


def test_a_constant_series_is_drawn_on_an_axis_of_its_own_scale(
    browser: Any, tmp_path: Path
) -> None:
    # a constant learning rate of 0.01 used to be drawn on -0.49 ... 0.51: a flat line at 0
    d = tmp_path / "flat"
    d.mkdir()
    rows = "".join(_row(s, 0.5, lr=0.01) + "\n" for s in range(10))
    (d / "metrics.jsonl").write_text(rows)
    (d / "run.json").write_text(json.dumps({"kind": "train", "status": "done", "steps": 10}))
    with serve(d) as (url, viewer):
        browser.get(url + viewer.launch_path())
        wait = WebDriverWait(browser, 30)
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#chart-learning-rate svg text"))
        labels = [
            t.text for t in browser.find_elements(By.CSS_SELECTOR, "#chart-learning-rate svg text")
        ]
        assert labels[:2] == ["0.02", "0"], labels
        _no_console_errors(browser)


def test_hostile_text_in_a_run_stays_text(browser: Any, tmp_path: Path) -> None:
    evil = "<img src=x onerror=window.__pwned=1>"
    d = tmp_path / "evil"
    d.mkdir()
    (d / "metrics.jsonl").write_text(
        _row(0, 0.5, **{evil: 1.0}, counts={evil: 2}) + "\n" + _row(1, 0.7) + "\n"
    )
    (d / "run.json").write_text(
        json.dumps(
            {
                "kind": "train",
                "status": "completed",
                "env": evil,
                "model": evil,
                "config": {"env": {"id": evil}},
            }
        )
    )
    preview = {"group": evil, "example_id": evil, "reward": 1, "used": True, "error": evil,
               "task": evil, "prompt": [{"role": evil, "content": evil}],
               "completion": [{"role": "assistant", "content": evil}]}  # fmt: skip
    (d / "rollouts.jsonl").write_text(
        json.dumps({"step": 1, "rewards": [0.5, 1.0], "rollouts": [preview]}) + "\n"
    )
    with serve(d) as (url, viewer):
        browser.get(url + viewer.launch_path())
        wait = WebDriverWait(browser, 30)
        wait.until(lambda d: "step 1:" in _text(d, "#step-caption"))
        assert evil in _text(browser, ".sample-rollout")
        assert evil in _text(browser, "#chart-masked-and-skipped-counts")
        assert evil in _text(browser, "h1") and evil in _text(browser, "#config")
        assert not browser.find_elements(By.CSS_SELECTOR, "img")
        assert browser.execute_script("return window.__pwned === undefined")
        _no_console_errors(browser)
