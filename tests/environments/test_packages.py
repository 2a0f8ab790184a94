"""Every environment is a distribution: it builds a wheel that carries its module, its bundled
data, its entry point, its keywords and its eval defaults."""

from __future__ import annotations

import email.parser
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from .conftest import ENV_ROOT, ENVIRONMENTS

PRESENT = [name for name in ENVIRONMENTS if (ENV_ROOT / name).is_dir()]
# files that must ship inside the wheel (paths inside it)
BUNDLED = {
    "math": ["vf_math/data/sample.jsonl"],
    "wordle": ["vf_wordle/data/words.txt"],
    "tool-use": ["vf_tool_use/data/tables.json"],
    "code": ["vf_code/data/tasks.jsonl"],
    "python-repl": [],
    "swe-lite": [
        "vf_swe_lite/repo/minilib/__init__.py",
        "vf_swe_lite/repo/tests/test_text.py",
        "vf_swe_lite/data/bugs.jsonl",
    ],
    "logic": [],
    "research": [],
}


@pytest.mark.parametrize("name", PRESENT)
def test_pyproject_declares_entry_point_and_eval_defaults(name: str) -> None:
    meta = tomllib.loads((ENV_ROOT / name / "pyproject.toml").read_text())
    module = ENVIRONMENTS[name]
    assert meta["project"]["name"] == f"vf-{name}"
    eps = meta["project"]["entry-points"]["verifiers.environments"]
    assert eps == {name: f"{module}:load_environment"}
    assert any(
        d.split(">")[0].split("=")[0].strip() == "verifiers"
        for d in meta["project"]["dependencies"]
    )
    defaults = meta["tool"]["verifiers"]["eval"]
    assert defaults["num_examples"] > 0 and defaults["rollouts_per_example"] > 0
    assert meta["project"]["keywords"]
    readme = (ENV_ROOT / name / "README.md").read_text()
    for heading in ("## Arguments", "## Data and licence", "## Run"):
        assert heading in readme, f"{name}/README.md lacks {heading!r}"
    assert f"vf-eval {name}" in readme


@pytest.mark.parametrize("name", PRESENT)
def test_wheel_builds_with_data_and_metadata(name: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(tmp_path),
            str(ENV_ROOT / name),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name.startswith(f"vf_{name.replace('-', '_')}-0.1.0-py3-none-any")
    module = ENVIRONMENTS[name]
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert f"{module}/__init__.py" in names
        for path in BUNDLED[name]:
            assert path in names, f"{path} missing from {wheel.name}"
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
        metadata = email.parser.Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
    assert "[verifiers.environments]" in entry_points
    assert f"{name} = {module}:load_environment" in entry_points
    assert metadata["Name"] == f"vf-{name}"
    assert metadata["Keywords"]
    assert any(r.startswith("verifiers") for r in metadata.get_all("Requires-Dist"))
    assert not any("__pycache__" in n for n in names)
