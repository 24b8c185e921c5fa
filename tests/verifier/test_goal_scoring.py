"""Per-goal scoring through the real verify.py: alternatives, no-tool goals, old labels."""

from __future__ import annotations

import pytest
from verifier_harness import Trial, call_line

from contracts.expected import Expected
from contracts.tsq import TsqDetails

BALANCE, TRANSFER, RECENT = "get_account_balance", "transfer_funds", "list_recent_transactions"
LABELS = {"method": "intent", "version": "1", "source": None}
PROVENANCE = {"dataset_revision": "test-fixture", "builder": "bankbench 0.1.0"}


def expected(goals: list[dict], expected_tools: list[str], strict: bool = True) -> dict:
    """An expected.json as the task builder writes it (checked against the contract)."""
    data = {"scenario_id": "banking-011", "labels": LABELS, "expected_tools": expected_tools,
            "goals": goals, "provenance": PROVENANCE}
    if strict:
        Expected.model_validate(data)
    return data


# Goal 0: one tool; goal 1: two alternatives; goal 2: no tool serves it.
GOALS = [
    {"index": 0, "text": "What is my savings balance?", "tools": [BALANCE]},
    {"index": 1, "text": "Move 200 to checking", "tools": [TRANSFER, "pay_bill"]},
    {"index": 2, "text": "Can you recommend a good restaurant?", "tools": [], "no_tool": True,
     "reason": "not a banking request"},
]


def statuses(details: dict) -> list[str]:
    return [g.status for g in TsqDetails.model_validate(details).goals]


def test_declined_no_tool_goal_counts_as_handled(trial: Trial) -> None:
    trial.write_expected(expected(GOALS, [BALANCE, TRANSFER]))
    trial.write_intents(call_line(1, BALANCE), call_line(2, TRANSFER))
    outcome = trial.verify()
    assert statuses(outcome.details) == ["served", "served", "declined"]
    assert outcome.reward["goals_served"] == 1.0
    assert outcome.reward["goals_declined"] == 1.0
    assert outcome.reward["goal_score"] == 1.0
    assert outcome.reward["solved"] == 1.0
    assert (outcome.reward["n_goals_servable"], outcome.reward["n_goals_no_tool"]) == (2.0, 1.0)


def test_any_alternative_serves_while_tsq_keeps_the_reference_set(trial: Trial) -> None:
    trial.write_expected(expected(GOALS, [BALANCE, TRANSFER]))
    trial.write_intents(call_line(1, BALANCE), call_line(2, "bank__pay_bill"))
    outcome = trial.verify()
    goals = outcome.details["goals"]
    assert statuses(outcome.details) == ["served", "served", "declined"]
    assert goals[1]["called"] == ["pay_bill"]
    assert goals[1]["served_valid"] is False  # pay_bill is not in the bank's tool set
    assert outcome.reward["goal_score"] == 1.0 and outcome.reward["solved"] == 1.0
    # Set-F1 TSQ still compares with expected_tools: pay_bill is not its preferred tool.
    assert outcome.reward["tsq"] == pytest.approx(0.5)


def test_call_outside_every_alternative_wrongly_serves_no_tool_goals(trial: Trial) -> None:
    trial.write_expected(expected(GOALS, [BALANCE, TRANSFER]))
    trial.write_intents(call_line(1, BALANCE), call_line(2, RECENT))
    outcome = trial.verify()
    assert statuses(outcome.details) == ["served", "missed", "wrongly_served"]
    assert outcome.details["goals"][2]["outside"] == [RECENT]
    assert outcome.reward["goals_served"] == 0.5
    assert outcome.reward["goals_declined"] == 0.0
    # 1 goal handled of 3 goals plus 1 tool that serves none
    assert outcome.reward["goal_score"] == pytest.approx(1 / 4)
    assert outcome.reward["solved"] == 0.0


def test_every_goal_served_but_an_extra_call_is_not_solved(trial: Trial) -> None:
    goals = GOALS[:2]
    trial.write_expected(expected(goals, [BALANCE, TRANSFER]))
    trial.write_intents(call_line(1, BALANCE), call_line(2, TRANSFER), call_line(3, RECENT))
    outcome = trial.verify()
    assert outcome.reward["goals_served"] == 1.0
    assert outcome.reward["goal_score"] == pytest.approx(2 / 3)  # the stray call weighs as a goal
    assert outcome.reward["goals_declined"] == 1.0  # vacuous: no no-tool goal ...
    assert outcome.reward["n_goals_no_tool"] == 0.0  # ... which the count says
    assert outcome.reward["solved"] == 0.0  # the recent-transactions call served no goal


def test_only_no_tool_goals_and_no_call_is_solved(trial: Trial) -> None:
    trial.write_expected(expected([GOALS[2]], []))
    trial.write_intents()
    outcome = trial.verify()
    assert statuses(outcome.details) == ["declined"]
    assert outcome.reward["goal_score"] == 1.0 and outcome.reward["solved"] == 1.0
    assert outcome.reward["n_goals_servable"] == 0.0


@pytest.mark.parametrize(
    ("calls", "solved"),
    [([BALANCE, TRANSFER], 1.0), ([BALANCE], 0.0), ([BALANCE, TRANSFER, RECENT], 0.0)],
)
def test_old_expected_without_no_tool_scores_as_before(
    trial: Trial, calls: list[str], solved: float
) -> None:
    old_goals = [{"index": 0, "text": "balance", "tools": [BALANCE]},
                 {"index": 1, "text": "transfer", "tools": [TRANSFER]}]
    trial.write_expected(expected(old_goals, [BALANCE, TRANSFER], strict=False))
    trial.write_intents(*(call_line(n, tool) for n, tool in enumerate(calls, start=1)))
    reward = trial.verify().reward
    # The name-set definition of solved agrees with the per-goal one on single-tool goals.
    assert reward["solved"] == solved
    assert reward["goals_served"] == reward["goal_coverage"] == (2 if TRANSFER in calls else 1) / 2


def test_old_per_scenario_labels_fall_back_to_names(trial: Trial) -> None:
    unmapped = [{"index": 0, "text": "balance", "tools": None},
                {"index": 1, "text": "transfer", "tools": None}]
    trial.write_expected(expected(unmapped, [BALANCE, TRANSFER], strict=False))
    trial.write_intents(call_line(1, BALANCE), call_line(2, RECENT))
    outcome = trial.verify()
    assert statuses(outcome.details) == ["unlabelled", "unlabelled"]
    reward = outcome.reward
    assert reward["goals_served"] == reward["goal_score"] == reward["recall"] == 0.5
    assert reward["solved"] == 0.0  # names: {balance, recent} != {balance, transfer}
    assert (reward["n_goals_servable"], reward["n_goals_no_tool"]) == (0.0, 0.0)


def test_no_tool_goal_with_tools_is_a_clear_input_error(trial: Trial) -> None:
    bad = [{"index": 0, "text": "x", "tools": [BALANCE], "no_tool": True}]
    trial.write_expected(expected(bad, [BALANCE], strict=False))
    trial.write_intents(call_line(1, BALANCE))
    outcome = trial.verify()
    assert outcome.reward["goal_score"] == 0.0 and outcome.reward["tsq"] == 0.0
    assert "goals[0].no_tool" in outcome.details["reason"]


def test_calling_every_tool_scores_below_the_goals_own_calls(verify) -> None:
    """goal_score is no reward for spraying calls: every tool serves every goal but adds each
    tool that serves none to the denominator."""
    tools = [BALANCE, TRANSFER, "pay_bill", RECENT] + [f"tool_{n}" for n in range(16)]
    goals = expected(GOALS[:2], [BALANCE, TRANSFER])
    spray = verify.score_calls([{"tool": t, "valid": True} for t in tools], goals)["reward"]
    exact = verify.score_calls([{"tool": t, "valid": True} for t in (BALANCE, TRANSFER)],
                               goals)["reward"]
    assert exact["goal_score"] == 1.0
    assert spray["goals_served"] == 1.0
    # 2 handled / (2 goals + 17 tools outside both goals' alternatives)
    assert spray["goal_score"] == pytest.approx(2 / 19)
    repeat = verify.score_calls([{"tool": RECENT, "valid": True}] * 3
                                + [{"tool": BALANCE, "valid": True}], goals)["reward"]
    assert repeat["goal_score"] == pytest.approx(1 / 3)  # a stray tool counts once
