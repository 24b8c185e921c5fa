"""The gold sets: the newest held-out set has no near-twin in the sets written before it, and
the near-twin rule itself catches a goal said twice."""

from __future__ import annotations

import pytest

from tasks.banking import goldsets
from tasks.banking.dataset import validate
from tasks.banking.labels import label_scenarios

EARLIER = ("sample", "tuning", "heldout", "heldout2")


def test_heldout3_has_no_near_twin_in_any_earlier_set():
    others = [goal for name in EARLIER for goal in goldsets.goals_of(name)]
    assert len(others) > 300
    assert goldsets.near_twins(goldsets.goals_of("heldout3"), others) == []


def test_the_rule_catches_twins_the_earlier_held_out_sets_have():
    # A goal and its paraphrase, and a real case: heldout2 written after heldout and tuning.
    twin = goldsets.near_twins(["Shift $2,000 from savings into checking for the trip"],
                               ["Move $2,000 from my savings into checking"])
    assert twin and twin[0][2] >= goldsets.TWIN_JACCARD
    earlier = [g for name in ("sample", "tuning", "heldout") for g in goldsets.goals_of(name)]
    assert len(goldsets.near_twins(goldsets.goals_of("heldout2"), earlier)) >= 10


def test_heldout3_is_a_valid_per_goal_labels_file_with_its_stated_counts():
    data = validate(goldsets.raw_dataset("heldout3"), "banking")
    labels = label_scenarios(f"file:{goldsets.gold_path('heldout3')}", data, data.scenarios)
    no_tool = [n for s in labels.scenarios.values() for n in (g.no_tool for g in s.goals)]
    transfers = [t for s in labels.scenarios.values() for t in (g.tools for g in s.goals)
                 if t == ["transfer_funds"]]
    assert (len(labels.scenarios), len(no_tool), sum(no_tool), len(transfers)) == (16, 80, 14, 15)
    used = {t for s in labels.scenarios.values() for g in s.goals
            for t in g.tools}
    assert len(used) == 20  # every tool is some goal's gold


def test_heldout4_has_no_near_twin_in_any_earlier_set():
    others = [goal for name in (*EARLIER, "heldout3") for goal in goldsets.goals_of(name)]
    assert goldsets.near_twins(goldsets.goals_of("heldout4"), others) == []


def test_heldout4_brings_its_own_tools_and_its_stated_counts():
    data = validate(goldsets.raw_dataset("heldout4"), "banking")
    assert not data.bad_rows and len(data.tools) == 20
    # Another bank's tools: the sample's transfer tool is not among them.
    assert "transfer_funds" not in data.tool_names
    assert {"order_checkbook", "open_savings_account"} <= set(data.tool_names)
    labels = label_scenarios(f"file:{goldsets.gold_path('heldout4')}", data, data.scenarios)
    goals = [g for s in labels.scenarios.values() for g in s.goals]
    assert (len(labels.scenarios), len(goals), sum(g.no_tool for g in goals)) == (18, 90, 22)
    assert sum(g.tools == ["transfer_between_accounts"] for g in goals) == 8
    assert {t for g in goals for t in g.tools} == set(data.tool_names)


@pytest.mark.parametrize("name", ["heldout", "heldout2", "heldout3", "heldout4"])
def test_held_out_sets_are_never_in_the_in_sample_lists(name):
    assert not set(goldsets.goals_of(name)) & set(goldsets.goals_of("tuning"))
