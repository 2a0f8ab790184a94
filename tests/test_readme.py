"""What the README tells a newcomer to write or type works as written."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from verifiers.testing import check_environment

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section_code(title: str) -> str:
    match = re.search(rf"## {re.escape(title)}\n\n```python\n(.*?)```", README, re.S)
    assert match, f"the README has no python example under '## {title}'"
    return match.group(1)


def test_the_write_an_environment_example_passes_the_conformance_checks() -> None:
    # packaged as-is, the example must pass `vf env validate` (check_environment): its gold
    # answer scores 1 and a model that says "I don't know." scores nothing
    namespace: dict[str, object] = {}
    exec(compile(_section_code("Write an environment"), "README example", "exec"), namespace)
    env = namespace["load_environment"]()  # type: ignore[operator]
    report = check_environment(env, num_examples=1)
    assert report.ok, [(r.name, r.message) for r in report.failures()]


def _distributions() -> dict[str, Path]:
    found = {}
    for pyproject in ROOT.glob("environments/*/pyproject.toml"):
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        found[name] = pyproject.parent
    return found


INSPECT = re.compile(r"vf env inspect [\w.-]+/([\w.-]+)@[\w.]+ (\S+\.py)")


@pytest.mark.parametrize("dist,path", INSPECT.findall(README) or [("", "")])
def test_files_the_readme_inspects_exist_in_the_package(dist: str, path: str) -> None:
    assert dist, "the README shows no `vf env inspect NAME@VERSION FILE` example any more"
    packages = _distributions()
    assert dist in packages, f"the README inspects {dist}, which is not under environments/"
    assert (packages[dist] / path).is_file(), f"{dist} has no file {path}"
