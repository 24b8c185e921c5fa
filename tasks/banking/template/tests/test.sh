#!/usr/bin/env bash
# Harbor's verification step: score the trial's bank calls into /logs/verifier/reward.json.
# Whatever happens (no python3, a crash), a reward.json exists afterwards: zeros at worst,
# with the reason in tsq.json. VERIFIER_OUT_DIR, BANK_INTENTS and BANK_CONVERSATION override
# the paths (tests).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out_dir="${VERIFIER_OUT_DIR:-/logs/verifier}"
intents="${BANK_INTENTS:-/logs/agent/intents.jsonl}"
conversation="${BANK_CONVERSATION:-${intents%/*}/conversation.jsonl}"
mkdir -p "$out_dir"

python3 "$here/verify.py" --expected "$here/expected.json" --intents "$intents" \
    --conversation "$conversation" --out-dir "$out_dir"
status=$?

if [ "$status" -ne 0 ] || [ ! -s "$out_dir/reward.json" ]; then
    echo "verify.py failed (exit $status); writing a zero reward" >&2
    printf '{"tsq": 0.0, "precision": 0.0, "recall": 0.0, "param_validity": 0.0, "multiset_f1": 0.0, "goal_coverage": 0.0, "solved": 0.0, "goals_served": 0.0, "goals_declined": 0.0, "goal_score": 0.0, "n_goals_servable": 0.0, "n_goals_no_tool": 0.0, "turns": 0.0}\n' \
        > "$out_dir/reward.json"
    printf '{"reward": null, "reason": "verify.py failed with exit code %s before writing a reward"}\n' \
        "$status" > "$out_dir/tsq.json"
fi
exit 0
