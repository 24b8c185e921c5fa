"""A trial's goals as one list of one shape: each goal's text with its alternatives, the
alternatives kept only where they are the per-goal side of expected_tools."""

from __future__ import annotations

from pathlib import Path

from analysis.trial_inputs import read_trial_inputs
from contracts.expected import Expected, GoalLabel, LabelsInfo, Provenance


def _task(tmp_path: Path, expected_tools: list[str], goals: list[GoalLabel]) -> Path:
    task = tmp_path / "tasks" / "banking-001"
    (task / "tests").mkdir(parents=True)
    (task / "tests" / "expected.json").write_text(Expected(
        scenario_id="banking-001", labels=LabelsInfo(method="keyword", version="1"),
        expected_tools=expected_tools, goals=goals,
        provenance=Provenance(dataset_revision="sample-1", builder="bankbench test"),
    ).model_dump_json())
    return task


def _inputs(tmp_path: Path, task: Path):
    trial = tmp_path / "job" / "banking-001__abc"
    trial.mkdir(parents=True)
    issues: list = []
    return read_trial_inputs(trial, "banking-001", issues, task_dir=task), issues


def test_mapped_goals_keep_their_alternatives_and_no_tool_goals_are_empty(tmp_path):
    task = _task(tmp_path, ["get_balance", "freeze_card"], [
        GoalLabel(index=0, text="my balance?", tools=["get_balance", "get_statement"]),
        GoalLabel(index=1, text="a poem", tools=[], no_tool=True),
        GoalLabel(index=2, text="freeze it", tools=["freeze_card"])])
    inputs, issues = _inputs(tmp_path, task)
    assert [(g.text, g.tools) for g in inputs.goals] == [
        ("my balance?", ["get_balance", "get_statement"]), ("a poem", []),
        ("freeze it", ["freeze_card"])]
    assert inputs.goal_texts == ["my balance?", "a poem", "freeze it"]
    assert inputs.served_alternatives == [["get_balance", "get_statement"], ["freeze_card"]]
    assert issues == []


def test_alternatives_that_are_not_expected_tools_per_goal_are_dropped(tmp_path):
    """Per-scenario labels (no per-goal tools), or goals whose first alternatives are not
    expected_tools: every goal keeps its text, none its tools, and expected_tools is all."""
    unmapped = _task(tmp_path / "a", ["get_balance"], [
        GoalLabel(index=0, text="my balance?", tools=None)])
    inputs, _ = _inputs(tmp_path / "a", unmapped)
    assert [(g.text, g.tools) for g in inputs.goals] == [("my balance?", None)]
    assert inputs.served_alternatives is None and inputs.expected_tools == ["get_balance"]
    other = _task(tmp_path / "b", ["get_statement"], [
        GoalLabel(index=0, text="my balance?", tools=["get_balance"])])
    inputs, _ = _inputs(tmp_path / "b", other)
    assert [(g.text, g.tools) for g in inputs.goals] == [("my balance?", None)]
    assert inputs.served_alternatives is None
