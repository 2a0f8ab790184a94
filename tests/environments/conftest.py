"""The environment packages under ``environments/`` importable from the checkout.

``vf.load_environment(name)`` finds them by entry point when they are installed
(``pip install -e environments/<name>``) and by module name (``vf_<name>``) otherwise, so the
tests run in both set-ups.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV_ROOT = ROOT / "environments"


def _discover() -> dict[str, tuple[str, Path]]:
    """Entry-point name -> (module name, package directory) for every environments/*/ with a
    pyproject.toml, read from its ``verifiers.environments`` entry point."""
    found: dict[str, tuple[str, Path]] = {}
    for pyproject in sorted(ENV_ROOT.glob("*/pyproject.toml")):
        data = tomllib.loads(pyproject.read_text())
        entry_points = data["project"]["entry-points"]["verifiers.environments"]
        assert len(entry_points) == 1, f"{pyproject}: one verifiers.environments entry point"
        ((name, target),) = entry_points.items()
        found[name] = (target.split(":")[0], pyproject.parent)
    return found


_FOUND = _discover()
# entry-point name -> module name, for every bundled environment
ENVIRONMENTS = {name: module for name, (module, _) in _FOUND.items()}
# entry-point name -> package directory
ENV_DIRS = {name: path for name, (_, path) in _FOUND.items()}

for _dir in ENV_DIRS.values():
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))
