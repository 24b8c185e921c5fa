"""verify.py and test.sh run as Harbor runs them, on intents logs good, bad and missing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from verifier_harness import REWARD_KEYS, Trial, call_line

ZERO = dict.fromkeys(REWARD_KEYS, 0.0)
# No call against the fixture (3 servable goals, 1 unmapped): every score 0 but the vacuous
# goals_declined (no no-tool goal), and the counts.
NO_CALLS = dict(ZERO, goals_declined=1.0, n_goals_servable=3.0, turns=1.0)
BALANCE, TRANSFER, RECENT = "get_account_balance", "transfer_funds", "list_recent_transactions"


def test_reward_file_holds_exactly_the_flat_numbers(trial: Trial) -> None:
    trial.write_intents(call_line(1, BALANCE), call_line(2, TRANSFER), call_line(3, BALANCE))
    outcome = trial.verify()
    assert outcome.reward == {
        "tsq": 1.0,
        "precision": 1.0,
        "recall": 1.0,
        "param_validity": 1.0,
        "multiset_f1": 1.0,
        "goal_coverage": 1.0,
        "solved": 1.0,  # goal 3 is unmapped: solved compares names with expected_tools
        "goals_served": 1.0,
        "goals_declined": 1.0,
        "goal_score": 1.0,
        "n_goals_servable": 3.0,
        "n_goals_no_tool": 0.0,
        "turns": 1.0,  # a single-turn task: the one exchange
    }
    assert all(type(v) is float for v in outcome.reward.values())
    assert outcome.details["reason"] is None
    assert outcome.details["scenario_id"] == "banking-003"
    assert outcome.details["matched"] == ["getaccountbalance", "transferfunds"]
    assert "tsq=1.000" in outcome.stdout


def test_accepted_attempt_is_scored_not_the_last(trial: Trial) -> None:
    trial.write_intents(
        call_line(1, BALANCE, attempt=1),
        call_line(2, TRANSFER, attempt=1),
        call_line(3, RECENT, attempt=2),
        {"accept": 1, "ts": 2.0},
    )
    details = trial.verify().details
    assert details["scored_attempt"] == 1
    assert details["reward"]["tsq"] == 1.0
    assert details["attempt_selection"].startswith("accepted")
    assert [a["attempt"] for a in details["attempts"]] == [1, 2]
    assert details["attempts"][1]["reward"]["tsq"] == 0.0  # every attempt is reported


def test_without_accept_the_highest_attempt_is_scored(trial: Trial) -> None:
    trial.write_intents(
        call_line(1, BALANCE, attempt=1),
        call_line(2, TRANSFER, attempt=1),
        call_line(3, RECENT, attempt=2),
        call_line(4, BALANCE, attempt=2),
    )
    details = trial.verify().details
    assert details["scored_attempt"] == 2
    assert details["reward"]["tsq"] == pytest.approx(0.5)
    assert details["extra"] == ["listrecenttransactions"]
    assert details["missing"] == ["transferfunds"]


def test_the_last_accept_line_wins(trial: Trial) -> None:
    trial.write_intents(
        call_line(1, RECENT, attempt=1),
        {"accept": 1, "ts": 1.0},
        call_line(2, BALANCE, attempt=2),
        call_line(3, TRANSFER, attempt=2),
        {"accept": 2, "ts": 2.0},
    )
    assert trial.verify().details["scored_attempt"] == 2


def test_accepting_an_attempt_without_calls_scores_zero(trial: Trial) -> None:
    trial.write_intents(call_line(1, BALANCE, attempt=1), {"accept": 2, "ts": 1.0})
    outcome = trial.verify()
    assert outcome.reward == NO_CALLS
    assert "attempt 2 has no recorded calls" in outcome.details["attempt_selection"]
    assert outcome.details["reason"] == "attempt 2 made no bank call"


def test_invalid_and_unknown_calls_count_as_selected_tools(trial: Trial) -> None:
    trial.write_intents(
        call_line(1, BALANCE, valid=False),
        call_line(2, "bank__transfer_funds", valid=False),
        call_line(3, "check_loans", valid=False),
        call_line(4, BALANCE),
    )
    reward = trial.verify().reward
    assert reward["param_validity"] == 0.25
    assert reward["recall"] == 1.0 and reward["precision"] == pytest.approx(2 / 3)


def test_corrupt_lines_are_skipped_and_counted(trial: Trial) -> None:
    trial.write_intents(
        "garbage",
        call_line(1, BALANCE),
        '{"seq": 2, "tool": "transfer_fu',
        "[]",
        call_line(3, TRANSFER),
        "",
        '{"accept": "one"}',
    )
    details = trial.verify().details
    assert details["reward"]["tsq"] == 1.0
    assert details["intents"]["corrupt_lines"] == 4
    assert [e["line"] for e in details["intents"]["corrupt_examples"]] == [1, 3, 4, 7]


def test_all_lines_corrupt_scores_zero_with_reason(trial: Trial) -> None:
    trial.write_intents("garbage", "{", "null")
    outcome = trial.verify()
    assert outcome.reward == NO_CALLS
    assert "no readable call (3 corrupt lines)" in outcome.details["reason"]


def test_missing_intents_scores_zero_with_reason(trial: Trial) -> None:
    outcome = trial.verify()
    assert outcome.reward == NO_CALLS
    assert "missing" in outcome.details["reason"]
    assert str(trial.intents) in outcome.details["reason"]


def test_empty_intents_scores_zero_with_reason(trial: Trial) -> None:
    trial.write_intents()
    outcome = trial.verify()
    assert outcome.reward == NO_CALLS
    assert "empty" in outcome.details["reason"]


def test_nothing_expected_and_nothing_called_is_perfect(trial: Trial) -> None:
    trial.write_expected(
        {
            "scenario_id": "banking-009",
            "expected_tools": [],
            "goals": [{"index": 0, "text": "hello", "tools": None}],
        }
    )
    reward = trial.verify().reward
    assert reward == dict(
        ZERO, tsq=1.0, precision=1.0, recall=1.0, multiset_f1=1.0, goal_coverage=1.0, solved=1.0,
        goals_served=1.0, goals_declined=1.0, goal_score=1.0, turns=1.0,
    )  # no calls: param_validity stays 0; no judged goal: the goal shares are goal_coverage's


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "is not valid JSON"),
        ("[]", "top level must be an object"),
        ({"expected_tools": "get_account_balance"}, "expected_tools must be a list"),
        ({"expected_tools": [1]}, "expected_tools must be a list"),
        ({"expected_tools": ["a"], "goals": {}}, "goals must be a list"),
        ({"expected_tools": ["a"], "goals": [{"tools": "a"}]}, "goals[0].tools must be null"),
        ({"expected_tools": ["a"], "goals": ["a"]}, "goals[0].tools must be null"),
    ],
)
def test_corrupt_expected_scores_zero_with_reason(
    trial: Trial, content: dict | str, reason: str
) -> None:
    trial.write_expected(content)
    trial.write_intents(call_line(1, "a"))
    outcome = trial.verify()
    assert outcome.reward == ZERO
    assert reason in outcome.details["reason"]
    assert "expected.json" in outcome.details["reason"]


def test_missing_expected_scores_zero_with_reason(trial: Trial) -> None:
    (trial.tests_dir / "expected.json").unlink()
    outcome = trial.verify()
    assert outcome.reward == ZERO
    assert "unreadable" in outcome.details["reason"]


def test_an_internal_error_still_writes_zeros(
    verify: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(verify, "build_report", broken)
    assert verify.main(["--out-dir", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "reward.json").read_text()) == ZERO
    assert "KeyError: 'boom'" in json.loads((tmp_path / "tsq.json").read_text())["reason"]


def test_test_sh_writes_the_reward(trial: Trial) -> None:
    trial.write_intents(call_line(1, BALANCE), call_line(2, TRANSFER))
    outcome = trial.test_sh()
    assert outcome.returncode == 0
    assert outcome.reward["tsq"] == 1.0


def test_test_sh_writes_zeros_when_python3_is_missing(trial: Trial, tmp_path: Path) -> None:
    trial.write_intents(call_line(1, BALANCE), call_line(2, TRANSFER))
    bin_dir = tmp_path / "bin"  # a PATH with the shell tools test.sh needs but no python3
    bin_dir.mkdir()
    for tool in ("bash", "mkdir", "dirname"):
        os.symlink(shutil.which(tool) or f"/bin/{tool}", bin_dir / tool)
    outcome = trial.test_sh(path=str(bin_dir))
    assert outcome.returncode == 0
    assert outcome.reward == ZERO
    assert "exit code 127" in outcome.details["reason"]


def test_test_sh_writes_zeros_when_verify_py_dies(trial: Trial) -> None:
    (trial.tests_dir / "verify.py").write_text("raise SystemExit(3)\n")
    outcome = trial.test_sh()
    assert outcome.reward == ZERO
    assert "exit code 3" in outcome.details["reason"]


def test_bank_calls_score_end_to_end(trial: Trial) -> None:
    """The real bank records a trial; the real verifier scores it."""
    bank_calls = [
        ("call", BALANCE, '{"account_number": "1", "account_type": "savings"}', "--attempt", "1"),
        ("call", RECENT, '{"account_number": "1"}', "--attempt", "1"),
        ("call", BALANCE, '{"account_number": "1", "account_type": "savings"}', "--attempt", "2"),
        ("call", TRANSFER, '{"from_account": "1", "to_account": "2"}', "--attempt", "2"),
        ("call", "tools.transfer_funds", "{}", "--attempt", "2"),
        ("accept", "2"),
    ]
    assert [trial.bank(*argv).returncode for argv in bank_calls] == [0, 0, 0, 2, 2, 0]
    outcome = trial.verify()
    assert outcome.details["scored_attempt"] == 2
    assert outcome.reward == pytest.approx(
        {
            "tsq": 1.0,
            "precision": 1.0,
            "recall": 1.0,
            "param_validity": 1 / 3,  # amount missing; the dotted name is unknown to the bank
            "multiset_f1": 2 / 3,  # {balance, transfer x2} vs {balance x2, transfer}: 2 shared
            "goal_coverage": 1.0,
            "solved": 1.0,
            "goals_served": 1.0,  # by name: the invalid transfer still serves its goal
            "goals_declined": 1.0,
            "goal_score": 1.0,
            "n_goals_servable": 3.0,
            "n_goals_no_tool": 0.0,
            "turns": 1.0,  # a single-turn task: the one exchange
        }
    )
    goals = outcome.details["goals"]
    assert [g["status"] for g in goals] == ["served", "served", "served", "unlabelled"]
    assert [g.get("served_valid") for g in goals] == [True, False, True, None]


def test_odd_characters_in_calls_survive_into_the_details(trial: Trial) -> None:
    trial.write_intents(call_line(1, "get_\udcff"), call_line(2, "transfer_funds€"))
    outcome = trial.verify()
    assert outcome.details["actual_tools"] == ["get_\udcff", "transfer_funds€"]
    assert outcome.reward["tsq"] == 0.0


def test_a_log_past_the_banks_bound_scores_zero_unread(trial: Trial) -> None:
    """No volume of lines can run the verifier out of time: more than the bank ever records
    is scored 0 with the reason, without reading the calls."""
    from contracts.intents import MAX_LOG_LINES

    line = call_line(1, "get_account_balance")
    trial.write_intents(*[dict(line, seq=n) for n in range(1, MAX_LOG_LINES + 2)])
    out = trial.verify()
    assert out.returncode == 0 and set(out.reward.values()) == {0.0}
    assert f"more than {MAX_LOG_LINES} lines" in out.details["reason"]
    trial.write_intents(*[dict(line, seq=n) for n in range(1, MAX_LOG_LINES + 1)])
    assert trial.verify().reward["tsq"] > 0  # at the bound: scored as ever
