#!/usr/bin/env bash
# Set-up for a shell: finds a Python >= 3.12, makes sure uv is there, syncs the project's
# virtual environment (.venv) and puts .venv/bin (bankbench, harbor) on PATH. Safe to run
# repeatedly. Sourced by ./test.sh and ./benchmark.sh, and by users:
#
#   source scripts/bootstrap.sh
#
# It leaves the caller's shell options as they were: the work runs in a subshell with
# `set -euo pipefail`, so an interactive shell never inherits errexit (which would close it at
# the next failing command). Only the exports below reach the caller. A failed set-up returns 1.

BANKBENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BANKBENCH_ROOT
export HARBOR_TELEMETRY=0
export LITELLM_LOCAL_MODEL_COST_MAP=True

_bankbench_sync() (
  set -euo pipefail

  py_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }

  find_python() {
    local c
    # PATH first (a pyenv shim may exist but fail, so each candidate is actually run) ...
    for c in python3.12 python3.13 python3; do
      if command -v "$c" >/dev/null 2>&1 && py_ok "$c"; then command -v "$c"; return 0; fi
    done
    # ... then interpreters that pyenv installed but did not make global.
    if command -v pyenv >/dev/null 2>&1; then
      for c in $(ls -d "$(pyenv root)"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -V); do
        if py_ok "$c"; then echo "$c"; return 0; fi
      done
    fi
    return 1
  }

  # pip --user puts uv in ~/.local/bin, which a fresh shell often lacks on PATH: look there
  # before installing it again on every run.
  if ! command -v uv >/dev/null 2>&1 && [ -x "$HOME/.local/bin/uv" ]; then
    export PATH="$HOME/.local/bin:$PATH"
  fi
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

  cd "$BANKBENCH_ROOT" && uv sync --quiet --extra dev "${UV_PY_ARGS[@]}" >&2
  # The project's own packages are an editable install, which uv does not compile: where
  # bytecode is not written at run time every process (the CLI, Harbor loading the agent and
  # the sandbox) compiled the modules it imports from source again (0.1-0.8 CPU-s a process).
  # Compiled here once, into the __pycache__ folders git ignores; unchanged files are only
  # stat'ed (~0.2 s). The task template is left out: its files run inside trials from copies.
  .venv/bin/python -m compileall -q -x '/template/' \
    bankbench contracts agents analysis environments tasks >&2
)

if _bankbench_sync; then
  unset -f _bankbench_sync
  case ":$PATH:" in
    *":$BANKBENCH_ROOT/.venv/bin:"*) ;;
    *) export PATH="$BANKBENCH_ROOT/.venv/bin:$PATH" ;;
  esac
  # The README's `uv run …` needs uv in the caller's shell too: where the set-up found or put
  # it (pip --user's ~/.local/bin, or pip's own scripts folder) goes on PATH as well.
  if ! command -v uv >/dev/null 2>&1; then
    if [ -x "$HOME/.local/bin/uv" ]; then
      export PATH="$HOME/.local/bin:$PATH"
    elif _bankbench_uv="$(python3 -c 'import os, uv; print(os.path.dirname(uv.find_uv_bin()))' \
                          2>/dev/null)" && [ -x "$_bankbench_uv/uv" ]; then
      export PATH="$_bankbench_uv:$PATH"
    fi
    unset _bankbench_uv
  fi
else
  unset -f _bankbench_sync
  echo "bootstrap: set-up failed (see the lines above); bankbench is not on PATH" >&2
  # `return` when sourced; `exit` when run as a script.
  return 1 2>/dev/null || exit 1
fi
