#!/usr/bin/env bash
# The main job, end to end on a fresh machine (needs python3.11 with venv and pip):
#   1. start a hub on embedded defaults (SQLite + a local blob directory),
#   2. create a user and push every environment package under environments/,
#   3. install one by owner/name into a FRESH virtual environment,
#   4. load it and evaluate it: `vf-eval NAME -m oracle -n 5`, or against your endpoint when
#      VF_BASE_URL and VF_MODEL are set (VF_API_KEY_VAR names the variable holding the key).
#
# Knobs: PYTHON (default python3, >= 3.11), VF_DEMO_DIR (default: a new temp dir, removed at the
#        end; a directory you name is kept, with the hub data, the venv and the results),
#        VF_DEMO_ENV (which distribution to install; default vf-math if present, else the first
#        one pushed), VF_DEMO_PORT (default: a free port).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
if [ -n "${VF_DEMO_DIR:-}" ]; then
  DEMO_DIR="$VF_DEMO_DIR"
  KEEP_DEMO_DIR=1
else
  DEMO_DIR="$(mktemp -d -t vf-demo-XXXXXX)"
  KEEP_DEMO_DIR=0
fi
mkdir -p "$DEMO_DIR"
EVAL_VENV="$DEMO_DIR/eval-venv"
LOG="$DEMO_DIR/hub.log"

say() { printf '\n==> [%ss] %s\n' "$SECONDS" "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null || die "$PYTHON not found; set PYTHON=/path/to/python3.11"

# The demo never touches your own vf config or hub login.
export XDG_CONFIG_HOME="$DEMO_DIR/config"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# Only what the demo runs: the SDK, the CLI and the hub (`.[server,cli]`), no torch, no browser,
# no test tools (scripts/test.sh installs those). uv does the installs: its downloads run in
# parallel and the second venv links from its cache instead of downloading again.
HUB_VENV="$REPO/.venv"
VF="$HUB_VENV/bin/vf"
UV_PIN="$(sed -n 's/^uv==//p' "$REPO/scripts/constraints.txt")"
uv_install() {  # uv_install PYTHON ARGS...: uv's own progress lines show what it is doing
  local python=$1
  shift
  "$HUB_VENV/bin/uv" pip install --python "$python" -c "$REPO/scripts/constraints.txt" "$@"
}
if [ -f "$HUB_VENV/.vf-bootstrap" ]; then
  say "[1/6] hub and CLI: the project's .venv (already set up by scripts/bootstrap.sh)"
else
  say "[1/6] hub and CLI: $HUB_VENV with the SDK, the CLI and the hub only"
  [ -x "$HUB_VENV/bin/python" ] || "$PYTHON" -m venv "$HUB_VENV" \
    || die "could not create a venv: install python3-venv (apt-get install python3-venv)"
  if [ ! -x "$HUB_VENV/bin/uv" ]; then
    echo "installing uv ${UV_PIN:-} (the installer the demo uses)"
    "$HUB_VENV/bin/python" -m pip install --progress-bar on "uv${UV_PIN:+==$UV_PIN}" 2>&1 \
      | { grep -v -e "^WARNING: Location" -e "^Requirement already" || true; }
  fi
  uv_install "$HUB_VENV/bin/python" -e "$REPO[server,cli]"
fi

PORT="${VF_DEMO_PORT:-$("$HUB_VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
URL="http://127.0.0.1:$PORT"
say "[2/6] starting the hub on $URL (data: $DEMO_DIR/hub-data, log: $LOG)"
rm -rf "$DEMO_DIR/hub-data"  # a new, empty hub every run
"$VF" hub serve --port "$PORT" --data-dir "$DEMO_DIR/hub-data" --log-level warning >"$LOG" 2>&1 &
HUB_PID=$!
cleanup() {
  kill "$HUB_PID" 2>/dev/null || true
  wait "$HUB_PID" 2>/dev/null || true
  if [ "$KEEP_DEMO_DIR" = 0 ]; then rm -rf "$DEMO_DIR"; fi
}
trap cleanup EXIT
"$HUB_VENV/bin/python" - "$URL" "$HUB_PID" <<'PY' || { cat "$LOG" >&2; die "the hub did not start"; }
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
PY

say "[3/6] creating user 'demo'"
TOKEN="$("$VF" hub user create demo --data-dir "$DEMO_DIR/hub-data" | tail -n 1)"
export VF_HUB_URL="$URL" VF_HUB_TOKEN="$TOKEN"
"$VF" whoami

say "[4/6] pushing every package under environments/"
PUSHED=()
for pkg in "$REPO"/environments/*/; do
  [ -f "$pkg/pyproject.toml" ] || continue
  if out="$("$VF" env push "$pkg" 2>&1)"; then
    echo "$out" | head -n 1
    PUSHED+=("$(echo "$out" | sed -n 's/^.*install with: vf env install \(.*\)@.*$/\1/p')")
  else
    echo "skipped $(basename "$pkg"): $out" >&2
  fi
done
[ "${#PUSHED[@]}" -gt 0 ] || die "no environment package could be pushed"
"$VF" env list

CHOICE=""
for spec in "${PUSHED[@]}"; do
  case "$spec" in
    */"${VF_DEMO_ENV:-vf-math}") CHOICE="$spec" ;;
  esac
done
CHOICE="${CHOICE:-${PUSHED[0]}}"

say "[5/6] a fresh venv for the evaluation: $EVAL_VENV (the SDK and the CLI from this checkout)"
rm -rf "$EVAL_VENV"
"$PYTHON" -m venv "$EVAL_VENV"
uv_install "$EVAL_VENV/bin/python" -e "$REPO[cli]"

say "[6/6] installing $CHOICE from the hub into the fresh venv, then evaluating it"
"$EVAL_VENV/bin/vf" env install "$CHOICE"
ENV_ID="$("$EVAL_VENV/bin/vf" env info "$CHOICE" --json | "$EVAL_VENV/bin/python" -c '
import json, sys
p = json.load(sys.stdin)
rel = next(r for r in p["releases"] if r["version"] == p["latest_version"])
print(next(iter(rel["entry_points"]), p["name"]))')"
"$EVAL_VENV/bin/python" -c "import verifiers as vf; env = vf.load_environment('$ENV_ID'); print('loaded', '$ENV_ID', 'as', type(env).__name__)"

if [ -n "${VF_BASE_URL:-}" ] && [ -n "${VF_MODEL:-}" ]; then
  say "evaluating $ENV_ID with $VF_MODEL at $VF_BASE_URL"
  "$EVAL_VENV/bin/vf-eval" "$ENV_ID" -m "$VF_MODEL" -b "$VF_BASE_URL" -n 5 -r 1 -o "$DEMO_DIR/results"
else
  say "evaluating $ENV_ID with the built-in oracle model"
  "$EVAL_VENV/bin/vf-eval" "$ENV_ID" -m oracle -n 5 -r 1 -o "$DEMO_DIR/results"
fi

if [ "$KEEP_DEMO_DIR" = 1 ]; then
  say "done: results in $DEMO_DIR/results; the hub stops now (its data stays in $DEMO_DIR/hub-data)"
else
  say "done; the hub stops now and $DEMO_DIR is removed (set VF_DEMO_DIR=DIR to keep the hub data, venv and results)"
fi
