# Sourced by the set-up scripts. `pip_quiet NAME PYTHON ARGS...`: `PYTHON -m pip install -q
# ARGS`, without the warnings this machine's pip prints about missing local index folders;
# a failure stops the calling script with pip's own words, prefixed by NAME. Output goes to
# stderr (stdout stays free for what the script prints, such as the vLLM venv's python).
pip_quiet() {
  local name=$1 python=$2 out
  shift 2
  if ! out=$("$python" -m pip install -q "$@" 2>&1); then
    printf '%s\n' "$out" | grep -v "^WARNING: Location" >&2
    echo "$name: pip install $* failed (pip's message above); fix it and run again" >&2
    exit 1
  fi
  printf '%s\n' "$out" | grep -v -e "^WARNING: Location" -e "^$" >&2 || true
}
