"""``SelectConfig`` / ``TaskMatchConfig`` select the tasks 0.4.0 selects for the same config.

The expectations follow 0.4.0's ``configs/select.py`` and ``Taskset.select``: ``include`` keeps
a task any of its lists names (``idx`` positions and slices, ``ids``, ``keys``, ``names``),
``exclude`` then drops the ones its lists name, ``shuffle`` is ``random.Random(seed).shuffle``
of what is left, then ``skip``, then ``limit``. Where a venv with verifiers 0.4.0 is at
``$VF040_PYTHON`` (default ``/tmp/venv040/bin/python``), the same configs also run there and the
selections must be equal."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import verifiers.v1 as vf
from verifiers.v1.configs.select import SelectCLIConfig, SelectConfig, TaskMatchConfig

N = 12


class Numbered(vf.Taskset[vf.Task, vf.TasksetConfig]):
    def load(self) -> list[vf.Task]:
        return [
            vf.Task(vf.TaskData(id=f"t{i}", name=f"n{i % 3}", prompt=f"p{i}")) for i in range(N)
        ]


def picked(config: dict[str, Any]) -> list[int]:
    tasks = Numbered(vf.TasksetConfig()).select(SelectConfig.model_validate(config))
    return [t.data.idx for t in tasks]  # type: ignore[misc]


def shuffled(items: list[int], seed: int) -> list[int]:
    items = list(items)
    random.Random(seed).shuffle(items)
    return items


CASES: list[tuple[dict[str, Any], list[int]]] = [
    ({}, list(range(N))),
    ({"include": {"idx": ["0:10:3", 11]}}, [0, 3, 6, 9, 11]),
    ({"include": {"idx": "2:5", "ids": ["t8"], "names": ["n0"]}}, [0, 2, 3, 4, 6, 8, 9]),
    ({"exclude": {"idx": ["::2"]}}, [1, 3, 5, 7, 9, 11]),
    ({"include": {"names": ["n1"]}, "exclude": {"ids": ["t4"]}}, [1, 7, 10]),
    ({"include": {"idx": "10:"}}, [10, 11]),
    ({"skip": 3, "limit": 2}, [3, 4]),
    ({"include": {"idx": "0:8"}, "shuffle": True, "seed": 3, "skip": 1, "limit": 4},
     shuffled(list(range(8)), 3)[1:5]),
    ({"shuffle": True}, shuffled(list(range(N)), 0)),
    ({"include": {"ids": ["nope"]}}, []),
]  # fmt: skip


@pytest.mark.parametrize(("config", "expected"), CASES)
def test_select_picks_what_040_picks(config: dict[str, Any], expected: list[int]) -> None:
    assert picked(config) == expected


def test_keys_match_the_key_traces_record() -> None:
    fifth = next(t for t in Numbered(vf.TasksetConfig()) if t.data.idx == 5)
    assert picked({"include": {"keys": [fifth.key]}}) == [5]
    assert picked({"exclude": {"keys": [fifth.key]}}) == [i for i in range(N) if i != 5]


def test_idx_entries_parse_as_040_parses_them() -> None:
    assert TaskMatchConfig(idx="0:10,17").idx == ["0:10", 17]
    assert TaskMatchConfig(idx=[" 3 ", "::2"]).idx == [3, "::2"]
    assert TaskMatchConfig(idx=["4:"]).idx_tail and TaskMatchConfig(idx=["0:4"]).idx_stop == 4
    assert TaskMatchConfig(idx=["0:4"], names=["x"]).idx_stop is None
    for bad in (-1, "5:5", "::0", "a", "1:2:3:4"):
        with pytest.raises(ValidationError):
            TaskMatchConfig(idx=[bad])
    with pytest.raises(ValidationError):
        SelectConfig(limit=0)
    with pytest.raises(ValidationError):
        SelectConfig(skip=-1)
    assert SelectCLIConfig.model_validate({"n": 3, "s": True}).limit == 3


UPSTREAM = os.environ.get("VF040_PYTHON", "/tmp/venv040/bin/python")

_UPSTREAM_SCRIPT = """
import json, sys
import verifiers.v1 as vf
from verifiers.v1.configs.select import SelectConfig

class Numbered(vf.Taskset):
    def load(self):
        return [vf.Task(vf.TaskData(id=f"t{i}", name=f"n{i % 3}", prompt=f"p{i}"))
                for i in range(12)]

out = []
for config in json.loads(sys.stdin.read()):
    tasks = Numbered(vf.TasksetConfig()).select(SelectConfig.model_validate(config))
    out.append([t.data.idx for t in tasks])
print(json.dumps(out))
"""


def _upstream_ready() -> bool:
    if not Path(UPSTREAM).exists():
        return False
    probe = subprocess.run(
        [UPSTREAM, "-c", "import importlib.metadata as m, verifiers.v1; print(m.version('verifiers'))"],
        capture_output=True, text=True, timeout=120, check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip
    return probe.returncode == 0 and probe.stdout.strip() == "0.4.0"


def test_select_equals_a_live_040() -> None:
    if not _upstream_ready():
        pytest.skip(f"no importable verifiers 0.4.0 at {UPSTREAM} (set VF040_PYTHON to one)")
    configs = [config for config, _ in CASES]
    done = subprocess.run(
        [UPSTREAM, "-c", _UPSTREAM_SCRIPT],
        input=json.dumps(configs),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [picked(config) for config in configs]
