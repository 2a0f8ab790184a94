"""What `vf env install` suggests running next works for the kind of environment installed:
the oracle for a classic environment, a model for a v1 taskset (which has no oracle: the
suggestion `-m oracle` failed with "the oracle model only works inside an environment
rollout")."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cli.env_cmd import _evaluate_hint
from cli.packaging import init_environment


@pytest.mark.parametrize("v1", [False, True])
def test_the_install_hint_fits_the_scaffolded_kind(tmp_path: Path, v1: bool) -> None:
    dest = init_environment("hint-env", tmp_path, False, v1=v1)
    project = tomllib.loads((dest / "pyproject.toml").read_text())
    entry_points = project["project"]["entry-points"]["verifiers.environments"]
    hint = _evaluate_hint(entry_points, "hint-env")
    assert hint.startswith("vf-eval hint-env ")
    if v1:
        assert "-m oracle" not in hint and "-m MODEL -b URL" in hint
    else:
        assert "-m oracle" in hint


def test_an_editable_install_is_recognised_so_install_can_say_it_replaces_it() -> None:
    # `vf env install alice/vf-math` over `pip install -e environments/math` replaced the
    # editable install without a word; install now names the checkout it replaces
    import importlib.util

    from verifiers.hub.client import editable_source

    spec = importlib.util.find_spec("vf_math")  # bootstrap installs it with `pip install -e`
    assert spec is not None and spec.origin is not None
    package_dir = Path(spec.origin).resolve().parents[1]  # environments/math/vf_math/...
    assert editable_source("vf-math") == str(package_dir)
    assert editable_source("httpx") is None  # a wheel install
    assert editable_source("no-such-distribution") is None
