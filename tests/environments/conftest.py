"""The environment packages under ``environments/`` importable from the checkout.

``vf.load_environment(name)`` finds them by entry point when they are installed
(``pip install -e environments/<name>``) and by module name (``vf_<name>``) otherwise, so the
tests run in both set-ups.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV_ROOT = ROOT / "environments"

# entry-point name -> module name
ENVIRONMENTS = {
    "math": "vf_math",
    "logic": "vf_logic",
    "tool-use": "vf_tool_use",
    "wordle": "vf_wordle",
    "research": "vf_research",
    "code": "vf_code",
    "python-repl": "vf_python_repl",
    "swe-lite": "vf_swe_lite",
}
SANDBOXED = ("code", "python-repl", "swe-lite")

for _name in ENVIRONMENTS:
    _path = str(ENV_ROOT / _name)
    if (ENV_ROOT / _name).is_dir() and _path not in sys.path:
        sys.path.insert(0, _path)
