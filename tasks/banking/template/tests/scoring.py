"""The verifier's metrics: every reward number of one attempt's calls against expected.json.

Pure functions of the calls (each a dict with at least `tool` and `valid`) and the expected
calls (`expected_tools`, `goals`); no file is read here. verify.py reads the inputs and writes
reward.json with these; the task builder on the host scores a gold-perfect agent with the same
functions (tasks/banking/goldperfect.py), so a figure printed beside TSQ is the verifier's own.
Standard library only; runs on Python 3.8+.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
# toolschema.py is shipped beside this file; in the template it lives in ../environment.
for _folder in (os.path.join(os.path.dirname(HERE), "environment"), HERE):
    if _folder not in sys.path:
        sys.path.insert(0, _folder)
from toolschema import normalise_name  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# Scores (0-1) then the two goal counts that tell a reader which goal shares are vacuous.
REWARD_KEYS = ("tsq", "precision", "recall", "param_validity", "multiset_f1", "goal_coverage",
               "solved", "goals_served", "goals_declined", "goal_score", "n_goals_servable",
               "n_goals_no_tool", "turns")
SINGLE_TURN = 1.0  # `turns` of a single-turn task: the one exchange


# The bank's own normaliser (one definition, in toolschema.py): the names it suggests and the
# names scored here match alike.
normalise_tool_name = normalise_name


def tool_selection_quality(
    actual: Iterable[str], expected: Iterable[str]
) -> tuple[float, float, float]:
    """TSQ: the F1 of the *sets* of normalised tool names. Returns (tsq, precision, recall).

    actual   = every tool name the scored attempt called (valid or not, known or not);
    expected = the tool names expected.json lists.
    precision = |A ∩ E| / |A|, recall = |A ∩ E| / |E|, tsq = 2PR / (P + R) (0 when P + R = 0).
    Both sets empty -> (1, 1, 1): nothing was needed and nothing was called.
    Exactly one empty -> (0, 0, 0).
    """
    actual_set = {normalise_tool_name(n) for n in actual}
    expected_set = {normalise_tool_name(n) for n in expected}
    if not actual_set and not expected_set:
        return 1.0, 1.0, 1.0
    if not actual_set or not expected_set:
        return 0.0, 0.0, 0.0
    hits = len(actual_set & expected_set)
    return f1_from_counts(hits, len(actual_set), len(expected_set))


def multiset_f1(actual: Iterable[str], expected: Iterable[str]) -> float:
    """As TSQ, but repeats count: intersection is the Counter minimum per name."""
    actual_counts = Counter(normalise_tool_name(n) for n in actual)
    expected_counts = Counter(normalise_tool_name(n) for n in expected)
    n_actual, n_expected = sum(actual_counts.values()), sum(expected_counts.values())
    if not n_actual and not n_expected:
        return 1.0
    if not n_actual or not n_expected:
        return 0.0
    hits = sum((actual_counts & expected_counts).values())
    return f1_from_counts(hits, n_actual, n_expected)[0]


def f1_from_counts(hits: int, n_actual: int, n_expected: int) -> tuple[float, float, float]:
    """(f1, precision, recall) from the overlap size and both sizes (both > 0)."""
    precision, recall = hits / n_actual, hits / n_expected
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return f1, precision, recall


def param_validity(calls: list[dict[str, Any]]) -> float:
    """Share of the attempt's calls whose arguments satisfy their tool's schema (as checked
    again here); no calls -> 0.0."""
    if not calls:
        return 0.0
    return sum(1 for call in calls if call["valid"]) / len(calls)


def solved_by_names(actual: Iterable[str], expected: Iterable[str]) -> float:
    """1.0 when the attempt called every expected tool and nothing else (by normalised name),
    else 0.0: `solved` when the goals are not all labelled."""
    return float({normalise_tool_name(n) for n in actual}
                 == {normalise_tool_name(n) for n in expected})


def goal_kind(goal: dict[str, Any]) -> str:
    """'servable' (alternatives listed), 'no_tool' (no tool serves it) or 'unlabelled' (tools
    null: the method does not map goals; or [] without no_tool: it found none)."""
    tools = goal.get("tools")
    if tools:
        return "servable"
    if goal.get("no_tool") is True and not tools:
        return "no_tool"
    return "unlabelled"


def goal_matches(goals: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per goal: which of its alternatives were called, and its status.

    served: a call of any one of its alternatives was made (by normalised name; whether its
      arguments were valid is `served_valid`, and param_validity scores arguments);
    missed: a servable goal none of whose alternatives was called;
    declined / wrongly_served: a no-tool goal, declined when no call of the attempt named a
      tool outside the alternatives of the servable goals. The bank cannot tell which goal a
      call was for, so any such call is taken as an attempt at the no-tool goals: all of them
      are then wrongly_served (`outside` lists those calls);
    unlabelled: not judged.
    """
    outside = outside_calls(goals, calls)
    rows = []
    for goal in goals:
        tools, kind = goal.get("tools"), goal_kind(goal)
        alternatives = {normalise_tool_name(t) for t in tools or []}
        hits = [c for c in calls if normalise_tool_name(c["tool"]) in alternatives]
        called = {normalise_tool_name(c["tool"]) for c in hits}
        row: dict[str, Any] = {
            "index": goal.get("index"),
            "text": goal.get("text"),
            "tools": tools,
            "no_tool": kind == "no_tool",
            "called": [t for t in tools or [] if normalise_tool_name(t) in called],
            "covered": bool(hits) if tools else None,
        }
        if kind == "servable":
            row["status"] = "served" if hits else "missed"
            row["served_valid"] = any(c["valid"] for c in hits)
        elif kind == "no_tool":
            row["status"] = "wrongly_served" if outside else "declined"
            row["outside"] = outside
        else:
            row["status"] = "unlabelled"
        rows.append(row)
    return rows


def outside_calls(goals: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[str]:
    """Names of the calls (valid or not) that are no alternative of any servable goal."""
    servable = {normalise_tool_name(t) for g in goals if goal_kind(g) == "servable"
                for t in g["tools"]}
    return [c["tool"] for c in calls if normalise_tool_name(c["tool"]) not in servable]


def goal_coverage(matches: list[dict[str, Any]], recall: float) -> float:
    """Share of goals with known tools where one of them was called; none known -> recall.

    A goal's tools are known when they are a non-empty list: null (the labelling method does
    not map tools to goals) and [] (no tool serves it, or it found none) leave the goal out.
    """
    known = [m for m in matches if m["covered"] is not None]
    if not known:
        return recall
    return sum(1 for m in known if m["covered"]) / len(known)


def goal_rewards(matches: list[dict[str, Any]], outside: list[str], coverage: float,
                 names_solved: float) -> dict[str, float]:
    """goals_served, goals_declined, goal_score, solved and the two counts.

    A share with no goal to count is vacuous: goals_declined is 1.0 without no-tool goals, and
    goals_served and goal_score fall back to goal_coverage without any judged goal; the counts
    say which (analysis averages each share only over trials whose count is > 0).
    goal_score: goals handled right over judged goals plus the distinct tools called that serve
    no goal, so calling every tool is no way to a high score (each stray tool weighs as one
    mishandled goal; without the term, all 20 tools beat a perfect agent on imperfect labels).
    solved: every goal served or declined and no call outside the servable alternatives, when
    every goal is labelled; otherwise the name-set comparison with expected_tools.
    """
    status = Counter(m["status"] for m in matches)
    n_servable = status["served"] + status["missed"]
    n_no_tool = status["declined"] + status["wrongly_served"]
    handled = status["served"] + status["declined"]
    all_labelled = bool(matches) and not status["unlabelled"]
    stray = len({normalise_tool_name(name) for name in outside})
    return {
        "solved": float(handled == len(matches) and not outside) if all_labelled
        else names_solved,
        "goals_served": status["served"] / n_servable if n_servable else coverage,
        "goals_declined": status["declined"] / n_no_tool if n_no_tool else 1.0,
        "goal_score": handled / (n_servable + n_no_tool + stray) if n_servable + n_no_tool
        else coverage,
        "n_goals_servable": float(n_servable),
        "n_goals_no_tool": float(n_no_tool),
    }


def score_calls(calls: list[dict[str, Any]], expected: dict[str, Any],
                turns: float = SINGLE_TURN) -> dict[str, Any]:
    """Every reward number for one attempt's calls (and its number of turns), plus the
    per-goal matches."""
    names = [call["tool"] for call in calls]
    tsq, precision, recall = tool_selection_quality(names, expected["expected_tools"])
    matches = goal_matches(expected["goals"], calls)
    coverage = goal_coverage(matches, recall)
    reward = {
        "tsq": tsq,
        "precision": precision,
        "recall": recall,
        "param_validity": param_validity(calls),
        "multiset_f1": multiset_f1(names, expected["expected_tools"]),
        "goal_coverage": coverage,
    }
    reward.update(goal_rewards(matches, outside_calls(expected["goals"], calls), coverage,
                               solved_by_names(names, expected["expected_tools"])))
    reward["turns"] = float(turns)
    return {"reward": {key: reward[key] for key in REWARD_KEYS}, "goals": matches}
