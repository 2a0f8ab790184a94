from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest


def test_verifiers_train_imports_no_torch_until_used() -> None:
    code = (
        "import sys, verifiers, verifiers.train as t\n"
        "from verifiers.train import RolloutSource, Sample, build_samples, pack_samples\n"
        "assert set(t.__all__) == set(t._EXPORTS)\n"
        "heavy = [m for m in ('torch', 'transformers', 'trl') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    if importlib.util.find_spec("torch") is not None:
        code += "t.masked_importance_sampling_loss\nassert 'torch' in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_public_name_is_documented() -> None:
    for needed in ("torch", "transformers", "trl"):  # resolving every name imports them
        pytest.importorskip(needed)
    import inspect

    import verifiers.train as t

    undocumented = []
    for name in t.__all__:
        obj = getattr(t, name)
        if not (obj.__doc__ or "").strip():
            undocumented.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                fn = member.fget if isinstance(member, property) else member
                if attr.startswith("_") or not callable(fn):
                    continue
                if not (fn.__doc__ or "").strip():
                    undocumented.append(f"{name}.{attr}")
    assert not undocumented, undocumented
