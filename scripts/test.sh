#!/usr/bin/env bash
# The test command: set up (idempotent) and run the whole suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/sdk_envs -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PYTHONHASHSEED=0
exec .venv/bin/python -m pytest -q "$@"
