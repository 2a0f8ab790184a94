"""Nothing a package ships runs on `vf env pull`, `inspect`, `fork` or `install` (issue 36
point 6, issue 39 point 6), and a fork installs beside its original: `vf env fork` renames the
distribution, the entry point and the module, builds nothing, and the user's own `vf env push`
publishes it (issue 36 point 6)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .clitools import ROOT, fresh_venv, vf, vf_in
from .conftest import Hub
from .wheelfactory import make_sdist, make_wheel

pytestmark = pytest.mark.parametrize("hub", ["sqlite-local"], indirect=True)

HOOK = """
import os
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

Path({marker!r}).write_text("hatch hook ran; token=" + os.environ.get("VF_HUB_TOKEN", ""))


class StealHook(BuildHookInterface):
    PLUGIN_NAME = "custom"
"""

SETUP = """
import os
from pathlib import Path

Path({marker!r}).write_text("setup.py ran; token=" + os.environ.get("VF_HUB_TOKEN", ""))
from setuptools import setup

setup()
"""

PYPROJECT = """[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "{name}"
version = "1.0.0"
requires-python = ">=3.11"

[project.entry-points."verifiers.environments"]
"{name}" = "{module}:load_environment"

[tool.hatch.build.targets.wheel]
packages = ["{module}"]

[tool.hatch.build.hooks.custom]
"""


def _malicious(hub: Hub, marker: Path, tmp: Path) -> tuple[str, str, str]:
    """A release whose sdist carries a hatch build hook and a setup.py that each write
    ``marker`` (with the hub token they find) when run, and a plain wheel."""
    owner, token = hub.new_user("mallory")
    name = hub.unique("evil")
    module = name.replace("-", "_")
    top = f"{module}-1.0.0"
    members = {
        f"{top}/pyproject.toml": PYPROJECT.format(name=name, module=module).encode(),
        f"{top}/hatch_build.py": HOOK.format(marker=str(marker)).encode(),
        f"{top}/setup.py": SETUP.format(marker=str(marker)).encode(),
        f"{top}/{module}/__init__.py": b"def load_environment(**kwargs):\n    return None\n",
    }
    sdist = make_sdist(tmp / "sdist", name, "1.0.0", extra_members=members)
    assert hub.upload(make_wheel(tmp / "wheel", name, "1.0.0"), token).status_code == 200
    assert hub.upload(sdist, token).status_code == 200, "the sdist is refused"
    return owner, token, name


def test_pull_inspect_fork_and_install_run_none_of_the_packages_code(
    hub: Hub, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    owner, _, name = _malicious(hub, marker, tmp_path)
    _, victim_token = hub.new_user("victim")
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "VF_HUB_URL": hub.url,
        "VF_HUB_TOKEN": victim_token,
    }
    spec = f"{owner}/{name}"
    code, out, err = vf(["env", "pull", spec, str(tmp_path / "pulled")], env)
    assert code == 0, err
    assert (tmp_path / "pulled" / "hatch_build.py").is_file()  # the sdist, hook and all
    code, out, err = vf(["env", "inspect", spec], env)
    assert code == 0 and "hatch_build.py" in out, err
    code, out, err = vf(["env", "inspect", spec, "setup.py"], env)
    assert code == 0 and "setup.py ran" in out, err
    code, out, err = vf(["env", "fork", spec, "my-copy", "--dir", str(tmp_path / "fork")], env)
    assert code == 0, err
    assert "building it runs the package's own code" in err and "hatch_build.py" in err
    assert (tmp_path / "fork" / "my_copy" / "__init__.py").is_file()
    python = fresh_venv(tmp_path / "venv")
    installed = vf_in(python, ["env", "install", spec, "--no-deps"], env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert not marker.exists(), marker.read_text()
    # what the marker catches: building that source (what fork did before) runs the hook,
    # which reads the hub token of whoever builds it
    build = "from pathlib import Path; from cli.packaging import build_wheel; import sys; "
    build += "build_wheel(Path(sys.argv[1]), Path(sys.argv[2]))"
    subprocess.run(
        [sys.executable, "-c", build, str(tmp_path / "pulled"), str(tmp_path / "built")],
        env={**os.environ, "VF_HUB_TOKEN": victim_token, "PYTHONPATH": str(ROOT)},
        capture_output=True, timeout=300,
    )  # fmt: skip
    assert marker.is_file() and victim_token in marker.read_text()


def test_a_fork_installs_beside_its_original_and_outlives_its_uninstall(
    hub: Hub, tmp_path: Path
) -> None:
    """alice publishes vf-wordle; bob forks it as my-wordle and pushes it; both install into
    one venv; uninstalling the original leaves `vf-eval my-wordle -m oracle` working."""
    alice, alice_token = hub.new_user("alice")
    bob, bob_token = hub.new_user("bob")
    name = hub.unique("vf-wordle")
    fork = hub.unique("my-wordle")
    src = tmp_path / "wordle"
    shutil.copytree(ROOT / "environments" / "wordle", src)
    pp = src / "pyproject.toml"
    pp.write_text(pp.read_text().replace('name = "vf-wordle"', f'name = "{name}"'))
    cfg = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "VF_HUB_URL": hub.url}
    code, _, err = vf(["env", "push", str(src)], {**cfg, "VF_HUB_TOKEN": alice_token})
    assert code == 0, err
    as_bob = {**cfg, "VF_HUB_TOKEN": bob_token}
    code, out, err = vf(["env", "fork", f"{alice}/{name}", fork, "--dir", str(tmp_path / "f")],
                        as_bob)  # fmt: skip
    assert code == 0, err
    module = fork.replace("-", "_")
    assert (tmp_path / "f" / module / "__init__.py").is_file()
    assert not (tmp_path / "f" / "vf_wordle").exists()
    assert f'resources.files("{module}")' in (tmp_path / "f" / module / "__init__.py").read_text()
    code, out, err = vf(["env", "push", str(tmp_path / "f")], as_bob)
    assert code == 0, err
    assert f"the hub records {bob}/{fork} as a fork of {alice}/{name}@0.1.0" in out
    python = fresh_venv(tmp_path / "venv")
    for spec in (f"{alice}/{name}", f"{bob}/{fork}"):
        installed = vf_in(python, ["env", "install", spec, "--no-deps"], as_bob)
        assert installed.returncode == 0, installed.stdout + installed.stderr
    both = subprocess.run(
        [str(python), "-c", "import vf_wordle, " + module + "; print('both')"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert both.stdout.strip() == "both", both.stderr
    removed = vf_in(python, ["env", "uninstall", name], as_bob)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    gone = subprocess.run([str(python), "-c", "import vf_wordle"], capture_output=True, timeout=60)
    assert gone.returncode != 0  # the original is gone ...
    run = vf_in(python, [fork, "-m", "oracle", "-n", "2", "-r", "1", "-o",
                         str(tmp_path / "out")], as_bob, entry="eval_main")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr  # ... and the fork still works
