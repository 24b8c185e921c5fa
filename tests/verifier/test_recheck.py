"""The verifier judges every call's arguments itself (the log's `valid` flag is not trusted),
matches names with the bank's own normaliser, and reports `solved`."""

from __future__ import annotations

import pytest
from verifier_harness import VALID_ARGUMENTS, Trial, call_line

EXPECTED_SET = ["get_account_balance", "transfer_funds"]


def forged(seq: int, tool: str, arguments: object, valid: bool, **extra: object) -> dict:
    return dict(call_line(seq, tool), arguments=arguments, valid=valid, **extra)


def test_a_valid_flag_on_bad_arguments_earns_nothing(trial: Trial) -> None:
    trial.write_intents(
        forged(1, "get_account_balance", {}, valid=True),
        forged(2, "transfer_funds", {"amount": "lots"}, valid=True),
        forged(3, "not_a_tool", {}, valid=True),
    )
    outcome = trial.verify()
    assert outcome.reward["param_validity"] == 0.0
    assert outcome.details["intents"]["valid_flag_disagreements"] == 3
    calls = outcome.details["attempts"][0]["calls"]
    assert "missing required property 'account_number'" in " ".join(calls[0]["errors"])
    assert calls[2]["errors"][0] == "unknown tool 'not_a_tool'"


def test_good_arguments_count_whatever_the_flag_says(trial: Trial) -> None:
    trial.write_intents(forged(1, "get_account_balance",
                               VALID_ARGUMENTS["get_account_balance"], valid=False))
    outcome = trial.verify()
    assert outcome.reward["param_validity"] == 1.0
    assert outcome.details["intents"]["valid_flag_disagreements"] == 1


def test_arguments_too_large_for_the_log_are_not_valid(trial: Trial) -> None:
    trial.write_intents(forged(1, "get_account_balance", '{"account_number": "1', valid=True,
                               arguments_truncated=True, arguments_bytes=20000))
    outcome = trial.verify()
    assert outcome.reward["param_validity"] == 0.0
    assert outcome.details["attempts"][0]["calls"][0]["errors"] == [
        "arguments too large to check"]


def test_without_tool_schemas_selection_scores_but_no_call_is_valid(trial: Trial) -> None:
    (trial.tests_dir / "tools.json").unlink()
    trial.write_intents(call_line(1, "get_account_balance"))
    outcome = trial.verify()
    assert outcome.reward["recall"] == 0.5 and outcome.reward["param_validity"] == 0.0
    assert "no tool schemas found" in outcome.details["tools_error"]


@pytest.mark.parametrize(("tools", "solved"), [
    (["get_account_balance", "transfer_funds"], 1.0),
    (["get_account_balance", "transfer_funds", "get_account_balance"], 1.0),  # repeats are fine
    (["Get-Account-Balance", "bank__transfer_funds"], 1.0),  # names match as TSQ matches them
    (["get_account_balance"], 0.0),  # one missing
    (["get_account_balance", "transfer_funds", "list_recent_transactions"], 0.0),  # one extra
    ([], 0.0),
])
def test_solved_is_exactly_the_expected_set(trial: Trial, tools: list[str], solved: float
                                            ) -> None:
    trial.write_expected({"expected_tools": EXPECTED_SET, "goals": []})
    trial.write_intents(*[call_line(n, tool) for n, tool in enumerate(tools, 1)])
    assert trial.verify().reward["solved"] == solved


def test_the_name_the_bank_suggests_is_the_one_the_verifier_matches(trial: Trial) -> None:
    """End to end (the rule itself is pinned equal on both sides in
    tests/contracts/test_template_mirrors.py)."""
    done = trial.bank("call", "bank__Get-Account-Balance", "{}")
    assert "did you mean: get_account_balance?" in done.stdout
    trial.write_expected({"expected_tools": ["get_account_balance"], "goals": []})
    assert trial.verify().details["matched"] == ["getaccountbalance"]
