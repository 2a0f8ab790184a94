#!/usr/bin/env bash
# Set up everything the project needs on a fresh Debian 12 machine with Python >= 3.11:
# system packages (bubblewrap for sandboxes, PostgreSQL binaries for the hub's tests when no
# server runs, Chromium and its driver for the web pages' browser tests), a virtual environment
# in .venv with the project, its extras and the bundled environment packages. Idempotent: a
# second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

want_pkgs=()
command -v bwrap >/dev/null 2>&1 || want_pkgs+=(bubblewrap)
[ -x /usr/bin/python3 ] || want_pkgs+=(python3)          # the interpreter sandboxes run
command -v setpriv >/dev/null 2>&1 || want_pkgs+=(util-linux)
command -v chromium >/dev/null 2>&1 || want_pkgs+=(chromium)        # browser tests (web pages)
command -v chromedriver >/dev/null 2>&1 || want_pkgs+=(chromium-driver)
command -v slirp4netns >/dev/null 2>&1 || want_pkgs+=(slirp4netns)  # networked sandboxes
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then want_pkgs+=(postgresql); fi
if [ ${#want_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing ${want_pkgs[*]} (apt)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want_pkgs[@]}" >/dev/null
  else
    echo "bootstrap: please install ${want_pkgs[*]} (sandbox and PostgreSQL tests need them)" >&2
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.vf-bootstrap
want=$(cat pyproject.toml environments/*/pyproject.toml scripts/constraints.txt 2>/dev/null | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1

# shellcheck source=scripts/pip_quiet.sh
source scripts/pip_quiet.sh
pip_install() { pip_quiet bootstrap .venv/bin/python "$@"; }

echo "bootstrap: setting up .venv (first run: a few minutes; pip is quiet while it works)"
echo "bootstrap: [1/4] upgrading pip"
pip_install --upgrade pip
echo "bootstrap: [2/4] torch (CPU build)"
# torch: exactly this spec takes the CPU build available locally (others pull CUDA wheels)
pip_install "torch==2.13.0"
# the versions the suite last passed with (scripts/freeze_constraints.sh records them)
pins=(-c scripts/constraints.txt)
echo "bootstrap: [3/4] the project with its server, cli, train and dev extras"
pip_install "${pins[@]}" -e ".[server,cli,train,dev]"
envs=()
for d in environments/*/; do
  [ -f "$d/pyproject.toml" ] && envs+=(-e "$d")
done
if [ ${#envs[@]} -gt 0 ]; then
  echo "bootstrap: [4/4] the bundled environment packages"
  pip_install "${pins[@]}" "${envs[@]}"
fi
.venv/bin/python -c "import verifiers, hub_server, cli"
echo "$want" > "$stamp"
echo "bootstrap: ready (.venv)"
