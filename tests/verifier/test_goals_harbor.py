"""Per-goal scores end to end: real sample tasks, the real `harbor run`, Harbor's oracle agent.

The oracle makes exactly the labelled calls, so it serves every servable goal and declines
every no-tool goal: every score in reward.json is 1.0, and tsq.json says so goal by goal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harbor.models.trial.result import TrialResult

from contracts.expected import Expected
from contracts.reward import SCORE_KEYS
from contracts.tsq import TsqDetails
from tests.support.sample_job import run_sample_job

pytestmark = pytest.mark.harbor

# Labelled from the sample's gold: banking-007 has a goal no tool serves, the others none.
TASKS = ("banking-000", "banking-002", "banking-007")


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("goals")
    run_sample_job(base, "goals", TASKS, agents=[{"name": "oracle"}], n_concurrent=3)
    return base


def test_oracle_handles_every_goal(job: Path) -> None:
    seen: dict[str, str] = {}
    for result_file in sorted((job / "jobs/goals").glob("*/result.json")):
        result = TrialResult.model_validate_json(result_file.read_text())
        assert result.exception_info is None, result.exception_info
        assert result.verifier_result is not None and result.verifier_result.rewards is not None
        rewards = result.verifier_result.rewards
        assert {k: rewards[k] for k in SCORE_KEYS} == dict.fromkeys(SCORE_KEYS, 1.0)

        expected = Expected.model_validate_json(
            (job / "tasks" / result.task_name / "tests/expected.json").read_text())
        no_tool = sum(goal.no_tool for goal in expected.goals)
        assert rewards["n_goals_no_tool"] == no_tool
        assert rewards["n_goals_servable"] == len(expected.goals) - no_tool

        details = TsqDetails.model_validate_json(
            (result_file.parent / "verifier/tsq.json").read_text())
        assert [g.status for g in details.goals] == [
            "declined" if goal.no_tool else "served" for goal in expected.goals]
        assert details.outside == []
        seen[result.task_name] = "ok"
    assert sorted(seen) == sorted(TASKS)
