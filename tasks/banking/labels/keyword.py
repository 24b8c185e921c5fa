"""`--labels keyword`: the reference integration's heuristic, kept for comparability.

A goal that contains one of the keys below tags every tool whose lower-cased name or
description contains one of that key's patterns (plain substring tests on both sides), at most
once per tool per goal; the scenario's expected tools are the tools tagged by any goal, each
once, in order of first tagging. It is noisy on purpose: "account" is in most descriptions.
"""

from __future__ import annotations

from tasks.banking.dataset import Dataset, Scenario
from tasks.banking.labels.model import ScenarioLabels, decided

VERSION = "1"

# key found in the goal -> patterns searched for in the tool's name and description
KEYWORD_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("balance", ("balance", "check", "account")),
    ("transfer", ("transfer", "send", "move", "pay")),
    ("transaction", ("transaction", "history", "statement")),
    ("payment", ("payment", "pay", "bill")),
    ("card", ("card", "credit", "debit")),
    ("loan", ("loan", "mortgage", "credit")),
    ("dispute", ("dispute", "challenge", "report")),
    ("limit", ("limit", "increase", "decrease")),
    ("block", ("block", "freeze", "lock")),
    ("unblock", ("unblock", "unfreeze", "unlock")),
    ("statement", ("statement", "report", "summary")),
    ("contact", ("contact", "phone", "email", "address")),
    ("beneficiary", ("beneficiary", "recipient", "payee")),
    ("standing", ("standing", "recurring", "automatic")),
    ("wire", ("wire", "international", "swift")),
)


def goal_tools(goal: str, dataset: Dataset) -> list[str]:
    text = goal.lower()
    keys = [patterns for key, patterns in KEYWORD_PATTERNS if key in text]
    tagged = []
    for tool in dataset.tools:
        haystacks = (tool.title.lower(), tool.description.lower())
        if any(p in h for patterns in keys for p in patterns for h in haystacks):
            tagged.append(tool.title)
    return tagged


def make_matcher(dataset: Dataset) -> None:
    return None  # nothing to prepare: the patterns are fixed


def label(scenario: Scenario, dataset: Dataset, matcher: None = None) -> ScenarioLabels:
    goals = [decided(i, goal, goal_tools(goal, dataset))
             for i, goal in enumerate(scenario.row.user_goals)]
    # The reference's expected set: every tool any goal tagged, once, not one per goal.
    expected = list(dict.fromkeys(name for g in goals for name in g.tools or []))
    return ScenarioLabels(expected_tools=expected, goals=goals)
