#!/usr/bin/env bash
# Installs what the tests need (project venv; the Dynamo venv is made by the tests that use it)
# and runs the whole test suite. Extra arguments go to pytest: ./test.sh -k tsq -x
set -euo pipefail
source "$(dirname "$0")/scripts/bootstrap.sh"
cd "$BANKBENCH_ROOT"
exec python -m pytest "$@"
