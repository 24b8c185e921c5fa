#!/usr/bin/env bash
# The concurrency sweep, on the embedded default unless told otherwise: installs what it needs,
# starts the cpu-tiny server (a real SmolLM2-135M behind the real Dynamo frontend, CPU only),
# runs the banking agent at a few concurrency levels and prints where the report is.
#
#   ./benchmark.sh                                   # embedded default, no GPU/Docker/API key
#   ./benchmark.sh --profile cpu-mocker --levels 1,4,16
#   ./benchmark.sh --base-url http://host:8000/v1 --model my-model --levels 1,8,32
#   ./benchmark.sh --mode conversation               # the same, with a simulated customer
#   ./benchmark.sh --resume jobs/sweep-20261122-101500
#
# Any option of `bankbench sweep --help` may be given. Without --profile, --base-url or
# --resume the embedded defaults below come first and the options given replace them.
set -euo pipefail
source "$(dirname "$0")/scripts/bootstrap.sh"
cd "$BANKBENCH_ROOT"

server_given=no
for arg in "$@"; do
  case "$arg" in
    --profile|--profile=*|--base-url|--base-url=*|--resume|--resume=*|-h|--help)
      server_given=yes ;;
  esac
done
if [ "$server_given" = no ]; then
  # SmolLM2-135M seldom calls a tool unless made to: force one on each attempt's first turn,
  # exactly one (parallel_tool_calls=false: the reply ends after the call instead of running
  # to max_tokens and cutting a second one short).
  # Sized for 2 CPU cores: 2 scenarios with two attempts each, so the report can set each
  # level's decisions against their own repeat noise (the decision columns) and level 4 runs
  # all 4 trials at once in the worker's 4 llama.cpp slots (decoded in one batch); short
  # replies; a client timeout that fits the one cold read of the ~4.9k-token tool prompt.
  # The trade: 2 scenarios, not 4, halve the run (every request reads and decodes at the tool
  # prompt's ~5k-token context, ~20 s of engine time per trial on 2 cores), so the decision
  # columns rest on 2 scenarios; give --limit 4 (or more) for a wider sample.
  # prompt_cache: the worker keeps that prompt's KV in the cache folder, so later runs skip the
  # cold read (~25 s on 2 cores) too.
  set -- --profile cpu-tiny --levels 1,2,4 --limit 2 --attempts 2 --source auto \
         --set prompt_cache=true \
         --ak tool_choice=first --ak parallel_tool_calls=false --ak max_tokens=96 \
         --ak max_steps=4 --ak request_timeout_s=600 "$@"
fi
exec bankbench sweep "$@"
