#!/usr/bin/env bash
# Installs what the tests need (project venv; the Dynamo venv is made by the tests that use it)
# and runs the fast tier of the test suite: every test without the slow/dynamo/harbor markers
# (tests/conftest.py). `--all` runs both tiers, `--slow` only the slow one. Other arguments go
# to pytest: ./test.sh -k tsq -x ; ./test.sh --all tests/serve
set -euo pipefail
tier=fast
args=()
for arg in "$@"; do
  case "$arg" in
    --all) tier=all ;;
    --slow) tier=slow ;;
    *) args+=("$arg") ;;
  esac
done
# Byte-compile the venv's packages when it is synced: a run starts hundreds of Python processes
# (the CLI, Harbor, the bank), each importing pandas, pydantic and Harbor; where bytecode is not
# written at run time (PYTHONDONTWRITEBYTECODE) each would compile them again from source.
export UV_COMPILE_BYTECODE="${UV_COMPILE_BYTECODE:-1}"
source "$(dirname "$0")/scripts/bootstrap.sh"
cd "$BANKBENCH_ROOT"
exec python -m pytest --tier "$tier" "${args[@]}"
