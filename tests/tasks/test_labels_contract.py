"""The per-goal label contract: alternatives and "no tool" from a labels file through to
expected.json, and the reference's per-scenario list format still building as before."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from contracts.expected import Expected, GoalEntry, GoalLabel, LabelsFile
from tasks.banking.build import build_tasks
from tasks.banking.dataset import load
from tasks.banking.labels import LabelsError, label_scenarios

SAMPLE = load("sample")
S0 = SAMPLE.scenarios[0]  # four goals


def _per_goal(**overrides) -> dict:
    goals = [
        {"goal": S0.row.user_goals[0], "tools": ["get_account_balance", "get_transaction_history"]},
        {"tools": ["transfer_funds"]},
        {"tools": ["schedule_bill_payment"], "reason": "a biller, from checking"},
        {"no_tool": True, "reason": "pretend nothing can do this"},
    ]
    data = {"format": "bankbench-labels/2", "produced_by": "hand, reviewed",
            "quality": {"heldout_micro_f1": 0.9, "heldout_goal_exact": 0.8,
                        "measured_with": "a test"},
            "scenarios": {S0.scenario_id: {"goals": goals}}}
    data.update(overrides)
    return data


def _write(tmp_path, data) -> str:
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(data))
    return f"file:{path}"


def test_alternatives_and_no_tool_round_trip_into_expected_json(tmp_path, fake_template):
    out = tmp_path / "out"
    build_tasks("sample", out, labels=_write(tmp_path, _per_goal()), scenarios=[S0.scenario_id],
                template_dir=fake_template, log=lambda line: None)
    expected = Expected.model_validate_json((out / S0.scenario_id / "tests/expected.json")
                                            .read_text())
    assert [g.tools for g in expected.goals] == [
        ["get_account_balance", "get_transaction_history"], ["transfer_funds"],
        ["schedule_bill_payment"], []]
    assert [g.no_tool for g in expected.goals] == [False, False, False, True]
    assert expected.goals[3].reason == "pretend nothing can do this"
    # The set-F1 side: each served goal's preferred tool, never the alternatives.
    assert expected.expected_tools == ["get_account_balance", "transfer_funds",
                                       "schedule_bill_payment"]
    assert expected.labels.method == "file" and expected.labels.produced_by == "hand, reviewed"
    assert expected.labels.quality.heldout_micro_f1 == 0.9
    # The oracle serves each goal once, with its preferred tool.
    solve = (out / S0.scenario_id / "solution/solve.sh").read_text()
    assert solve.count("/app/bank call") == 3 and "get_transaction_history" not in solve


def test_the_per_goal_map_without_its_header_reads_the_same(tmp_path):
    bare = {S0.scenario_id: _per_goal()["scenarios"][S0.scenario_id]}
    a = label_scenarios(_write(tmp_path, bare), SAMPLE, [S0]).scenarios[S0.scenario_id]
    assert [g.no_tool for g in a.goals] == [False, False, False, True]
    assert a.goals[0].tools == ["get_account_balance", "get_transaction_history"]


def test_the_reference_list_format_still_builds(tmp_path, fake_template):
    out = tmp_path / "out"
    spec = _write(tmp_path, {S0.scenario_id: ["get_account_balance", "transfer_funds"]})
    build_tasks("sample", out, labels=spec, scenarios=[S0.scenario_id],
                template_dir=fake_template, log=lambda line: None)
    expected = json.loads((out / S0.scenario_id / "tests/expected.json").read_text())
    assert expected["expected_tools"] == ["get_account_balance", "transfer_funds"]
    assert all(g["tools"] is None and g["no_tool"] is False for g in expected["goals"])
    assert expected["labels"]["quality"] is None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda g: g.pop(), "banking-000 has 4 goals, the file labels 3"),
        (lambda g: g[0].update(goal="something else"), "banking-000 goal 0 quotes"),
        (lambda g: g[1].update(tools=["teleport"]), "unknown tools teleport"),
        (lambda g: g[1].update(tools=[]), "give either tools"),
        (lambda g: g[3].update(tools=["transfer_funds"]), "give either tools"),
    ],
)
def test_per_goal_file_errors_name_the_culprit(tmp_path, change, words):
    data = _per_goal()
    change(data["scenarios"][S0.scenario_id]["goals"])
    with pytest.raises(LabelsError, match=words) as err:
        label_scenarios(_write(tmp_path, data), SAMPLE, [S0])
    assert str(err.value).startswith("--labels file:") and "\n" not in str(err.value)


def test_contract_models_refuse_contradictions():
    with pytest.raises(ValidationError, match="no_tool is set but tools are listed"):
        GoalLabel(index=0, text="x", tools=["a"], no_tool=True)
    with pytest.raises(ValidationError, match="repeat"):
        GoalEntry(tools=["a", "a"])
    assert LabelsFile(scenarios={}).format == "bankbench-labels/2"


@pytest.mark.parametrize("name", ["heldout", "heldout2"])
def test_the_held_out_gold_sets_are_valid_per_goal_labels_files(name):
    from tasks.banking import goldsets
    from tasks.banking.dataset import validate

    heldout = validate(goldsets.raw_dataset(name), "banking")
    labels = label_scenarios(f"file:{goldsets.gold_path(name)}", heldout, heldout.scenarios)
    goals = [n for s in labels.scenarios.values() for n in (g.no_tool for g in s.goals)]
    assert len(labels.scenarios) == 25 and len(goals) >= 100
    assert 0.1 <= sum(goals) / len(goals) <= 0.25  # the goals no tool serves
