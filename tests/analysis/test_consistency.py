"""Decision consistency on hand-made sweeps with known answers: repeats give each level its
own floor and the reference its baseline, the divergence is their mean minus the agreement
and the drop baseline minus agreement, repeats that ran side by side are not a floor, lost
trials are left out of agreement and charged to the server or the harness, a model that never
calls a tool has nothing to compare, the default reference is the lowest batched level, and
tool names are compared as the verifier normalises them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from analysis.consistency import arg_agreement, consistency, tool_f1
from tests.support.consistency_sweeps import BAL, FREEZE, XFER, calls_sweep


def test_pair_metrics_known_answers():
    assert tool_f1([BAL, XFER], [BAL, XFER]) == 1.0
    assert tool_f1([BAL], [BAL, XFER]) == pytest.approx(2 / 3)
    assert tool_f1([], [BAL]) == 0.0
    assert math.isnan(tool_f1([], []))  # no decision on either side: nothing to compare
    changed = ("transfer_funds", {"from_account": "1", "to_account": "2", "amount": 50})
    assert arg_agreement([XFER], [changed]) == pytest.approx(2 / 3)
    assert arg_agreement([BAL, XFER], [BAL, XFER]) == 1.0
    assert np.isnan(arg_agreement([BAL], [XFER]))
    # arguments recorded as a JSON string compare as the object they encode
    assert arg_agreement([("t", json.dumps({"a": 1}))], [("t", {"a": 1})]) == 1.0


def _both(calls: list, **kwargs) -> dict:
    return {"calls": calls, **kwargs}


def test_floor_baseline_agreement_and_drop(tmp_path):
    """Two repeats per scenario and level. At c1 three scenarios repeat themselves and one
    (003) flips between two tools: baseline (1+1+1+0.5)/4. At c8 scenario 001 switches to
    another tool in both repeats (its floor stays 1, its agreement with c1 falls), 002 is lost
    once to a time-out (left out, charged to the server) and 003 once to the harness."""
    one, other = [BAL, XFER], [BAL, FREEZE]
    sweep = calls_sweep(tmp_path / "s", {
        1: {"banking-000__a": _both(one), "banking-000__b": _both(one),
            "banking-001__a": _both(one), "banking-001__b": _both(one),
            "banking-002__a": _both(one), "banking-002__b": _both(one),
            "banking-003__a": _both(one), "banking-003__b": _both(other)},
        8: {"banking-000__c": _both(one, replies=["", '<tool_call>{"name": "x"']),
            "banking-000__d": _both(one, finish=["stop", "length"]),
            "banking-001__c": _both(other), "banking-001__d": _both(other, valid=False),
            "banking-002__c": _both(one), "banking-002__d": _both(
                [], exception_type="AgentTimeoutError"),
            "banking-003__c": _both(one), "banking-003__d": _both(
                [], status="harness_error")},
    })
    table, _ = consistency(sweep)
    c1 = table[table["level"] == 1].iloc[0]
    c8 = table[table["level"] == 8].iloc[0]
    assert c1["reference"] == "c1" and c1["tool_f1_n"] == 4
    assert c1["tool_f1_baseline"] == pytest.approx(3.5 / 4)
    assert c1["tool_f1_floor"] == c1["tool_f1"] == c1["tool_f1_baseline"]
    assert c1["tool_f1_drop"] == 0.0 and c1["tool_f1_drop_ci_low"] < 0 < c1[
        "tool_f1_drop_ci_high"]  # open at no difference
    assert c1["tool_f1_divergence"] == 0.0
    # c8: 002 and 003 have one usable repeat each: no floor for them, agreement yes
    assert c8["tool_f1_floor"] == pytest.approx(1.0)  # 000 and 001 repeat themselves
    agreement = [1.0, 0.5, 1.0, (1 + 0.5) / 2]  # per scenario, over (c8 repeat, c1 repeat)
    assert c8["tool_f1"] == pytest.approx(np.mean(agreement))
    assert c8["tool_f1_drop"] == pytest.approx(np.mean(
        [1 - 1.0, 1 - 0.5, 1 - 1.0, 0.5 - 0.75]))
    # (floor + baseline)/2 - agreement, for the scenarios with two usable repeats at c8
    assert c8["tool_f1_divergence"] == pytest.approx(np.mean([1 - 1.0, 1 - 0.5]))
    assert c8["tool_f1_ci_low"] < c8["tool_f1"] < c8["tool_f1_ci_high"]
    assert c8["lost"] == pytest.approx(1 / 8) and c8["harness_lost"] == pytest.approx(1 / 8)
    assert c8["malformed"] == pytest.approx(0.5)  # the one trial with a trajectory
    assert c8["truncated"] == pytest.approx(np.mean([0, 0.5, 0, 0, 0, 0, 0, 0]))
    assert c8["schema_valid"] < 1.0


def test_a_model_that_never_calls_a_tool_is_not_called_consistent(tmp_path):
    silent = {f"banking-00{i}__{r}": _both([]) for i in range(3) for r in "ab"}
    sweep = calls_sweep(tmp_path / "s", {1: silent, 4: {k.replace("__", "__x"): v
                                                   for k, v in silent.items()}})
    table, _ = consistency(sweep)
    for _, row in table.iterrows():
        assert np.isnan(row["tool_f1"]) and row["tool_f1_n"] == 0
        assert row["tool_f1_note"] == "no tool calls to compare"


def test_an_agent_failure_is_a_decision_not_a_lost_trial(tmp_path):
    sweep = calls_sweep(tmp_path / "s", {
        1: {"banking-000__a": _both([BAL]), "banking-000__b": _both([BAL])},
        2: {"banking-000__c": _both([BAL], status="agent_error"),
            "banking-000__d": _both([XFER], status="agent_error")}})
    table, _ = consistency(sweep)
    c1, c2 = (table[table["level"] == lv].iloc[0] for lv in (1, 2))
    assert set(table["reference"]) == {"c2"}  # the lowest batched level
    assert c2["lost"] == 0.0 and c2["tool_f1_floor"] == 0.0  # BAL vs XFER, compared
    assert c1["tool_f1"] == pytest.approx(0.5)


def test_repeats_that_ran_side_by_side_are_no_floor(tmp_path):
    """Two repeats in the same hour agree (they may have shared a batch): no floor from
    them; the same two an hour apart give one."""
    def level(hours: tuple[int, int]) -> dict:
        return {f"banking-00{i}__{r}": _both([BAL], hour=h)
                for i in range(3) for r, h in zip("ab", hours, strict=True)}

    sweep = calls_sweep(tmp_path / "s", {2: level((0, 1)), 4: {
        k.replace("__", "__x"): v for k, v in level((5, 5)).items()}})
    table, _ = consistency(sweep)
    c4 = table[table["level"] == 4].iloc[0]
    assert np.isnan(c4["tool_f1_floor"]) and c4["tool_f1_n"] == 0
    assert "side by side" in c4["tool_f1_note"]
    assert table[table["level"] == 2].iloc[0]["tool_f1_floor"] == 1.0


def test_reference_from_another_sweep(tmp_path):
    ref = calls_sweep(tmp_path / "ref", {2: {"banking-000__r": _both([BAL]),
                                        "banking-000__s": _both([BAL])}})
    run = calls_sweep(tmp_path / "run", {1: {"banking-000__a": _both([BAL, XFER]),
                                        "banking-000__b": _both([BAL, XFER])},
                                    4: {"banking-000__c": _both([BAL]),
                                        "banking-000__d": _both([BAL])}})
    table, _ = consistency(run, reference=ref)
    assert list(table["tool_f1"]) == [pytest.approx(2 / 3), 1.0]
    assert list(table["tool_f1_drop"]) == [pytest.approx(1 / 3), 0.0]
    assert set(table["reference"]) == {"ref/c2"}
