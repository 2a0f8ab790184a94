"""`vf view` over real HTTP: the pages, filters, paging, safety headers, and the command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from verifiers.testing.runs import write_run
from verifiers.web.viewer import Viewer, serve


@contextmanager
def _signed(url: str, viewer: Viewer) -> Iterator[httpx.Client]:
    """A client that traded this launch's secret for the viewer's cookie (on a static file,
    so no run is opened before the test asks for it)."""
    with httpx.Client(base_url=url, timeout=30) as web:
        first = web.get("/static/verifiers-web.css", params={"token": viewer.secret})
        assert first.status_code == 303 and "HttpOnly" in first.headers["set-cookie"]
        assert web.get(first.headers["location"]).status_code == 200
        yield web


def _rows(html: str) -> int:
    return html.count('class="rollout-row"')


def test_pages_filters_and_headers(tmp_path: Path) -> None:
    write_run(tmp_path / "env--model" / "run1", 130, rollouts_per_example=2, error_every=13)
    write_run(tmp_path / "env--model" / "run2", 40, rollouts_per_example=2)
    with serve(tmp_path) as (url, viewer), _signed(url, viewer) as web:
        home = web.get("/")
        assert home.status_code == 200 and "env--model/run1" in home.text
        assert "default-src 'none'" in home.headers["content-security-policy"]
        run = web.get("/run/env--model/run1/")
        assert run.status_code == 200 and _rows(run.text) == 50
        assert "<svg" in run.text and "<script" not in run.text
        assert "page 1 of 3" in run.text and "ModelError" in run.text
        last = web.get("/run/env--model/run1/?page=3")
        assert _rows(last.text) == 30
        errored = web.get("/run/env--model/run1/", params={"errored": "yes"})
        assert _rows(errored.text) == 10
        text = web.get("/run/env--model/run1/", params={"q": "question 101)"})
        assert _rows(text.text) == 1 and 'href="/run/env--model/run1/rollouts/101"' in text.text
        rollout = web.get("/run/env--model/run1/rollouts/101")
        assert rollout.status_code == 200
        assert "What is 101 + 101?" in rollout.text and "The answer is 202." in rollout.text
        assert "tool call" in rollout.text and "call_101" in rollout.text
        broken = web.get("/run/env--model/run1/rollouts/0")
        assert "Traceback: boom" in broken.text
        cmp = web.get("/compare", params={"a": "env--model/run1", "b": "env--model/run2"})
        assert cmp.status_code == 200 and "20 shared examples" in cmp.text
        css = web.get("/static/verifiers-web.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


def test_not_found_and_no_escape_from_the_root(tmp_path: Path) -> None:
    write_run(tmp_path / "runs" / "r", 3)
    write_run(tmp_path / "outside", 3)
    with serve(tmp_path / "runs") as (url, viewer), _signed(url, viewer) as web:
        for path in (
            "/run/..%2Foutside/",
            "/run/r/rollouts/3",
            "/run/r/rollouts/x",
            "/static/..%2F..%2Fviewer.py",
            "/nope",
        ):
            r = web.get(path)
            assert r.status_code == 404, path
            assert "Not found" in r.text


def test_one_run_directory_opens_on_that_run(tmp_path: Path) -> None:
    run = write_run(tmp_path / "solo", 5)
    with serve(run) as (url, viewer), _signed(url, viewer) as web:
        assert viewer.start_path() == "/run/@root/"
        assert _rows(web.get(viewer.start_path()).text) == 5


def test_vf_view_command_serves_and_explains_bad_paths(tmp_path: Path) -> None:
    vf = str(Path(sys.executable).parent / "vf")
    missing = subprocess.run(
        [vf, "view", str(tmp_path / "missing"), "--no-browser"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    run = write_run(tmp_path / "run", 7)
    proc = subprocess.Popen(
        [vf, "view", str(run), "--no-browser", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"at (http://\S+)", line)
        assert m, line
        assert "token=" in m.group(1)
        with httpx.Client(timeout=30, follow_redirects=True) as web:
            page = web.get(m.group(1))
        assert page.status_code == 200 and _rows(page.text) == 7
        assert "token=" not in str(page.url)  # traded for the cookie, out of the address bar
        bare = httpx.get(str(page.url), timeout=30)  # the same page without the secret
        assert bare.status_code == 403
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


def test_first_page_of_an_unindexed_run_comes_from_metadata_then_the_index(
    tmp_path: Path,
) -> None:
    run = write_run(tmp_path / "big", 120, rollouts_per_example=4, error_every=10)
    assert json.loads((run / "metadata.json").read_text())["summary"]["num_rollouts"] == 120
    with serve(tmp_path) as (url, viewer), _signed(url, viewer) as web:
        first = web.get("/run/big/")
        assert first.status_code == 200 and 'id="indexing"' in first.text
        assert 'http-equiv="refresh"' in first.text and _rows(first.text) == 50
        assert 'href="/run/big/rollouts/49"' in first.text and "page 1 of 3" in first.text
        built = viewer._run("big")
        assert built is not None and built._building is not None
        built._building.join(60)  # the background build, then the full page
        full = web.get("/run/big/")
        assert 'id="indexing"' not in full.text and "<svg" in full.text
        assert _rows(full.text) == 50


def test_viewer_needs_no_server_extra(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r", 3)
    code = (
        "import sys\n"
        "for m in ('fastapi', 'starlette', 'sqlalchemy', 'uvicorn', 'hub_server', 'boto3'):\n"
        "    sys.modules[m] = None\n"
        "from pathlib import Path\n"
        "from verifiers.web.viewer import Viewer\n"
        f"r = Viewer(Path({str(run)!r})).handle('/run/@root/')\n"
        "assert r.status == 200 and r.body.count(b'rollout-row') == 3, r.status\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def _card(html: str, name: str) -> str:
    m = re.search(rf'<div class="muted">{name}</div><div class="v">([^<]*)</div>', html)
    assert m, name
    return m.group(1)


def test_rollouts_left_unscored_by_a_raising_reward_function_count_as_errored(
    tmp_path: Path,
) -> None:
    import verifiers as vf

    def judged(completion: vf.Messages, answer: str) -> float:
        raise ValueError("the judge is down")

    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]
    env = vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[judged]))
    vf.evaluate(env, model="oracle", num_examples=3, rollouts_per_example=1,
                output_dir=tmp_path / "runs" / "r")  # fmt: skip
    with serve(tmp_path / "runs") as (url, viewer), _signed(url, viewer) as web:
        quick = web.get("/run/r/")  # from metadata.json while the index builds
        assert _card(quick.text, "errored") == "3", quick.text
        built = viewer._run("r")
        assert built is not None
        if built._building is not None:
            built._building.join(60)
        full = web.get("/run/r/")
        assert 'id="indexing"' not in full.text
        assert _card(full.text, "errored") == "3"
        assert "reward function error" in full.text
        assert "nothing scored yet" not in full.text
        assert "none of the 3 rollouts has a reward (3 errored)" in full.text
        errored = web.get("/run/r/", params={"errored": "yes"})
        assert _rows(errored.text) == 3


def test_compare_orders_examples_numerically_and_warns_across_environments(
    tmp_path: Path,
) -> None:
    # same rewards in both runs: every difference is 0, so only the example order decides
    write_run(tmp_path / "a", 12)
    write_run(tmp_path / "b", 12)
    write_run(tmp_path / "c", 12, meta={"env_id": "other-env"})
    with serve(tmp_path) as (url, viewer), _signed(url, viewer) as web:
        same = web.get("/compare", params={"a": "a", "b": "b"})
        table = same.text.split('id="compare-table"', 1)[1]
        ids = re.findall(r'<td class="mono">([^<]*)</td>', table)
        assert ids == [str(i) for i in range(12)], ids
        assert 'id="compare-envs"' not in same.text
        other = web.get("/compare", params={"a": "a", "b": "c"})
        assert 'id="compare-envs"' in other.text
        assert "A is a run of <code>toy-env</code> and B of <code>other-env</code>" in other.text


def test_start_times_read_as_times_and_timing_waits_for_the_index(tmp_path: Path) -> None:
    write_run(tmp_path / "big", 120, meta={"started_at": "2026-11-24T11:00:00.123456+01:00"})
    with serve(tmp_path) as (url, viewer), _signed(url, viewer) as web:
        home = web.get("/")
        assert "2026-11-24 10:00:00 UTC" in home.text and ".123456</td>" not in home.text
        first = web.get("/run/big/")
        assert 'id="indexing"' in first.text  # served from metadata.json meanwhile
        assert "· started <span" in first.text and "2026-11-24 10:00:00 UTC</span>" in first.text
        assert " / ms" not in first.text and "once indexed" in first.text
        built = viewer._run("big")
        assert built is not None and built._building is not None
        built._building.join(60)
        full = web.get("/run/big/")
        assert "12 / 0 ms" in full.text  # 12.5 and 0.5 ms per rollout, rounded


def test_only_loopback_hosts_with_this_launchs_secret_are_answered(tmp_path: Path) -> None:
    """DNS rebinding (a page whose name now resolves to 127.0.0.1) and other local users
    (who can reach the port but never saw the printed URL) read nothing."""
    write_run(tmp_path / "r", 3)
    with serve(tmp_path) as (url, viewer):
        port = viewer.port
        token = {"token": viewer.secret}
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
            r = httpx.get(url + "/", params=token, headers={"Host": host})
            assert r.status_code == 303, host
        for host in (f"attacker.example:{port}", f"127.0.0.1.nip.io:{port}", "localhost:1", ""):
            r = httpx.get(url + "/", params=token, headers={"Host": host})
            assert r.status_code in (403, 421), host
            assert "run" not in r.text.lower() or "loopback" in r.text, host
        # no secret, a wrong one, or another viewer's cookie: 403 on every route
        for path in ("/", "/run/r/", "/run/r/rollouts/0", "/static/verifiers-web.css"):
            assert httpx.get(url + path).status_code == 403, path
        assert httpx.get(url + "/", params={"token": "guess"}).status_code == 403
        other = {f"vf_view_{port}": "not-the-secret"}
        assert httpx.get(url + "/", cookies=other).status_code == 403
        # the secret is traded for an HttpOnly, same-site cookie and leaves the address bar
        r = httpx.get(url + "/run/r/", params={**token, "page": "1"})
        assert r.status_code == 303 and r.headers["location"] == "/run/r/?page=1"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        held = {f"vf_view_{port}": viewer.secret}
        assert httpx.get(url + "/run/r/", cookies=held).status_code == 200
        assert viewer.launch_path() == "/?token=" + viewer.secret


def test_plain_vf_view_lists_runs_of_both_command_lines(tmp_path: Path) -> None:
    # classic flags write outputs/evals/ENV--MODEL/ID, 0.4's flags outputs/ENV--MODEL--ID:
    # `vf view` with no argument, run where vf-eval ran, lists both
    classic = write_run(tmp_path / "outputs" / "evals" / "wordle--m" / "abc", 3)
    v1 = write_run(tmp_path / "outputs" / "my-task--m--def", 4)
    vf = str(Path(sys.executable).parent / "vf")
    proc = subprocess.Popen(
        [vf, "view", "--no-browser", "--port", "0"], cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"at (http://\S+)", line)
        assert m, line
        with httpx.Client(timeout=30, follow_redirects=True) as web:
            page = web.get(m.group(1)).text
        assert classic.name in page and v1.name in page, page[:2000]
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()
