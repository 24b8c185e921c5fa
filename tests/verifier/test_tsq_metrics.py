"""The scoring functions of verify.py on hand-made calls with known answers."""

from __future__ import annotations

from types import ModuleType

import pytest
from verifier_harness import call_line


@pytest.mark.parametrize(
    ("name", "normalised"),
    [
        ("get_balance", "getbalance"),
        ("Get-Balance", "getbalance"),
        ("GET_BALANCE", "getbalance"),
        ("getBalance", "getbalance"),
        ("bank__get_balance", "getbalance"),
        ("tools.get_balance", "getbalance"),
        ("bank.tools.get-balance", "getbalance"),
        ("bank__tools.get_balance", "getbalance"),
        ("mcp__bank__get_balance", "bankgetbalance"),  # only the first prefix goes
        (" get_balance ", "getbalance"),
    ],
)
def test_normalise_tool_name(verify: ModuleType, name: str, normalised: str) -> None:
    assert verify.normalise_tool_name(name) == normalised


@pytest.mark.parametrize(
    ("actual", "expected", "scores"),
    [
        (["a", "b"], ["a", "b"], (1.0, 1.0, 1.0)),
        (["a", "c"], ["a", "b"], (0.5, 0.5, 0.5)),
        (["a"], ["a", "b"], (2 / 3, 1.0, 0.5)),
        (["a", "b", "c", "d"], ["a"], (0.4, 0.25, 1.0)),
        (["x"], ["a", "b"], (0.0, 0.0, 0.0)),
        # duplicates do not count for the set score
        (["a", "a", "a"], ["a"], (1.0, 1.0, 1.0)),
        (["a"], ["a", "a", "b"], (2 / 3, 1.0, 0.5)),
        # prefixed, dotted, case and separator variants name the same tool
        (
            ["bank__Get-Account-Balance", "tools.transfer_funds"],
            ["get_account_balance", "TransferFunds"],
            (1.0, 1.0, 1.0),
        ),
        # empty sides
        ([], [], (1.0, 1.0, 1.0)),
        ([], ["a"], (0.0, 0.0, 0.0)),
        (["a"], [], (0.0, 0.0, 0.0)),
    ],
)
def test_tool_selection_quality(
    verify: ModuleType, actual: list[str], expected: list[str], scores: tuple
) -> None:
    assert verify.tool_selection_quality(actual, expected) == pytest.approx(scores)


@pytest.mark.parametrize(
    ("actual", "expected", "f1"),
    [
        (["a", "a"], ["a", "a"], 1.0),
        (["a", "a", "a"], ["a"], 0.5),  # P = 1/3, R = 1
        (["a"], ["a", "a"], 2 / 3),  # P = 1, R = 1/2
        (["a", "b", "b"], ["a", "b", "c"], 2 / 3),  # 2 shared of 3 and 3
        (["bank__a", "A"], ["a", "a"], 1.0),
        ([], [], 1.0),
        ([], ["a"], 0.0),
        (["a"], [], 0.0),
    ],
)
def test_multiset_f1_counts_repeats(
    verify: ModuleType, actual: list[str], expected: list[str], f1: float
) -> None:
    assert verify.multiset_f1(actual, expected) == pytest.approx(f1)


def test_param_validity(verify: ModuleType) -> None:
    calls = [
        call_line(1, "a"),
        call_line(2, "a"),
        call_line(3, "b", valid=False),
        call_line(4, "zzz", valid=False),
    ]
    assert verify.param_validity(calls) == 0.5
    assert verify.param_validity([]) == 0.0


GOALS = [
    {"index": 0, "text": "balance", "tools": ["get_account_balance"]},
    {"index": 1, "text": "pay", "tools": ["transfer_funds", "pay_bill"]},
    {"index": 2, "text": "chat", "tools": None},
    {"index": 3, "text": "loan", "tools": ["apply_for_loan"]},
]


def test_goal_coverage_counts_goals_with_known_tools(verify: ModuleType) -> None:
    matches = verify.goal_matches(
        GOALS, [call_line(1, "bank__pay_bill"), call_line(2, "get_account_balance")])
    assert [m["covered"] for m in matches] == [True, True, None, False]
    assert matches[1]["called"] == ["pay_bill"]
    assert verify.goal_coverage(matches, recall=0.1) == pytest.approx(2 / 3)


def test_goal_coverage_falls_back_to_recall(verify: ModuleType) -> None:
    goals = [{"index": 0, "text": "x", "tools": None}, {"index": 1, "text": "y", "tools": []}]
    matches = verify.goal_matches(goals, [call_line(1, "a")])
    assert verify.goal_coverage(matches, recall=0.25) == 0.25
    assert verify.goal_coverage([], recall=0.75) == 0.75


def test_score_calls_combines_every_number(verify: ModuleType) -> None:
    expected = {
        "expected_tools": ["get_account_balance", "transfer_funds", "get_account_balance"],
        "goals": GOALS[:2],
    }
    calls = [
        call_line(1, "get_account_balance"),
        call_line(2, "get_account_balance"),
        call_line(3, "check_loans", valid=False),
    ]
    reward = verify.score_calls(calls, expected)["reward"]
    assert reward == pytest.approx(
        {
            "tsq": 0.5,  # sets: {balance, loans} vs {balance, transfer}
            "precision": 0.5,
            "recall": 0.5,
            "param_validity": 2 / 3,
            "multiset_f1": 2 / 3,  # 2 shared of 3 and 3
            "goal_coverage": 0.5,
            "solved": 0.0,  # transfer_funds never called, check_loans called
            "goals_served": 0.5,  # the pay goal has neither alternative
            "goals_declined": 1.0,  # vacuous: no no-tool goal
            "goal_score": 1 / 3,  # 1 handled of 2 goals + check_loans, which serves none
            "n_goals_servable": 2.0,
            "n_goals_no_tool": 0.0,
            "turns": 1.0,  # a single-turn task: the one exchange
        }
    )


def accept(n: int) -> dict:
    return {"accept": n}


@pytest.mark.parametrize(
    ("calls", "accepts", "attempt", "why"),
    [
        ([call_line(1, "a", 1), call_line(2, "a", 2)], [accept(1)], 1, "accepted"),
        ([call_line(1, "a", 1)], [accept(1), accept(3)], 3, "accepted"),
        (
            [call_line(1, "a", 1), call_line(2, "a", 3), call_line(3, "a", 2)],
            [],
            3,
            "highest attempt",
        ),
        ([], [], 1, "no calls"),
    ],
)
def test_choose_attempt(
    verify: ModuleType, calls: list, accepts: list, attempt: int, why: str
) -> None:
    chosen, reason = verify.choose_attempt({"calls": calls, "accepts": accepts})
    assert chosen == attempt
    assert why in reason


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b'{"seq": 1, "attempt": 1, "tool": "a"',
        b"[1, 2]",
        b'{"seq": 1, "attempt": 1, "tool": 5}',
        b'{"seq": 1, "attempt": true, "tool": "a"}',
        b'{"seq": 1, "attempt": "2", "tool": "a"}',
        b'{"accept": 0}',
        b'{"accept": "1"}',
        b"\xff\xfe",
        b"[" * 100000,
    ],
)
def test_unusable_intent_lines_are_rejected(verify: ModuleType, line: bytes) -> None:
    assert verify.parse_intent_line(line) is None


def test_call_line_keeps_what_scoring_needs(verify: ModuleType) -> None:
    parsed = verify.parse_intent_line(b'{"seq": 4, "tool": "a", "valid": "yes", "errors": "x"}')
    assert parsed == {
        "seq": 4,
        "attempt": 1,
        "turn": 0,  # a line without a turn: before any conversation
        "tool": "a",
        "arguments": None,
        "bank_valid": False,  # only `true` counts, and only to report disagreements
        "truncated": False,
    }
