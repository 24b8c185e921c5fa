#!/usr/bin/env bash
# Installs what the tests need (project venv; the Dynamo venv is made by the tests that use it)
# and runs the fast tier of the test suite: every test without the slow/dynamo/harbor markers
# (tests/conftest.py). `--all` runs both tiers, `--slow` only the slow one. Other arguments go
# to pytest: ./test.sh -k tsq -x ; ./test.sh --all tests/serve
#
# Both tiers run in parallel worker processes (pytest-xdist), a test file per worker at a time
# so a module's server or built tasks are made once: the fast tier on 2 (it is CPU-bound, one
# per core), the slow tier (and --all) on 3 (its tests mostly wait on servers and subprocesses:
# Dynamo, harbor, the bank). BANKBENCH_TEST_WORKERS sets how many (0: none, in this process);
# `-n N` passed here wins.
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
parallel=()
if [ "$tier" = fast ]; then default_workers=2; else default_workers=3; fi
workers="${BANKBENCH_TEST_WORKERS:-$default_workers}"
for arg in "${args[@]+"${args[@]}"}"; do
  case "$arg" in -n|-n*|--numprocesses*) workers=0 ;; esac
done
if [ "$workers" != 0 ]; then parallel=(-n "$workers" --dist loadfile); fi
# Byte-compile the venv's packages when it is synced: a run starts hundreds of Python processes
# (the CLI, Harbor, the bank), each importing pandas, pydantic and Harbor; where bytecode is not
# written at run time (PYTHONDONTWRITEBYTECODE) each would compile them again from source.
export UV_COMPILE_BYTECODE="${UV_COMPILE_BYTECODE:-1}"
source "$(dirname "$0")/scripts/bootstrap.sh"
cd "$BANKBENCH_ROOT"
exec python -m pytest --tier "$tier" "${parallel[@]+"${parallel[@]}"}" "${args[@]+"${args[@]}"}"
