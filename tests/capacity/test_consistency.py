"""Decision consistency on hand-made sweeps with known answers: the same calls agree fully,
another tool halves F1, changed arguments lower argument agreement, malformed and truncated
replies and lost trials are counted at the level where they happen."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.consistency import arg_agreement, consistency, tool_f1
from analysis.synthetic import record, write_job, write_sweep_manifest, write_trial
from contracts.sweep import level_dir

REWARDS = {"tsq": 1.0, "precision": 1.0, "recall": 1.0, "param_validity": 1.0,
           "multiset_f1": 1.0, "goal_coverage": 1.0}
BAL = ("get_account_balance", {"account_number": "1", "account_type": "checking"})
XFER = ("transfer_funds", {"from_account": "1", "to_account": "2", "amount": 5})


def _trial(job: Path, name: str, calls: list[tuple[str, dict]], *, valid: bool = True,
           replies: list[str] = (), finish: list[str] = ("stop",),
           exception_type: str | None = None) -> None:
    scenario = name.split("__")[0]
    records = [record(trial_name=name, scenario_id=scenario, finish_reason=f, step=i)
               for i, f in enumerate(finish)]
    trial = write_trial(job, name, scenario_id=scenario, records=records,
                        rewards=None if exception_type else REWARDS,
                        agent_status={"status": "ok", "reason": None},
                        exception_type=exception_type)
    lines = [json.dumps({"seq": i, "attempt": 1, "tool": t, "arguments": a, "valid": valid})
             for i, (t, a) in enumerate(calls)]
    (trial / "verifier" / "intents.jsonl").write_text("".join(ln + "\n" for ln in lines))
    steps = [{"step_id": i, "source": "agent", "message": m, "extra": {"attempt": 1}}
             for i, m in enumerate(replies)]
    (trial / "agent" / "trajectory.json").write_text(json.dumps({"steps": steps}))


def _sweep(root: Path, levels: dict[int, dict[str, dict]]) -> Path:
    write_sweep_manifest(root, list(levels))
    for level, trials in levels.items():
        job = write_job(level_dir(root, level), level, n_total_trials=len(trials))
        for name, kwargs in trials.items():
            _trial(job, name, **kwargs)
    return root


def test_pair_metrics_known_answers():
    assert tool_f1([BAL, XFER], [BAL, XFER]) == 1.0
    assert tool_f1([BAL], [BAL, XFER]) == pytest.approx(2 / 3)
    assert tool_f1([], []) == 1.0 and tool_f1([], [BAL]) == 0.0
    changed = ("transfer_funds", {"from_account": "1", "to_account": "2", "amount": 50})
    assert arg_agreement([XFER], [changed]) == pytest.approx(2 / 3)
    assert arg_agreement([BAL, XFER], [BAL, XFER]) == 1.0
    assert np.isnan(arg_agreement([BAL], [XFER]))
    # arguments recorded as a JSON string compare as the object they encode
    assert arg_agreement([("t", json.dumps({"a": 1}))], [("t", {"a": 1})]) == 1.0


def test_level_table_counts_what_changed_under_load(tmp_path):
    same = {"calls": [BAL, XFER], "replies": ["", ""]}
    sweep = _sweep(tmp_path / "s", {
        1: {"banking-000__a": same, "banking-001__a": same, "banking-002__a": same,
            "banking-003__a": same},
        8: {"banking-000__b": same,
            # another tool instead of the transfer: F1 1/2, the shared tool's args agree
            "banking-001__b": {"calls": [BAL, ("freeze_card", {"card": "1"})],
                               "replies": ["", '<tool_call>{"name": "x"']},
            # truncated reply, schema-invalid calls
            "banking-002__b": {"calls": [BAL, XFER], "valid": False,
                               "finish": ["stop", "length"]},
            # lost to a timeout: counts 0 in agreement
            "banking-003__b": {"calls": [], "exception_type": "AgentTimeoutError"}},
    })
    table, _ = consistency(sweep)
    c1 = table[table["level"] == 1].iloc[0]
    c8 = table[table["level"] == 8].iloc[0]
    assert c1["tool_f1"] == 1.0 and c1["lost"] == 0.0 and c1["reference"] == "c1"
    assert c8["n_pairs"] == 4
    assert c8["tool_f1"] == pytest.approx((1 + 0.5 + 1 + 0) / 4)
    assert c8["arg_agreement"] == pytest.approx((1 + 1 + 1 + 0) / 4)
    assert c8["lost"] == pytest.approx(1 / 4)
    assert c8["malformed"] == pytest.approx((0 + 0.5) / 2)  # trials with a trajectory
    assert c8["truncated"] == pytest.approx((0 + 0 + 0.5 + 0) / 4)
    assert c8["schema_valid"] == pytest.approx((1 + 1 + 0) / 3)
    assert c8["tool_f1_ci_low"] <= c8["tool_f1"] <= c8["tool_f1_ci_high"]
    assert c8["tool_f1_ci_low"] < c1["tool_f1_ci_low"]


def test_reference_from_another_sweep(tmp_path):
    ref = _sweep(tmp_path / "ref", {2: {"banking-000__r": {"calls": [BAL]}}})
    run = _sweep(tmp_path / "run", {1: {"banking-000__a": {"calls": [BAL, XFER]}},
                                    4: {"banking-000__b": {"calls": [BAL]}}})
    table, _ = consistency(run, reference=ref)
    assert list(table["tool_f1"]) == [pytest.approx(2 / 3), 1.0]
    assert set(table["reference"]) == {"ref/c2"}
