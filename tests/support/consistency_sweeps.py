"""Hand-made sweeps for the decision-consistency tests: each trial's bank calls, verifier
re-check and start hour chosen by the test (the analysis's own tests and the capacity control's
use the same shapes)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from analysis.synthetic import T0, record, write_job, write_sweep_manifest, write_trial
from contracts.sweep import level_dir

REWARDS = {"tsq": 1.0, "precision": 1.0, "recall": 1.0, "param_validity": 1.0,
           "multiset_f1": 1.0, "goal_coverage": 1.0}
BAL = ("get_account_balance", {"account_number": "1", "account_type": "checking"})
XFER = ("transfer_funds", {"from_account": "1", "to_account": "2", "amount": 5})
FREEZE = ("freeze_card", {"card": "1"})


def calls_trial(job: Path, name: str, calls: list[tuple[str, dict]], *, valid: bool = True,
           replies: list[str] = (), finish: list[str] = ("stop",),
           exception_type: str | None = None, status: str = "ok",
           hour: int | None = None) -> None:
    """`valid`: the verifier's re-check of the arguments; the bank's own flag in its log
    says the opposite, so a reader that trusted it would be caught. A trial runs in the hour
    its repeat letter says (a: 0, b: 1 ...), so repeats never overlap unless `hour` puts
    them together."""
    scenario = name.split("__")[0]
    records = [record(trial_name=name, scenario_id=scenario, finish_reason=f, step=i)
               for i, f in enumerate(finish)]
    intents = [{"seq": i, "attempt": 1, "tool": t, "arguments": a, "valid": not valid,
                "ts": 0.0} for i, (t, a) in enumerate(calls, start=1)]
    verified = None if exception_type else {"scored_attempt": 1, "attempts": [
        {"attempt": 1, "reward": REWARDS,
         "calls": [{**c, "valid": valid, "bank_valid": c["valid"]} for c in intents]}]}
    trial = write_trial(job, name, scenario_id=scenario, records=records,
                        rewards=None if exception_type else REWARDS,
                        agent_status={"status": status, "reason": None},
                        exception_type=exception_type, tsq_details=verified,
                        started_at=T0 + timedelta(
                            hours=ord(name.split("__")[1][0]) - ord("a") if hour is None
                            else hour))
    (trial / "verifier" / "intents.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in intents))
    steps = [{"step_id": i, "source": "agent", "message": m, "extra": {"attempt": 1}}
             for i, m in enumerate(replies)]
    (trial / "agent" / "trajectory.json").write_text(json.dumps({"steps": steps}))


def calls_sweep(root: Path, levels: dict[int, dict[str, dict]]) -> Path:
    write_sweep_manifest(root, list(levels))
    for level, trials in levels.items():
        job = write_job(level_dir(root, level), level, n_total_trials=len(trials))
        for name, kwargs in trials.items():
            calls_trial(job, name, **kwargs)
    return root
