from __future__ import annotations

import subprocess
import sys


def test_verifiers_train_imports_no_torch_until_used() -> None:
    code = (
        "import sys, verifiers, verifiers.train as t\n"
        "from verifiers.train import RolloutSource, Sample, build_samples, pack_samples\n"
        "assert set(t.__all__) == set(t._EXPORTS)\n"
        "heavy = [m for m in ('torch', 'transformers', 'trl') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "t.masked_importance_sampling_loss\n"
        "assert 'torch' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
