#!/usr/bin/env bash
# Sourced by ./test.sh, ./benchmark.sh and .ci/run: finds a Python >= 3.12, makes sure uv is
# there, and syncs the project's virtual environment (.venv). Safe to run repeatedly.
set -euo pipefail

BANKBENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BANKBENCH_ROOT
export HARBOR_TELEMETRY=0
export LITELLM_LOCAL_MODEL_COST_MAP=True

_py_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }

find_python() {
  local c
  # PATH first (a pyenv shim may exist but fail, so each candidate is actually run) ...
  for c in python3.12 python3.13 python3; do
    if command -v "$c" >/dev/null 2>&1 && _py_ok "$c"; then command -v "$c"; return 0; fi
  done
  # ... then interpreters that pyenv installed but did not make global.
  if command -v pyenv >/dev/null 2>&1; then
    for c in $(ls -d "$(pyenv root)"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -V); do
      if _py_ok "$c"; then echo "$c"; return 0; fi
    done
  fi
  return 1
}

if ! command -v uv >/dev/null 2>&1; then
  echo "bootstrap: installing uv with pip" >&2
  python3 -m pip install --quiet --user uv >&2 || python3 -m pip install --quiet uv >&2
  export PATH="$HOME/.local/bin:$PATH"
fi

if PY="$(find_python)"; then
  export UV_PYTHON_DOWNLOADS=never
  UV_PY_ARGS=(--python "$PY")
else
  # No local 3.12+: let uv fetch one (works where the internet is reachable).
  echo "bootstrap: no Python >= 3.12 found locally; uv will download one" >&2
  UV_PY_ARGS=(--python 3.12)
fi

(cd "$BANKBENCH_ROOT" && uv sync --quiet --extra dev "${UV_PY_ARGS[@]}") >&2
export PATH="$BANKBENCH_ROOT/.venv/bin:$PATH"
